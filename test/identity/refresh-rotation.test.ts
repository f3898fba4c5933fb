/**
 * Refresh-token rotation under concurrency (GoTrue's reuse interval): parallel refreshes of one
 * token all succeed with the same new token and one live session; a replay of anything but the
 * live token's parent, or after the interval, revokes the session. The reuse interval is
 * measured on the app's injectable clock, moved forward here instead of sleeping, so the test
 * does not depend on how fast a loaded machine serves 20 serialised refreshes.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { startApp, useApp } from '../helpers/harness.ts';
import { mcpInitialize } from './helpers.ts';

let skew = 0; // milliseconds
const advance = (seconds: number) => {
  skew += seconds * 1000;
};
const t = useApp(() => startApp({ refreshReuseInterval: 10 }, { now: () => new Date(Date.now() + skew) }));
beforeAll(async () => {
  await t.op('user.create', { email: 'tabs@example.com', password: 'many tabs open' });
});

const post = (path: string, body: object) =>
  fetch(`${t.url}/auth/v1${path}`, {
    method: 'POST',
    headers: { apikey: t.deps.config.anonKey, 'content-type': 'application/json', 'x-supabase-api-version': '2024-01-01' },
    body: JSON.stringify(body),
  });
const signIn = async () =>
  (await (await post('/token?grant_type=password', { email: 'tabs@example.com', password: 'many tabs open' })).json()) as Record<string, any>;
const refresh = (token: string) => post('/token?grant_type=refresh_token', { refresh_token: token });
const liveSessions = async () =>
  (
    await t.db.query<{ n: number }>(`select count(*)::int as n from auth.sessions s join auth.users u on u.id = s.user_id where u.email = 'tabs@example.com'`)
  )[0]!.n;

describe('refresh_token grant', () => {
  it('20 parallel refreshes of one token: all succeed, one new token, one live session; after the interval a replay revokes it', async () => {
    await t.db.query('delete from auth.sessions');
    const session = await signIn();
    const answers = await Promise.all(Array.from({ length: 20 }, () => refresh(session.refresh_token)));
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
    const bodies = await Promise.all(answers.map(async (a) => (await a.json()) as Record<string, any>));
    const tokens = new Set(bodies.map((b) => b.refresh_token));
    expect(tokens.size).toBe(1);
    expect(await liveSessions()).toBe(1);
    expect((await mcpInitialize(t, bodies[19]!.access_token)).status).toBe(200);

    advance(11);
    const replay = await refresh(session.refresh_token);
    expect(replay.status).toBe(400);
    expect(await replay.json()).toEqual({ code: 'refresh_token_already_used', message: 'Invalid Refresh Token: Already Used' });
    expect(await liveSessions()).toBe(0);
    expect((await refresh([...tokens][0]!)).status).toBe(400);
    expect((await mcpInitialize(t, bodies[19]!.access_token)).status).toBe(401);
  });

  it('within the interval, the live token still rotates normally', async () => {
    await t.db.query('delete from auth.sessions');
    const session = await signIn();
    const first = (await (await refresh(session.refresh_token)).json()) as Record<string, any>;
    const second = await refresh(first.refresh_token);
    expect(second.status).toBe(200);
    expect((await second.json()).refresh_token).not.toBe(first.refresh_token);
    expect(await liveSessions()).toBe(1);
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
