/**
 * Issue #12: the sign-in page reuses the password grant's rate limits (one budget per email,
 * whichever door), and dynamic registration is bounded per IP (cost abuse: unbounded rows).
 */
import { beforeAll, expect, it } from 'vitest';
import { seedAuthor, startApp, useApp } from '../../helpers/harness.ts';
import { auth, identityConfig } from '../helpers.ts';
import { authorizeUrl, hiddenFields, pkce, register } from './helpers.ts';

const email = 'rate@limits.test';

const t = useApp(() => startApp({ identity: identityConfig({ rateLimit: { signInPerEmail: 3, registerPerIp: 4, windowSeconds: 60 } }) }));
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
    const res = await fetch(`${t.url}/auth/v1/oauth/clients/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ redirect_uris: ['https://a.example/cb'] }) });
    answers.push(res.status);
    if (res.status === 429) expect(((await res.json()) as { error: string }).error).toBe('temporarily_unavailable');
  }
  // One registration happened in the first test.
  expect(answers).toEqual([201, 201, 201, 429]);
  expect((await t.db.query<{ n: number }>('select count(*)::int as n from auth.oauth_clients'))[0]!.n).toBe(before + 3);
});
