/**
 * Token attacks, each refused by GET /auth/v1/user (403, GoTrue's codes) and by POST /mcp
 * (401, JSON-RPC -32001) alike: alg none, another secret, RS256/HS512 headers, expired, no exp,
 * wrong aud, tampered payload (test/helpers/forged-tokens.ts); a refresh token replayed after
 * rotation; a token of a logged-out session. The genuine token passes both (control).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { forgedTokens } from '../helpers/forged-tokens.ts';
import { startApp, useApp } from '../helpers/harness.ts';
import { auth, mcpInitialize, signIn } from './helpers.ts';

let session: Record<string, any>;
const t = useApp(() => startApp({ refreshReuseInterval: 0 }));
beforeAll(async () => {
  await t.op('user.create', { email: 'eve@example.com', password: 'eve password' });
  session = await signIn(t, 'eve@example.com', 'eve password');
});

async function expectRefusedEverywhere(token: string, name: string, code = 'bad_jwt') {
  const user = await auth(t, '/user', { bearer: token });
  expect(user.status, name).toBe(403);
  expect(user.headers.get('x-sb-error-code'), name).toBe(code);
  expect(Object.keys(await user.json()).sort(), name).toEqual(['code', 'message']);
  const mcp = await mcpInitialize(t, token);
  expect(mcp.status, name).toBe(401);
  const body = (await mcp.json()) as { jsonrpc: string; error: { code: number }; id: null };
  expect(body, name).toMatchObject({ jsonrpc: '2.0', error: { code: -32001 }, id: null });
}

describe('token attacks on /auth/v1/user and /mcp', () => {
  it('the genuine token opens both (control)', async () => {
    expect((await auth(t, '/user', { bearer: session.access_token })).status).toBe(200);
    expect((await mcpInitialize(t, session.access_token)).status).toBe(200);
  });

  it('every forged variant is refused by both', async () => {
    const forged = await forgedTokens(session.access_token, t.deps.config.jwtSecret);
    expect(forged.map(([name]) => name)).toEqual(
      expect.arrayContaining([
        'alg none',
        'HS256 signed with another secret',
        'HS512 with the right secret',
        'RS256 header over the HS256 signature',
        'expired',
        'missing exp',
        'wrong aud',
        'tampered payload',
      ]),
    );
    for (const [name, token] of forged) await expectRefusedEverywhere(token, name);
  });

  it('keys and refresh tokens are not access tokens', async () => {
    await expectRefusedEverywhere(t.deps.config.anonKey, 'anon key');
    await expectRefusedEverywhere(t.deps.config.serviceRoleKey, 'service-role key');
    await expectRefusedEverywhere(session.refresh_token, 'refresh token as bearer');
  });

  it('a refresh token replayed after rotation is refused and ends the session everywhere', async () => {
    const s = await signIn(t, 'eve@example.com', 'eve password');
    const rotated = await auth(t, '/token?grant_type=refresh_token', { body: { refresh_token: s.refresh_token } });
    expect(rotated.status).toBe(200);
    const next = (await rotated.json()) as Record<string, any>;
    const replay = await auth(t, '/token?grant_type=refresh_token', { body: { refresh_token: s.refresh_token } });
    expect(replay.status).toBe(400);
    expect(await replay.json()).toEqual({ code: 'refresh_token_already_used', message: 'Invalid Refresh Token: Already Used' });
    // The whole family is revoked: the rotated token and both access tokens stop working.
    const after = await auth(t, '/token?grant_type=refresh_token', { body: { refresh_token: next.refresh_token } });
    expect(after.status).toBe(400);
    await expectRefusedEverywhere(next.access_token, 'access token of the revoked session', 'session_not_found');
    await expectRefusedEverywhere(s.access_token, 'first access token of the revoked session', 'session_not_found');
  });

  it('a token of a logged-out session is refused by both at once', async () => {
    const s = await signIn(t, 'eve@example.com', 'eve password');
    expect((await mcpInitialize(t, s.access_token)).status).toBe(200);
    const out = await auth(t, '/logout?scope=local', { method: 'POST', bearer: s.access_token });
    expect(out.status).toBe(204);
    await expectRefusedEverywhere(s.access_token, 'logged out', 'session_not_found');
  });
});
