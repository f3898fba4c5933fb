/**
 * Issue #12: discovery documents where MCP clients look for them (no `apikey`), and GoTrue's JSON
 * consent pair and grant endpoints driven by the real supabase-js client (`auth.oauth.*`) — the
 * path a custom consent UI would take.
 */
import { createClient } from '@supabase/supabase-js';
import { decodeJwt } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import { seedAuthor, useApp } from '../../helpers/harness.ts';
import { signIn } from '../helpers.ts';
import { authorizeUrl, hiddenFields, pkce, rawFlow, REDIRECT, register, token } from './helpers.ts';

const author = { email: 'alan@consent.test', password: 'correct horse battery' };

const t = useApp();
beforeAll(async () => {
  await seedAuthor(t, 'consent', author.email, author.password);
  await seedAuthor(t, 'consent-2', 'other@consent.test', author.password);
});

describe('discovery', () => {
  it("serves RFC 8414 metadata at every URL MCP clients try, without an apikey; issuer = the tokens' iss", async () => {
    const { body } = await rawFlow(t, author.email, author.password);
    const iss = decodeJwt(String(body.access_token)).iss;
    for (const path of [
      '/.well-known/oauth-authorization-server/auth/v1',
      '/.well-known/openid-configuration/auth/v1',
      '/auth/v1/.well-known/openid-configuration',
      '/auth/v1/.well-known/oauth-authorization-server',
    ]) {
      const res = await fetch(`${t.url}${path}`);
      expect(res.status, path).toBe(200);
      if (path.startsWith('/.well-known')) expect(res.headers.get('access-control-allow-origin'), path).toBe('*');
      const doc = (await res.json()) as Record<string, unknown>;
      expect(doc).toMatchObject({
        issuer: iss,
        authorization_endpoint: `${t.url}/auth/v1/oauth/authorize`,
        token_endpoint: `${t.url}/auth/v1/oauth/token`,
        registration_endpoint: `${t.url}/auth/v1/oauth/clients/register`,
        code_challenge_methods_supported: ['S256'],
        token_endpoint_auth_methods_supported: expect.arrayContaining(['none']),
        client_id_metadata_document_supported: true,
        authorization_response_iss_parameter_supported: true,
        scopes_supported: ['authoring'],
      });
    }
    const prm = (await (await fetch(`${t.url}/.well-known/oauth-protected-resource/mcp`)).json()) as Record<string, unknown>;
    expect(prm).toMatchObject({ resource: `${t.url}/mcp`, scopes_supported: ['authoring'], resource_name: expect.any(String) });
    const challenge = await fetch(`${t.url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(challenge.headers.get('www-authenticate')).toContain('scope="authoring"');
  });
});

describe('GoTrue consent API with supabase-js', () => {
  const supabaseFor = async (email: string) => {
    const client = createClient(t.url, t.deps.config.anonKey, { auth: { persistSession: false, autoRefreshToken: false } });
    const { error } = await client.auth.signInWithPassword({ email, password: author.password });
    expect(error).toBeNull();
    return client;
  };
  const newAuthorization = async (clientId: string, challenge: string) =>
    hiddenFields(await (await fetch(authorizeUrl(t, clientId, challenge))).text()).authorization_id!;

  it('getAuthorizationDetails → approveAuthorization → a redeemable code; listGrants; revokeGrant', async () => {
    const supabase = await supabaseFor(author.email);
    const clientId = await register(t);
    const { verifier, challenge } = pkce();
    const id = await newAuthorization(clientId, challenge);
    const details = await supabase.auth.oauth.getAuthorizationDetails(id);
    expect(details.error).toBeNull();
    expect(details.data).toMatchObject({
      authorization_id: id,
      redirect_uri: REDIRECT,
      client: { id: clientId, name: 'Raw client' },
      user: { email: author.email },
      scope: 'authoring',
    });
    const approved = await supabase.auth.oauth.approveAuthorization(id, { skipBrowserRedirect: true });
    const back = new URL(approved.data!.redirect_url);
    expect(back.searchParams.get('state')).toBe('st-1');
    const redeemed = await token(t, {
      grant_type: 'authorization_code',
      code: back.searchParams.get('code')!,
      redirect_uri: REDIRECT,
      client_id: clientId,
      code_verifier: verifier,
    });
    expect(redeemed.status).toBe(200);

    // Consent stored: the next authorization of this client answers with the redirect at once.
    const again = await supabase.auth.oauth.getAuthorizationDetails(await newAuthorization(clientId, challenge));
    expect(again.data).toEqual({ redirect_url: expect.stringContaining('code=') });

    const grants = await supabase.auth.oauth.listGrants();
    expect(grants.data).toContainEqual(
      expect.objectContaining({ client: expect.objectContaining({ id: clientId }), scopes: ['authoring'], granted_at: expect.any(String) }),
    );
    expect((await supabase.auth.oauth.revokeGrant({ clientId })).error).toBeNull();
    expect((await supabase.auth.oauth.listGrants()).data!.map((g) => g.client.id)).not.toContain(clientId);
    const gone = await supabase.auth.oauth.revokeGrant({ clientId });
    expect(gone.error?.status).toBe(404);
  });

  it('deny: the client gets access_denied; a decided authorization cannot be decided again', async () => {
    const supabase = await supabaseFor(author.email);
    const id = await newAuthorization(await register(t), pkce().challenge);
    await supabase.auth.oauth.getAuthorizationDetails(id);
    const denied = await supabase.auth.oauth.denyAuthorization(id, { skipBrowserRedirect: true });
    expect(new URL(denied.data!.redirect_url).searchParams.get('error')).toBe('access_denied');
    const twice = await supabase.auth.oauth.approveAuthorization(id, { skipBrowserRedirect: true });
    expect(twice.error?.status).toBe(404);
  });

  it("another user's authorization is not found; an OAuth token cannot drive the consent API", async () => {
    const mine = await supabaseFor(author.email);
    const theirs = await supabaseFor('other@consent.test');
    const id = await newAuthorization(await register(t), pkce().challenge);
    expect((await mine.auth.oauth.getAuthorizationDetails(id)).error).toBeNull();
    const foreign = await theirs.auth.oauth.getAuthorizationDetails(id);
    expect(foreign.error?.status).toBe(404);
    expect((await theirs.auth.oauth.approveAuthorization(id, { skipBrowserRedirect: true })).error?.status).toBe(404);

    const { body } = await rawFlow(t, author.email, author.password);
    const res = await fetch(`${t.url}/auth/v1/oauth/authorizations/${await newAuthorization(await register(t), pkce().challenge)}`, {
      headers: { authorization: `Bearer ${body.access_token}` },
    });
    expect(res.status).toBe(403);
    const session = await signIn(t, author.email, author.password);
    expect(session.access_token).toBeTruthy();
  });
});
