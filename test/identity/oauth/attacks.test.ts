/**
 * Issue #12 "Attacks, each refused", each with a check that fails if the protection goes: code
 * replay (sequential, and 10 concurrent redemptions of which exactly one wins), a wrong PKCE
 * verifier, `plain` PKCE, an unregistered redirect URI, a `resource` of another host, this flow's
 * token on `/auth/v1/user` and `/v1/embed/judge`, a revoked grant, a revoked client, a CSRF value
 * from another authorization, refresh tokens crossing between clients and first-party sign-in,
 * and the pages' anti-framing headers (the browser test shows chromium refusing the frame).
 */
import { decodeJwt, SignJWT } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import { seedAuthor, startApp, useApp } from '../../helpers/harness.ts';
import { auth, mcpInitialize, signIn } from '../helpers.ts';
import { authorizeUrl, browse, hiddenFields, pkce, rawFlow, REDIRECT, register, token } from './helpers.ts';

const author = { email: 'grace@attacks.test', password: 'correct horse battery' };

const t = useApp();
beforeAll(async () => {
  await seedAuthor(t, 'attacks', author.email, author.password);
});

const mcpStatus = async (accessToken: string) => (await mcpInitialize(t, accessToken)).status;

describe('authorization codes', () => {
  it('a code is redeemed once; its replay is refused and ends the session it started', async () => {
    const first = await rawFlow(t, author.email, author.password);
    expect(first.status).toBe(200);
    expect(await mcpStatus(String(first.body.access_token))).toBe(200);
    const replay = await token(t, {
      grant_type: 'authorization_code',
      code: first.code,
      redirect_uri: REDIRECT,
      client_id: first.clientId,
      code_verifier: first.verifier,
    });
    expect(replay.status).toBe(400);
    expect(replay.body.error).toBe('invalid_grant');
    expect(await mcpStatus(String(first.body.access_token)), 'tokens of a replayed code are revoked').toBe(401);
  });

  it('10 concurrent redemptions of one code: exactly one succeeds', async () => {
    const clientId = await register(t);
    const { verifier, challenge } = pkce();
    const { code } = await browse(authorizeUrl(t, clientId, challenge), author.email, author.password);
    const answers = await Promise.all(
      Array.from({ length: 10 }, () =>
        token(t, { grant_type: 'authorization_code', code: code!, redirect_uri: REDIRECT, client_id: clientId, code_verifier: verifier }),
      ),
    );
    expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
    expect(answers.filter((a) => a.status === 400 && a.body.error === 'invalid_grant')).toHaveLength(9);
  });

  it('a wrong PKCE verifier is refused, and spends the code', async () => {
    const clientId = await register(t);
    const { verifier, challenge } = pkce();
    const { code } = await browse(authorizeUrl(t, clientId, challenge), author.email, author.password);
    const wrong = await token(t, {
      grant_type: 'authorization_code',
      code: code!,
      redirect_uri: REDIRECT,
      client_id: clientId,
      code_verifier: pkce().verifier,
    });
    expect(wrong.status).toBe(400);
    expect(wrong.body.error).toBe('invalid_grant');
    const right = await token(t, { grant_type: 'authorization_code', code: code!, redirect_uri: REDIRECT, client_id: clientId, code_verifier: verifier });
    expect(right.body.error).toBe('invalid_grant');
  });

  it('a code is bound to its client and redirect URI', async () => {
    const clientId = await register(t);
    const other = await register(t);
    const { verifier, challenge } = pkce();
    const { code } = await browse(authorizeUrl(t, clientId, challenge), author.email, author.password);
    const stolen = await token(t, { grant_type: 'authorization_code', code: code!, redirect_uri: REDIRECT, client_id: other, code_verifier: verifier });
    expect(stolen.body.error).toBe('invalid_grant');
    const { code: code2 } = await browse(authorizeUrl(t, clientId, challenge), author.email, author.password);
    const moved = await token(t, {
      grant_type: 'authorization_code',
      code: code2!,
      redirect_uri: 'http://127.0.0.1:1/elsewhere',
      client_id: clientId,
      code_verifier: verifier,
    });
    expect(moved.body.error).toBe('invalid_grant');
  });

  it('an expired code is refused', async () => {
    let offset = 0;
    const app = await startApp({}, { now: () => new Date(Date.now() + offset) });
    try {
      await seedAuthor(app, 'expiry', author.email, author.password);
      const clientId = await register(app);
      const { verifier, challenge } = pkce();
      const { code } = await browse(authorizeUrl(app, clientId, challenge), author.email, author.password);
      offset = 121_000;
      const late = await token(app, { grant_type: 'authorization_code', code: code!, redirect_uri: REDIRECT, client_id: clientId, code_verifier: verifier });
      expect(late.body).toMatchObject({ error: 'invalid_grant', error_description: expect.stringContaining('expired') });
    } finally {
      await app.close();
    }
  });
});

describe('the authorize request', () => {
  it('plain PKCE is refused (redirected as invalid_request), and so is a missing challenge', async () => {
    const clientId = await register(t);
    for (const overrides of [{ code_challenge_method: 'plain' }, { code_challenge_method: null }, { code_challenge: null }] as Record<
      string,
      string | null
    >[]) {
      const res = await fetch(authorizeUrl(t, clientId, pkce().challenge, overrides), { redirect: 'manual' });
      expect(res.status).toBe(302);
      const back = new URL(res.headers.get('location')!);
      expect(back.searchParams.get('error')).toBe('invalid_request');
      expect(back.searchParams.get('state')).toBe('st-1');
      expect(back.searchParams.get('iss')).toBe(`${t.url}/auth/v1`);
    }
  });

  it('an unregistered redirect URI gets a page, never a redirect', async () => {
    const clientId = await register(t);
    for (const uri of ['https://attacker.example/cb', 'http://127.0.0.1:33418/other', 'http://evil@127.0.0.1:33418/callback', `${REDIRECT}#x`]) {
      const res = await fetch(authorizeUrl(t, clientId, pkce().challenge, { redirect_uri: uri }), { redirect: 'manual' });
      expect(res.status, uri).toBe(400);
      expect(res.headers.get('location')).toBeNull();
      expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    }
  });

  it('a loopback redirect URI matches on any port (RFC 8252 §7.3), nothing else does', async () => {
    const clientId = await register(t);
    const ok = await fetch(authorizeUrl(t, clientId, pkce().challenge, { redirect_uri: 'http://127.0.0.1:51234/callback' }), { redirect: 'manual' });
    expect(ok.status).toBe(200);
    const httpsClient = await register(t, ['https://host.example/cb']);
    const port = await fetch(authorizeUrl(t, httpsClient, pkce().challenge, { redirect_uri: 'https://host.example:8443/cb' }), { redirect: 'manual' });
    expect(port.status).toBe(400);
  });

  it('a resource of another host (or none) is invalid_target', async () => {
    const clientId = await register(t);
    for (const resource of ['https://other.example/mcp', `${t.url}/v1`, null]) {
      const res = await fetch(authorizeUrl(t, clientId, pkce().challenge, { resource }), { redirect: 'manual' });
      expect(new URL(res.headers.get('location')!).searchParams.get('error'), String(resource)).toBe('invalid_target');
    }
    const { challenge, verifier } = pkce();
    const { code } = await browse(authorizeUrl(t, clientId, challenge), author.email, author.password);
    const res = await token(t, {
      grant_type: 'authorization_code',
      code: code!,
      redirect_uri: REDIRECT,
      client_id: clientId,
      code_verifier: verifier,
      resource: 'https://other.example/mcp',
    });
    expect(res.body.error).toBe('invalid_target');
  });

  it('a CSRF value from another authorization (or an earlier step) is refused', async () => {
    const clientId = await register(t);
    const a = hiddenFields(await (await fetch(authorizeUrl(t, clientId, pkce().challenge))).text());
    const b = hiddenFields(await (await fetch(authorizeUrl(t, clientId, pkce().challenge))).text());
    const post = (path: string, fields: Record<string, string>) =>
      fetch(`${t.url}/auth/v1/oauth/${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(fields),
        redirect: 'manual',
      });
    const crossed = await post('sign-in', { authorization_id: a.authorization_id!, csrf: b.csrf!, email: author.email, password: author.password });
    expect(crossed.status).toBe(403);
    const none = await post('sign-in', { authorization_id: a.authorization_id!, email: author.email, password: author.password });
    expect(none.status).toBe(403);
    // Signed in with a's own value: the consent step has a new value; the sign-in one no longer decides.
    const signedIn = await post('sign-in', { ...a, email: author.email, password: author.password });
    expect(signedIn.status).toBe(200);
    const consent = hiddenFields(await signedIn.text());
    expect(consent.csrf).not.toBe(a.csrf);
    const stale = await post('decision', { authorization_id: a.authorization_id!, csrf: a.csrf!, decision: 'allow' });
    expect(stale.status).toBe(403);
    const foreign = await post('decision', { authorization_id: a.authorization_id!, csrf: b.csrf!, decision: 'allow' });
    expect(foreign.status).toBe(403);
    const allowed = await post('decision', { ...consent, decision: 'allow' });
    expect(allowed.status).toBe(303);
  });

  it('the pages cannot be framed, cached or leak their URL', async () => {
    const clientId = await register(t);
    const res = await fetch(authorizeUrl(t, clientId, pkce().challenge));
    expect(res.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(res.headers.get('content-security-policy')).not.toContain('form-action');
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    expect(res.headers.get('set-cookie')).toBeNull();
  });
});

describe('tokens are bound to their audience, client and grant', () => {
  it("this flow's access token is refused on /auth/v1/user and /v1/embed/judge", async () => {
    const { body } = await rawFlow(t, author.email, author.password);
    const user = await auth(t, '/user', { bearer: String(body.access_token) });
    expect(user.status).toBe(403);
    const judge = await fetch(`${t.url}/v1/embed/judge`, {
      method: 'POST',
      headers: { authorization: `Bearer ${body.access_token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ tenant: 'attacks', activity_id: '00000000-0000-4000-8000-000000000000', artifact: { kind: 'document', content: 'x' } }),
    });
    expect(judge.status).toBe(401);
    expect(await mcpStatus(String(body.access_token))).toBe(200);
  });

  it('an OAuth token without the authoring scope is 403 insufficient_scope on /mcp', async () => {
    const { body } = await rawFlow(t, author.email, author.password);
    const claims = decodeJwt(String(body.access_token));
    // The same live session and client, re-signed (as only the server could) without the scope.
    const narrowed = await new SignJWT({ ...claims, scope: 'other' })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .sign(new TextEncoder().encode(t.deps.config.jwtSecret));
    const res = await mcpInitialize(t, narrowed);
    expect(res.status).toBe(403);
    expect(res.headers.get('www-authenticate')).toContain('error="insufficient_scope"');
    expect(await mcpStatus(String(body.access_token))).toBe(200);
  });

  it('refresh tokens cross neither to another client nor to first-party sign-in, nor back', async () => {
    const flow = await rawFlow(t, author.email, author.password);
    const other = await register(t);
    const crossed = await token(t, { grant_type: 'refresh_token', refresh_token: String(flow.body.refresh_token), client_id: other });
    expect(crossed.body.error).toBe('invalid_grant');
    const firstParty = await auth(t, '/token?grant_type=refresh_token', { method: 'POST', body: { refresh_token: flow.body.refresh_token } });
    expect(firstParty.status).toBe(400);
    const session = await signIn(t, author.email, author.password);
    const back = await token(t, { grant_type: 'refresh_token', refresh_token: session.refresh_token, client_id: flow.clientId });
    expect(back.body.error).toBe('invalid_grant');
    const own = await token(t, { grant_type: 'refresh_token', refresh_token: String(flow.body.refresh_token), client_id: flow.clientId });
    expect(own.status).toBe(200);
    expect(own.body.scope).toBe('authoring');
  });

  it('revoking the grant ends access and refresh at once', async () => {
    const flow = await rawFlow(t, author.email, author.password);
    const session = await signIn(t, author.email, author.password);
    const revoke = await auth(t, `/user/oauth/grants?client_id=${flow.clientId}`, { method: 'DELETE', bearer: session.access_token });
    expect(revoke.status).toBe(204);
    expect(await mcpStatus(String(flow.body.access_token))).toBe(401);
    const refresh = await token(t, { grant_type: 'refresh_token', refresh_token: String(flow.body.refresh_token), client_id: flow.clientId });
    expect(refresh.body.error).toBe('invalid_grant');
  });

  it('revoking the client (svc oauth clients revoke) ends its tokens and its authorizations', async () => {
    const flow = await rawFlow(t, author.email, author.password);
    await t.op('oauth.clients.revoke', { client_id: flow.clientId });
    expect(await mcpStatus(String(flow.body.access_token))).toBe(401);
    const res = await fetch(authorizeUrl(t, flow.clientId, pkce().challenge), { redirect: 'manual' });
    expect(res.status).toBe(400);
    expect(res.headers.get('location')).toBeNull();
  });

  it('logout, a password change and a ban end OAuth sessions', async () => {
    const email = 'linus@attacks.test';
    await seedAuthor(t, 'attacks-2', email, author.password);
    const a = await rawFlow(t, email, author.password);
    const s = await signIn(t, email, author.password);
    expect((await auth(t, '/logout', { method: 'POST', bearer: s.access_token })).status).toBe(204);
    expect(await mcpStatus(String(a.body.access_token)), 'global logout').toBe(401);

    const b = await rawFlow(t, email, author.password);
    const s2 = await signIn(t, email, author.password);
    expect((await auth(t, '/user', { method: 'PUT', bearer: s2.access_token, body: { password: 'another correct horse' } })).status).toBe(200);
    expect(await mcpStatus(String(b.body.access_token)), 'password change').toBe(401);

    const c = await rawFlow(t, email, 'another correct horse');
    await t.op('user.ban', { user: email, duration: '1h' });
    expect(await mcpStatus(String(c.body.access_token)), 'ban').toBe(401);
    const refresh = await token(t, { grant_type: 'refresh_token', refresh_token: String(c.body.refresh_token), client_id: c.clientId });
    expect(refresh.body.error).toBe('invalid_grant');
  });
});
