/**
 * A key removed from a tenant's JWKS (issue #10): refused at once after `svc idp refresh`, in
 * every server process; and, without it, within the key set's maximum age (SVC_IDP_JWKS_MAX_AGE).
 */
import { describe, expect, it } from 'vitest';
import { startApp, useApp, type TestApp } from '../helpers/harness.ts';
import { embedSettings, expectError, post, useAppWithIdp } from './fixtures.ts';

const { t, idp } = useAppWithIdp({ acme: {} });
const second = useApp(() => startApp({}, { db: t.db })); // another server process on the same database

const exchange = async (app: TestApp, kid: string, tenant = 'acme') =>
  post(app, '/v1/embed/session', { tenant, idp_token: await idp.sign({ sub: 'learner' }, { kid }) });

describe('svc idp refresh', () => {
  it('makes every process refuse a removed key at once, and keep accepting the others', async () => {
    const [oldKid] = idp.kids;
    await idp.rotate();
    const newKid = idp.kids[1]!;
    for (const app of [t, second]) expect((await exchange(app, oldKid!)).status).toBe(200); // both processes cache the set

    idp.remove(oldKid!);
    // Cached: still accepted until the set is fetched again.
    expect((await exchange(t, oldKid!)).status).toBe(200);

    const refreshed = await t.op('idp.refresh', { tenant: 'acme' });
    expect(refreshed).toMatchObject({ tenant: 'acme', issuer: idp.issuer, keys_version: 2 });
    for (const app of [t, second]) {
      expectError(await exchange(app, oldKid!), 401, 'unauthorized');
      expect((await exchange(app, newKid)).status).toBe(200);
    }
  });

  it('refuses a tenant without an identity provider, or unknown', async () => {
    await t.op('tenant.create', { slug: 'bare' });
    await expect(t.op('idp.refresh', { tenant: 'bare' })).rejects.toMatchObject({ code: 'not_found' });
    await expect(t.op('idp.refresh', { tenant: 'nope' })).rejects.toMatchObject({ code: 'not_found' });
  });
});

describe('the key set maximum age', () => {
  it('refuses a removed key once the cached set is older than SVC_IDP_JWKS_MAX_AGE, without a refresh', async () => {
    const app = await startApp({ embed: embedSettings({ jwksMaxAgeSeconds: 4 }) }, { db: t.db });
    try {
      await idp.rotate();
      const [kid] = idp.kids.slice(-2);
      expect((await exchange(app, kid!)).status).toBe(200);
      idp.remove(kid!);
      expect((await exchange(app, kid!)).status).toBe(200); // within the max age (4 s, room for a loaded machine): cached
      await new Promise((r) => setTimeout(r, 4200));
      expectError(await exchange(app, kid!), 401, 'unauthorized');
    } finally {
      await app.close();
    }
  });
});
