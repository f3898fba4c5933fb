/** Forged, expired and otherwise hostile access tokens are refused by GET /auth/v1/user. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forgedTokens } from '../helpers/forged-tokens.ts';
import { startApp, type TestApp } from '../helpers/harness.ts';

let t: TestApp;
let token: string;
beforeAll(async () => {
  t = await startApp();
  await t.op('user.create', { email: 'eve@example.com', password: 'eve password' });
  const res = await fetch(`${t.url}/auth/v1/token?grant_type=password`, {
    method: 'POST',
    headers: { apikey: t.deps.config.anonKey, 'content-type': 'application/json' },
    body: JSON.stringify({ email: 'eve@example.com', password: 'eve password' }),
  });
  token = (await res.json()).access_token;
});
afterAll(() => t.close());

const getUser = (bearer: string) =>
  fetch(`${t.url}/auth/v1/user`, { headers: { apikey: t.deps.config.anonKey, authorization: `Bearer ${bearer}` } });

describe('GET /auth/v1/user', () => {
  it('accepts the real token', async () => {
    expect((await getUser(token)).status).toBe(200);
  });

  it('refuses every forged variant', async () => {
    for (const [name, forged] of await forgedTokens(token, t.deps.config.jwtSecret)) {
      const res = await getUser(forged);
      expect(res.status, name).toBe(403);
      expect(res.headers.get('x-sb-error-code'), name).toBe('bad_jwt');
    }
  });

  it('refuses the anon key used as a bearer token', async () => {
    expect((await getUser(t.deps.config.anonKey)).status).toBe(403);
  });
});
