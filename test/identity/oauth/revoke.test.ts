/**
 * Issue #23: RFC 7009 token revocation at `POST /auth/v1/oauth/revoke`, with plain HTTP as a host
 * sends it. Revoking a refresh token ends its session at once (the refresh token and the session's
 * access tokens stop working); an access token is revoked the same way; an unknown token answers
 * 200 (RFC 7009 §2.2); a token of another client is refused and stays valid (§2.1); errors are OAuth's shape.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { seedAuthor, useApp } from '../../helpers/harness.ts';
import { auth, mcpInitialize } from '../helpers.ts';
import { rawFlow, register, token } from './helpers.ts';

const author = { email: 'ada@revoke.test', password: 'correct horse battery' };
const t = useApp();
beforeAll(async () => {
  await seedAuthor(t, 'revoke', author.email, author.password);
});

const mcpStatus = async (accessToken: string) => (await mcpInitialize(t, accessToken)).status;

async function revoke(fields: Record<string, string>) {
  const res = await fetch(`${t.url}/auth/v1/oauth/revoke`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString(),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, body: text ? (JSON.parse(text) as Record<string, unknown>) : undefined };
}

const sessionsOf = async (clientId: string) =>
  (await t.db.query<{ n: number }>('select count(*)::int as n from auth.sessions where oauth_client_id = $1', [clientId]))[0]!.n;

describe('POST /auth/v1/oauth/revoke', () => {
  it('is listed in the authorization server metadata', async () => {
    const doc = (await (await fetch(`${t.url}/.well-known/oauth-authorization-server/auth/v1`)).json()) as Record<string, unknown>;
    expect(doc.revocation_endpoint).toBe(`${t.url}/auth/v1/oauth/revoke`);
    expect(doc.revocation_endpoint_auth_methods_supported).toEqual(['none']);
  });

  it('revoking a refresh token ends its session: the refresh token and the access token stop at once', async () => {
    const flow = await rawFlow(t, author.email, author.password);
    const access = String(flow.body.access_token);
    const refresh = String(flow.body.refresh_token);
    expect(await mcpStatus(access)).toBe(200);
    const res = await revoke({ token: refresh, token_type_hint: 'refresh_token', client_id: flow.clientId });
    expect(res.status).toBe(200);
    expect(res.text).toBe('');
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(await sessionsOf(flow.clientId)).toBe(0);
    const refreshed = await token(t, { grant_type: 'refresh_token', refresh_token: refresh, client_id: flow.clientId });
    expect(refreshed.status).toBe(400);
    expect(refreshed.body.error).toBe('invalid_grant');
    expect(await mcpStatus(access), 'the session’s access token is refused').toBe(401);
    // Revoking it again: already gone, still 200.
    expect((await revoke({ token: refresh, client_id: flow.clientId })).status).toBe(200);
  });

  it('revoking an access token (with or without a hint) ends its session', async () => {
    const flow = await rawFlow(t, author.email, author.password);
    const access = String(flow.body.access_token);
    expect((await revoke({ token: access, client_id: flow.clientId })).status).toBe(200);
    expect(await mcpStatus(access)).toBe(401);
    const again = await token(t, { grant_type: 'refresh_token', refresh_token: String(flow.body.refresh_token), client_id: flow.clientId });
    expect(again.status).toBe(400);
  });

  it('an unknown token answers 200 and changes nothing', async () => {
    const flow = await rawFlow(t, author.email, author.password);
    for (const unknown of ['not-a-token-at-all-0123456789', 'x'.repeat(5000), 'eyJhbGciOiJIUzI1NiJ9.e30.c2ln']) {
      const res = await revoke({ token: unknown, client_id: flow.clientId });
      expect(res.status).toBe(200);
    }
    expect(await sessionsOf(flow.clientId)).toBe(1);
    expect(await mcpStatus(String(flow.body.access_token))).toBe(200);
  });

  it('another client’s token is refused (RFC 7009 §2.1: 400 invalid_grant) and stays valid', async () => {
    const flow = await rawFlow(t, author.email, author.password);
    const other = await register(t);
    for (const tok of [String(flow.body.refresh_token), String(flow.body.access_token)]) {
      for (const hint of ['refresh_token', 'access_token']) {
        const res = await revoke({ token: tok, client_id: other, token_type_hint: hint });
        expect(res.status).toBe(400);
        expect(Object.keys(res.body ?? {}).sort()).toEqual(['error', 'error_description']);
        expect(res.body?.error).toBe('invalid_grant');
      }
    }
    expect(await sessionsOf(flow.clientId)).toBe(1);
    expect(await mcpStatus(String(flow.body.access_token))).toBe(200);
    const refreshed = await token(t, { grant_type: 'refresh_token', refresh_token: String(flow.body.refresh_token), client_id: flow.clientId });
    expect(refreshed.status).toBe(200);
    // a first-party session's refresh token was issued to no OAuth client: refused too, and it still refreshes
    const firstParty = (await (await auth(t, '/token?grant_type=password', { method: 'POST', body: author })).json()) as { refresh_token: string };
    expect((await revoke({ token: firstParty.refresh_token, client_id: other })).body?.error).toBe('invalid_grant');
    expect((await auth(t, '/token?grant_type=refresh_token', { method: 'POST', body: { refresh_token: firstParty.refresh_token } })).status).toBe(200);
  });

  it('bad requests: OAuth error shape, nothing revoked', async () => {
    const flow = await rawFlow(t, author.email, author.password);
    const refresh = String(flow.body.refresh_token);
    const cases: [Record<string, string>, number, string][] = [
      [{ client_id: flow.clientId }, 400, 'invalid_request'],
      [{ token: refresh }, 401, 'invalid_client'],
      [{ token: refresh, client_id: '00000000-0000-4000-8000-000000000000' }, 401, 'invalid_client'],
    ];
    for (const [fields, status, error] of cases) {
      const res = await revoke(fields);
      expect(res.status, JSON.stringify(fields)).toBe(status);
      expect(Object.keys(res.body ?? {}).sort()).toEqual(['error', 'error_description']);
      expect(res.body?.error).toBe(error);
    }
    const twice = await fetch(`${t.url}/auth/v1/oauth/revoke`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `token=${refresh}&token=${refresh}&client_id=${flow.clientId}`,
    });
    expect(twice.status).toBe(400);
    expect(((await twice.json()) as { error: string }).error).toBe('invalid_request');
    expect(await sessionsOf(flow.clientId)).toBe(1);
  });
});
