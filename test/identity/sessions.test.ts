/**
 * Session limits and the things that end sessions, checked on /auth/v1 and /mcp:
 * maximum lifetime (access tokens capped, refresh refused, a still-valid token refused by the
 * session check), inactivity timeout (refresh refused), bans, and an admin password change.
 * The clock is the app's injectable `now`, moved forward instead of sleeping.
 */
import { SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { startApp, useApp, type TestApp } from '../helpers/harness.ts';
import { auth, identityConfig, mcpInitialize, signIn } from './helpers.ts';

let skew = 0; // milliseconds
const clock = () => new Date(Date.now() + skew);
const advance = (seconds: number) => {
  skew += seconds * 1000;
};
const refresh = (t: TestApp, token: string) => auth(t, '/token?grant_type=refresh_token', { body: { refresh_token: token } });

/**
 * The app of a `describe` block, on this file's clock (its skew reset to zero when the block
 * starts), with `identity` changes and one user `email` / `password`.
 */
function useSessionApp(identity: Parameters<typeof identityConfig>[0], email: string, password: string): TestApp {
  return useApp(async () => {
    skew = 0;
    const t = await startApp({ identity: identityConfig(identity) }, { now: clock });
    await t.op('user.create', { email, password });
    return t;
  });
}

describe('maximum session lifetime', () => {
  const t = useSessionApp({ sessionMaxLifetime: 1800 }, 'life@example.com', 'lifetime password');

  it('caps the access token at the end of the session and refuses the session after it', async () => {
    const s = await signIn(t, 'life@example.com', 'lifetime password');
    expect(s.expires_in).toBeLessThanOrEqual(1800);
    expect(s.expires_in).toBeGreaterThan(1790);
    advance(1000);
    const renewed = await refresh(t, s.refresh_token);
    expect(renewed.status).toBe(200);
    const r = (await renewed.json()) as Record<string, any>;
    expect(r.expires_in).toBeLessThanOrEqual(800);
    expect(r.expires_at).toBe(s.expires_at);

    advance(801);
    const late = await refresh(t, r.refresh_token);
    expect(late.status).toBe(400);
    expect(await late.json()).toEqual({ code: 'session_expired', message: 'Invalid Refresh Token: Session Expired' });
    expect((await auth(t, '/user', { bearer: r.access_token })).status).toBe(403);

    // Even a token whose own exp is later (signed with the real secret) dies with its session.
    const claims = JSON.parse(Buffer.from(r.access_token.split('.')[1], 'base64url').toString());
    const longLived = await new SignJWT({ ...claims, exp: Math.floor(clock().getTime() / 1000) + 3600 })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .sign(new TextEncoder().encode(t.deps.config.jwtSecret));
    const user = await auth(t, '/user', { bearer: longLived });
    expect(user.status).toBe(403);
    expect(user.headers.get('x-sb-error-code')).toBe('session_not_found');
    expect((await mcpInitialize(t, longLived)).status).toBe(401);
  });
});

describe('inactivity timeout', () => {
  const t = useSessionApp({ sessionInactivityTimeout: 600 }, 'idle@example.com', 'inactive password');

  it('a session refreshed in time lives on; one idle for longer cannot be refreshed', async () => {
    const s = await signIn(t, 'idle@example.com', 'inactive password');
    advance(500);
    const r1 = (await (await refresh(t, s.refresh_token)).json()) as Record<string, any>;
    expect(r1.refresh_token).toBeTruthy();
    advance(500); // 1,000 s after sign-in, 500 s after the last refresh
    const r2 = await refresh(t, r1.refresh_token);
    expect(r2.status).toBe(200);
    const { refresh_token } = (await r2.json()) as Record<string, any>;
    advance(601);
    const idle = await refresh(t, refresh_token);
    expect(idle.status).toBe(400);
    expect(await idle.json()).toEqual({ code: 'session_expired', message: 'Invalid Refresh Token: Session Expired (Inactivity)' });
  });
});

describe('bans and admin password changes', () => {
  const t = useSessionApp({}, 'mallory@example.com', 'mallory password');

  it('a ban stops the live session on /user, /mcp and refresh; lifting it lets the user back', async () => {
    const s = await signIn(t, 'mallory@example.com', 'mallory password');
    await t.op('user.ban', { user: 'mallory@example.com', duration: '2h30m' });
    const user = await auth(t, '/user', { bearer: s.access_token });
    expect(user.status).toBe(403);
    expect(await user.json()).toEqual({ code: 'user_banned', message: 'User is banned' });
    expect((await mcpInitialize(t, s.access_token)).status).toBe(401);
    const r = await refresh(t, s.refresh_token);
    expect(r.status).toBe(400);
    expect(await r.json()).toEqual({ code: 'user_banned', message: 'Invalid Refresh Token: User Banned' });
    const wrong = await auth(t, '/token?grant_type=password', { body: { email: 'mallory@example.com', password: 'not the password' } });
    expect((await wrong.json()).code).toBe('invalid_credentials'); // no ban news without the password

    await t.op('user.ban', { user: 'mallory@example.com', duration: 'none' });
    expect((await auth(t, '/user', { bearer: s.access_token })).status).toBe(200);
    expect((await mcpInitialize(t, s.access_token)).status).toBe(200);
  });

  it('an admin password change ends every session of the user', async () => {
    const a = await signIn(t, 'mallory@example.com', 'mallory password');
    const b = await signIn(t, 'mallory@example.com', 'mallory password');
    await t.op('user.update', { user: 'mallory@example.com', password: 'a new password' });
    for (const s of [a, b]) {
      expect((await auth(t, '/user', { bearer: s.access_token })).status).toBe(403);
      expect((await mcpInitialize(t, s.access_token)).status).toBe(401);
      expect((await refresh(t, s.refresh_token)).status).toBe(400);
    }
    expect((await signIn(t, 'mallory@example.com', 'a new password')).access_token).toBeTruthy();
  });
});

describe('expires_in', () => {
  // Every read of this app's clock is one second later than the one before.
  let ticks = 0;
  const t = useApp(async () => {
    const start = Date.now();
    const app = await startApp({}, { now: () => new Date(start + 1000 * ticks++) });
    await app.op('user.create', { email: 'tick@example.com', password: 'ticking password' });
    return app;
  });

  it("is the token's own exp − iat, however much the clock moves while the response is built", async () => {
    const s = await signIn(t, 'tick@example.com', 'ticking password');
    const claims = JSON.parse(Buffer.from(s.access_token.split('.')[1], 'base64url').toString());
    expect(s.expires_in).toBe(t.deps.config.accessTokenTtl);
    expect(claims.exp - claims.iat).toBe(s.expires_in);
    expect(s.expires_at).toBe(claims.exp);
  });
});
