/**
 * Refresh-token rotation under concurrency (GoTrue's reuse interval): parallel refreshes of one
 * token all succeed with the same new token and one live session; a replay of anything but the
 * live token's parent, or after the interval, revokes the session.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestApp } from '../helpers/harness.ts';

let t: TestApp;
beforeAll(async () => {
  t = await startApp({ refreshReuseInterval: 1 });
  await t.op('user.create', { email: 'tabs@example.com', password: 'many tabs open' });
});
afterAll(() => t.close());

const post = (path: string, body: object) =>
  fetch(`${t.url}/auth/v1${path}`, {
    method: 'POST',
    headers: { apikey: t.deps.config.anonKey, 'content-type': 'application/json', 'x-supabase-api-version': '2024-01-01' },
    body: JSON.stringify(body),
  });
const signIn = async () => (await (await post('/token?grant_type=password', { email: 'tabs@example.com', password: 'many tabs open' })).json()) as Record<string, any>;
const refresh = (token: string) => post('/token?grant_type=refresh_token', { refresh_token: token });
const liveSessions = async () =>
  (await t.db.query<{ n: number }>(`select count(*)::int as n from auth.sessions s join auth.users u on u.id = s.user_id where u.email = 'tabs@example.com'`))[0]!.n;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('refresh_token grant', () => {
  it('20 parallel refreshes of one token: all succeed, one new token, one live session', async () => {
    await t.db.query('delete from auth.sessions');
    const session = await signIn();
    const answers = await Promise.all(Array.from({ length: 20 }, () => refresh(session.refresh_token)));
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
    const tokens = new Set(await Promise.all(answers.map(async (a) => (await a.json()).refresh_token)));
    expect(tokens.size).toBe(1);
    expect(await liveSessions()).toBe(1);
    const [next] = [...tokens];
    expect((await refresh(next!)).status).toBe(200);
  });

  it('a replay after the reuse interval revokes the whole session', async () => {
    await t.db.query('delete from auth.sessions');
    const session = await signIn();
    const rotated = await (await refresh(session.refresh_token)).json();
    await sleep(1200);
    const replay = await refresh(session.refresh_token);
    expect(replay.status).toBe(400);
    expect(await replay.json()).toEqual({ code: 'refresh_token_already_used', message: 'Invalid Refresh Token: Already Used' });
    expect(await liveSessions()).toBe(0);
    expect((await refresh(rotated.refresh_token)).status).toBe(400);
  });

  it('within the interval, only the parent of the live token may be replayed', async () => {
    await t.db.query('delete from auth.sessions');
    const r0 = (await signIn()).refresh_token;
    const r1 = (await (await refresh(r0)).json()).refresh_token;
    const r2 = (await (await refresh(r1)).json()).refresh_token;
    expect((await refresh(r1)).status).toBe(200); // parent of r2: a second tab
    const grandparent = await refresh(r0);
    expect(grandparent.status).toBe(400);
    expect((await grandparent.json()).code).toBe('refresh_token_already_used');
    expect((await refresh(r2)).status).toBe(400);
  });
});
