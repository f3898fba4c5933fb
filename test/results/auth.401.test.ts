/**
 * Results API, 401 unauthorized: every data route refuses a missing, malformed, unknown or
 * revoked key, in both header styles; a live key works in both styles; health needs none.
 */
import { describe, expect, it } from 'vitest';
import { useApp, useFixture } from '../helpers/harness.ts';
import { expectError, get, getJson, seedTenant, type KeyStyle } from './fixtures.ts';

const t = useApp();
const a = useFixture(() => seedTenant(t, 'alpha'));
const b = useFixture(() => seedTenant(t, 'beta'));

/** Every data route, with ids that exist in tenant a (so a pass would be a 200). */
const routes = () => ['/v1/activity-results', `/v1/activity-results/${a.resultIds[0]}`, '/v1/progress', '/v1/artifacts', `/v1/artifacts/${a.artifactIds[0]}`];
const STYLES: KeyStyle[] = ['bearer', 'x-svc-api-key'];

/** A well-formed key that was never issued. */
const UNKNOWN_KEY = `svc_${'A'.repeat(12)}_${'b'.repeat(40)}`;

async function expectUnauthorized(res: Response) {
  await expectError(res, 401, 'unauthorized');
  expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
}

describe('the permission suite, on every data route', () => {
  it('a live key works in both header styles (the control)', async () => {
    for (const path of routes()) for (const style of STYLES) await getJson(t, path, a.key, 200, style);
  });

  it('no key → 401', async () => {
    for (const path of routes()) await expectUnauthorized(await get(t, path));
  });

  it('an unknown key → 401, in both header styles', async () => {
    for (const path of routes()) for (const style of STYLES) await expectUnauthorized(await get(t, path, UNKNOWN_KEY, style));
  });

  it('a malformed key → 401, in both header styles', async () => {
    const malformed = [
      'nope',
      a.key.slice(0, -1),
      `${a.key}x`,
      a.key.replace('svc_', 'sk_'),
      a.key.toUpperCase(),
      `svc_${a.keyPrefix}`,
      `svc_${a.keyPrefix}_`,
      `${a.key.slice(0, 17)}${'!'.repeat(40)}`,
    ];
    for (const key of malformed) for (const style of STYLES) await expectUnauthorized(await get(t, '/v1/activity-results', key, style));
  });

  it('a key in the wrong scheme, an empty bearer, or two different keys → 401', async () => {
    const path = '/v1/activity-results';
    for (const authorization of [`Basic ${a.key}`, a.key, 'Bearer', 'Bearer ', `Bearer ${a.key} ${a.key}`, `Token ${a.key}`]) {
      await expectUnauthorized(await get(t, path, undefined, 'bearer', { authorization }));
    }
    await expectUnauthorized(await get(t, path, a.key, 'bearer', { 'x-svc-api-key': b.key }));
    await expectUnauthorized(await get(t, path, a.key, 'bearer', { 'x-svc-api-key': UNKNOWN_KEY }));
    await expectUnauthorized(await get(t, path, UNKNOWN_KEY, 'bearer', { 'x-svc-api-key': a.key }));
    // The same key in both headers is fine; so is a lower-case scheme.
    expect((await get(t, path, a.key, 'bearer', { 'x-svc-api-key': a.key })).status).toBe(200);
    expect((await get(t, path, undefined, 'bearer', { authorization: `bearer ${a.key}` })).status).toBe(200);
  });

  it('a revoked key → 401 within a second (the revocation notice reaches the key cache), in both header styles', async () => {
    const { key, prefix } = await t.op('key.create', { tenant: 'alpha', name: 'to revoke' });
    for (const style of STYLES) await getJson(t, '/v1/progress', key, 200, style);
    await t.op('key.revoke', { prefix });
    await expect.poll(async () => (await get(t, '/v1/progress', key)).status, { timeout: 1000, interval: 20 }).toBe(401);
    for (const path of routes()) for (const style of STYLES) await expectUnauthorized(await get(t, path, key, style));
    // Other keys of the tenant keep working.
    await getJson(t, '/v1/progress', a.key);
  });

  it('checks the key before the id: an unknown id without a key is 401, not 404', async () => {
    await expectUnauthorized(await get(t, '/v1/artifacts/00000000-0000-0000-0000-000000000000'));
    await expectUnauthorized(await get(t, '/v1/activity-results/nope'));
  });
});

describe('what needs no key', () => {
  it('GET /v1/health', async () => {
    const res = await get(t, '/v1/health');
    expect(res.status).toBe(200);
    // …and a bad key does not break it either.
    expect((await get(t, '/v1/health', 'garbage')).status).toBe(200);
  });
});
