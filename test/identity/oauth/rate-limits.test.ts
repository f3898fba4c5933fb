/**
 * Issue #23: `GET /oauth/authorize` is bounded per IP and minute before any row is stored.
 * Issue #12: the sign-in page reuses the password grant's rate limits (one budget per email,
 * whichever door), and dynamic registration is bounded per IP (cost abuse: unbounded rows).
 */
import { beforeAll, expect, it } from 'vitest';
import { seedAuthor, startApp, useApp } from '../../helpers/harness.ts';
import { auth, identityConfig } from '../helpers.ts';
import { authorizeUrl, hiddenFields, pkce, register } from './helpers.ts';

const email = 'rate@limits.test';

// A window of 300 s for the other counters: the registration and authorization limits keep their own minute.
const t = useApp(() =>
  startApp({ identity: identityConfig({ rateLimit: { signInPerEmail: 3, registerPerIp: 4, authorizePerIpPerMinute: 5, windowSeconds: 300 } }) }),
);
beforeAll(async () => {
  await seedAuthor(t, 'limits', email, 'correct horse battery');
});

it('sign-in page and password grant share the per-email budget; over it: 429 page with Retry-After', async () => {
  const wrong = await auth(t, '/token?grant_type=password', { method: 'POST', body: { email, password: 'wrong wrong wrong' } });
  expect(wrong.status).toBe(400);
  const clientId = await register(t);
  const statuses: number[] = [];
  for (let i = 0; i < 3; i++) {
    const fields = hiddenFields(await (await fetch(authorizeUrl(t, clientId, pkce().challenge))).text());
    const res = await fetch(`${t.url}/auth/v1/oauth/sign-in`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ ...fields, email, password: 'correct horse battery' }),
      redirect: 'manual',
    });
    statuses.push(res.status);
    if (res.status === 429) {
      expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(await res.text()).toContain('Too many sign-in attempts');
    }
  }
  expect(statuses).toEqual([200, 200, 429]);
  const grant = await auth(t, '/token?grant_type=password', { method: 'POST', body: { email, password: 'correct horse battery' } });
  expect(grant.status, 'the password grant sees the same counter').toBe(429);
});

it('registrations per IP are bounded: 429 temporarily_unavailable, nothing stored', async () => {
  const before = (await t.db.query<{ n: number }>('select count(*)::int as n from auth.oauth_clients'))[0]!.n;
  const answers: number[] = [];
  for (let i = 0; i < 4; i++) {
    const res = await fetch(`${t.url}/auth/v1/oauth/clients/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ redirect_uris: ['https://a.example/cb'] }),
    });
    answers.push(res.status);
    if (res.status === 429) {
      expect(((await res.json()) as { error: string }).error).toBe('temporarily_unavailable');
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(Number(res.headers.get('retry-after'))).toBeLessThanOrEqual(60);
    }
  }
  // One registration happened in the first test.
  expect(answers).toEqual([201, 201, 201, 429]);
  expect((await t.db.query<{ n: number }>('select count(*)::int as n from auth.oauth_clients'))[0]!.n).toBe(before + 3);
});

it('authorization requests per IP are bounded: 429 page with Retry-After before rows pile up', async () => {
  // The first test spent 4 of the 5 a minute (3 sign-ins and none else); a fresh window is not
  // assumed: count what is left from the answers.
  const clientId = await register(t).catch(() => undefined);
  const rows = async () => (await t.db.query<{ n: number }>('select count(*)::int as n from auth.oauth_authorizations'))[0]!.n;
  const before = await rows();
  const statuses: number[] = [];
  for (let i = 0; i < 8; i++) {
    const res = await fetch(authorizeUrl(t, clientId ?? 'unknown', pkce().challenge), { redirect: 'manual' });
    statuses.push(res.status);
    if (res.status === 429) {
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(Number(res.headers.get('retry-after'))).toBeLessThanOrEqual(60);
      expect(await res.text()).toContain('Too many requests');
    } else await res.text();
  }
  const allowed = statuses.filter((s) => s !== 429).length;
  expect(allowed).toBeLessThanOrEqual(5);
  expect(
    statuses.slice(allowed).every((s) => s === 429),
    statuses.join(),
  ).toBe(true);
  expect(statuses.at(-1)).toBe(429);
  expect(await rows(), 'no authorization row past the limit').toBeLessThanOrEqual(before + allowed);
});
