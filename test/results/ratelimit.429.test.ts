/**
 * Results API rate limiting: per key, a configurable default and a per-key limit; 429
 * `rate_limited` with Retry-After and the RateLimit-Limit/Remaining/Reset headers on every
 * answer; shared across app instances through Redis when REDIS_URL is set (Redis runs on
 * 127.0.0.1:6379 here; the Redis part is skipped, with a message, when it is not reachable).
 */
import { describe, expect, it } from 'vitest';
import { startApp, testConfig, useApp, useFixture } from '../helpers/harness.ts';
import { expectError, get, getJson, seedTenant } from './fixtures.ts';
import { REDIS_URL, redisReachable } from '../helpers/redis.ts';

const redisUp = await redisReachable();
if (!redisUp) console.warn(`ratelimit.429: Redis is not reachable at ${REDIS_URL}; the cross-process tests are skipped`);

const LIMIT = 3;
const t = useApp(() =>
  startApp({ results: { ...testConfig().results, rateLimit: { max: LIMIT, windowMs: 60_000 }, keyCacheTtlMs: 1000, keyUsageFlushMs: 5000 } }),
);
const a = useFixture(() => seedTenant(t, 'alpha'));

const headers = (res: Response) => ({
  limit: res.headers.get('ratelimit-limit'),
  remaining: res.headers.get('ratelimit-remaining'),
  reset: res.headers.get('ratelimit-reset'),
  retryAfter: res.headers.get('retry-after'),
});

describe('per-key limit (in memory)', () => {
  it(`answers ${LIMIT} requests with the RateLimit headers, then 429 rate_limited with Retry-After`, async () => {
    const { key } = await t.op('key.create', { tenant: 'alpha', name: 'limited' });
    for (let i = 1; i <= LIMIT; i++) {
      const res = await get(t, '/v1/activity-results?limit=1', key);
      expect(res.status).toBe(200);
      const h = headers(res);
      expect(h).toMatchObject({ limit: String(LIMIT), remaining: String(LIMIT - i) });
      expect(Number(h.reset)).toBeGreaterThan(0);
      expect(Number(h.reset)).toBeLessThanOrEqual(60);
    }
    const res = await get(t, '/v1/artifacts', key);
    const h = headers(res);
    const message = await expectError(res, 429, 'rate_limited');
    expect(message).toMatch(/too many requests/);
    expect(h.limit).toBe(String(LIMIT));
    expect(h.remaining).toBe('0');
    expect(Number(h.retryAfter)).toBeGreaterThan(0);
    expect(Number(h.retryAfter)).toBeLessThanOrEqual(60);
    // Every data route shares the key's budget, and a 429 holds no data.
    await expectError(await get(t, `/v1/activity-results/${a.resultIds[0]}`, key), 429, 'rate_limited');
  });

  it('counts each key on its own: another key of the same tenant is unaffected', async () => {
    const first = await t.op('key.create', { tenant: 'alpha', name: 'first' });
    const second = await t.op('key.create', { tenant: 'alpha', name: 'second' });
    for (let i = 0; i < LIMIT; i++) await getJson(t, '/v1/progress', first.key);
    await expectError(await get(t, '/v1/progress', first.key), 429, 'rate_limited');
    await getJson(t, '/v1/progress', second.key);
  });

  it('applies a key’s own limit instead of the default', async () => {
    const { key } = await t.op('key.create', { tenant: 'alpha', name: 'strict', rate_limit: 1 });
    const ok = await get(t, '/v1/progress', key);
    expect(ok.status).toBe(200);
    expect(headers(ok).limit).toBe('1');
    await expectError(await get(t, '/v1/progress', key), 429, 'rate_limited');
    const { key: generous } = await t.op('key.create', { tenant: 'alpha', name: 'generous', rate_limit: 10 });
    for (let i = 0; i < 10; i++) await getJson(t, '/v1/progress', generous);
    await expectError(await get(t, '/v1/progress', generous), 429, 'rate_limited');
  });

  it('does not count requests without a valid key (they are 401) nor /v1/health', async () => {
    const { key } = await t.op('key.create', { tenant: 'alpha', name: 'health' });
    const wrong = `${key.slice(0, -1)}${key.endsWith('x') ? 'y' : 'x'}`; // another last character, always
    for (let i = 0; i < 10; i++) {
      expect((await get(t, '/v1/health')).status).toBe(200);
      await expectError(await get(t, '/v1/progress', wrong), 401, 'unauthorized');
    }
    expect(headers(await get(t, '/v1/progress', key)).remaining).toBe(String(LIMIT - 1));
  });
});

describe.skipIf(!redisUp)('shared through Redis (REDIS_URL)', () => {
  // Two app instances on one database and one Redis, like two processes behind a load balancer.
  const results = { ...testConfig().results, rateLimit: { max: 4, windowMs: 60_000 }, keyCacheTtlMs: 1000, keyUsageFlushMs: 5000 };
  const one = useApp(() => startApp({ redisUrl: REDIS_URL, results }, { db: t.db }));
  const other = useApp(() => startApp({ redisUrl: REDIS_URL, results }, { db: t.db }));

  it('one budget per key across instances', async () => {
    const { key } = await t.op('key.create', { tenant: 'alpha', name: 'shared' });
    const seen: string[] = [];
    for (const app of [one, other, one, other]) {
      const res = await get(app, '/v1/progress', key);
      expect(res.status).toBe(200);
      seen.push(headers(res).remaining!);
    }
    expect(seen).toEqual(['3', '2', '1', '0']);
    await expectError(await get(one, '/v1/progress', key), 429, 'rate_limited');
    await expectError(await get(other, '/v1/progress', key), 429, 'rate_limited');
    // An instance without Redis counts on its own (the control): the same key still passes there.
    expect((await get(t, '/v1/progress', key)).status).toBe(200);
  });
});
