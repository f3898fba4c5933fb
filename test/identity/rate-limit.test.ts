/**
 * Sign-in and refresh rate limits: per IP and per normalised email, 429 `over_request_rate_limit`
 * in GoTrue's shape with Retry-After, applied before any password hashing (the process's
 * password-verification counter does not move), shared through Redis between two processes,
 * and failing open when Redis is unreachable.
 */
import { Redis } from 'ioredis';
import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { passwordVerificationCount } from '../../src/identity/passwords.ts';
import { startApp, type TestApp, useApp } from '../helpers/harness.ts';
import { auth, identityConfig } from './helpers.ts';
import { REDIS_URL } from '../helpers/redis.ts';

const redisUp = await (async () => {
  const probe = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 500, retryStrategy: () => null });
  try {
    await probe.connect();
    return (await probe.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    probe.disconnect();
  }
})();

const grant = (t: TestApp, email: string, password: string, version: string | null = '2024-01-01') =>
  auth(t, '/token?grant_type=password', { body: { email, password }, version });

describe('per-email limit (in memory)', () => {
  const t = useApp(() => startApp({ identity: identityConfig({ rateLimit: { signInPerEmail: 3, windowSeconds: 60 } }) }));
  beforeAll(async () => {
    await t.op('user.create', { email: 'victim@example.com', password: 'victim password' });
  });

  it('after 3 attempts on one email (however written), even the right password gets 429 without hashing', async () => {
    for (const email of ['victim@example.com', ' VICTIM@example.com', 'Victim@Example.COM ']) {
      expect((await grant(t, email, 'wrong password')).status).toBe(400);
    }
    const verified = passwordVerificationCount();
    const limited = await grant(t, 'victim@example.com', 'victim password');
    expect(limited.status).toBe(429);
    expect(await limited.json()).toEqual({ code: 'over_request_rate_limit', message: 'Request rate limit reached' });
    expect(limited.headers.get('x-sb-error-code')).toBe('over_request_rate_limit');
    const retryAfter = Number(limited.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    for (let i = 0; i < 20; i++) expect((await grant(t, 'victim@example.com', `guess ${i} password`)).status).toBe(429);
    expect(passwordVerificationCount()).toBe(verified);

    const legacy = await grant(t, 'victim@example.com', 'victim password', null);
    expect(legacy.status).toBe(429);
    expect(await legacy.json()).toEqual({ code: 429, error_code: 'over_request_rate_limit', msg: 'Request rate limit reached' });
  });

  it('another email from the same address is not held back', async () => {
    await t.op('user.create', { email: 'bystander@example.com', password: 'bystander password' });
    expect((await grant(t, 'bystander@example.com', 'bystander password')).status).toBe(200);
  });
});

describe('the client address behind a proxy', () => {
  const fromAddress = (t: TestApp, forwardedFor: string, email: string) =>
    auth(t, '/token?grant_type=password', { body: { email, password: 'any password' }, headers: { 'x-forwarded-for': forwardedFor } });

  it('by default X-Forwarded-For is not believed: a client cannot spoof its way past the per-IP limit', async () => {
    const t = await startApp({ identity: identityConfig({ rateLimit: { signInPerIp: 3, windowSeconds: 60 } }) });
    try {
      for (let i = 0; i < 3; i++) expect((await fromAddress(t, `203.0.113.${i}`, `a${i}@example.com`)).status).toBe(400);
      expect((await fromAddress(t, '203.0.113.99', 'b@example.com')).status).toBe(429);
    } finally {
      await t.close();
    }
  });

  it('with SVC_TRUST_PROXY naming the proxy, each forwarded client has its own counter', async () => {
    const t = await startApp({ trustProxy: '127.0.0.1', identity: identityConfig({ rateLimit: { signInPerIp: 3, windowSeconds: 60 } }) });
    try {
      for (let i = 0; i < 3; i++) expect((await fromAddress(t, '203.0.113.7', `c${i}@example.com`)).status).toBe(400);
      expect((await fromAddress(t, '203.0.113.7', 'd@example.com')).status).toBe(429);
      expect((await fromAddress(t, '203.0.113.8', 'd@example.com')).status).toBe(400);
    } finally {
      await t.close();
    }
  });
});

describe('per-IP limits (in memory)', () => {
  const t = useApp(() => startApp({ identity: identityConfig({ rateLimit: { signInPerIp: 5, refreshPerIp: 4, windowSeconds: 60 } }) }));
  beforeAll(async () => {
    await t.op('user.create', { email: 'ip@example.com', password: 'ip password 1' });
  });

  it('sign-in: the 6th attempt from one address is 429 before its body is even read', async () => {
    for (let i = 0; i < 5; i++) expect((await grant(t, `someone${i}@example.com`, 'any password')).status).toBe(400);
    const verified = passwordVerificationCount();
    expect((await grant(t, 'ip@example.com', 'ip password 1')).status).toBe(429);
    const notJson = await auth(t, '/token?grant_type=password', { body: '{not json' });
    expect(notJson.status).toBe(429);
    expect(passwordVerificationCount()).toBe(verified);
  });

  it('refresh has its own counter; other endpoints are not limited', async () => {
    for (let i = 0; i < 4; i++) {
      const res = await auth(t, '/token?grant_type=refresh_token', { body: { refresh_token: randomBytes(32).toString('base64url') } });
      expect(res.status).toBe(400);
      expect(res.headers.get('x-sb-error-code')).toBe('refresh_token_not_found');
    }
    expect((await auth(t, '/token?grant_type=refresh_token', { body: { refresh_token: 'x'.repeat(43) } })).status).toBe(429);
    for (let i = 0; i < 10; i++) expect((await auth(t, '/user', { bearer: 'not-a-token' })).status).toBe(403);
  });
});

describe.runIf(redisUp)('with Redis (REDIS_URL)', () => {
  const email = `shared-${randomBytes(6).toString('hex')}@example.com`;
  const identity = identityConfig({ rateLimit: { signInPerEmail: 3, windowSeconds: 60 } });
  // Two processes of one deployment on one database (b closes first: a owns the database).
  const a = useApp(() => startApp({ identity, redisUrl: REDIS_URL }));
  const b = useApp(() => startApp({ identity, redisUrl: REDIS_URL }, { db: a.db }));
  beforeAll(async () => {
    await a.op('user.create', { email, password: 'shared password' });
  });

  it('two processes share the per-email counter', async () => {
    expect((await grant(a, email, 'wrong password')).status).toBe(400);
    expect((await grant(b, email, 'wrong password')).status).toBe(400);
    expect((await grant(a, email, 'shared password')).status).toBe(200);
    expect((await grant(b, email, 'shared password')).status).toBe(429);
    expect((await grant(a, email, 'shared password')).status).toBe(429);
  });
});

describe('when the Redis store is unreachable', () => {
  const t = useApp(() => startApp({ identity: identityConfig({ rateLimit: { signInPerEmail: 1 } }), redisUrl: 'redis://127.0.0.1:1' }));
  beforeAll(async () => {
    await t.op('user.create', { email: 'open@example.com', password: 'fail open please' });
  });

  it('sign-in still works (fails open, logged)', async () => {
    expect((await grant(t, 'open@example.com', 'fail open please')).status).toBe(200);
    expect((await grant(t, 'open@example.com', 'fail open please')).status).toBe(200);
  });
});
