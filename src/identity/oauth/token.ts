/**
 * `POST /auth/v1/oauth/token` (OAuth 2.1 §3.2, §4.1.3, §4.3): form-encoded (or JSON) body,
 * public clients (`client_id` in the body, no secret), answered with
 * `{access_token, token_type, expires_in, refresh_token, scope}` and `Cache-Control: no-store`.
 *
 * `authorization_code`: the code is looked up by its sha256 and locked (`for update`), so of
 * concurrent redemptions exactly one proceeds; the others see it used. Whatever the outcome, the
 * first redemption spends the code. A replayed code ends the session the code started (RFC 6749
 * §4.1.2: "SHOULD revoke all tokens previously issued based on that authorization code").
 * Checked: expiry (2 min), `client_id` and `redirect_uri` equal to the authorization's, PKCE
 * S256 (`code_verifier` 43–128 unreserved characters, RFC 7636 §4.1, §4.6), `resource` (if sent)
 * the authorization's, the user not banned.
 *
 * `refresh_token`: the session's refresh rules (sessions.ts#refreshGrant: rotation, reuse
 * interval, reuse → session revoked), redeemable only by the client whose session it is.
 *
 * Errors: `invalid_request`, `invalid_client` (401), `invalid_grant`, `invalid_target`,
 * `unsupported_grant_type` — never the first-party GoTrue codes.
 */
import { createHash } from 'node:crypto';
import { decodeJwt } from 'jose';
import type { Deps } from '../../deps.ts';
import { AuthError } from '../errors.ts';
import { mcpResource } from '../jwt.ts';
import { openSession, refreshGrant, type TokenResponse } from '../sessions.ts';
import { sha256Hex } from '../../lib/hash.ts';
import { findUserById } from '../users.ts';
import { knownClient } from './clients.ts';
import { OAuthError } from './errors.ts';

const VERIFIER_RE = /^[A-Za-z0-9\-._~]{43,128}$/;

/** The OAuth token response for a session's tokens (the GoTrue `user` object is not sent). */
export function oauthTokenResponse(tokens: TokenResponse, scope: string) {
  return {
    access_token: tokens.access_token,
    token_type: 'bearer',
    expires_in: tokens.expires_in,
    refresh_token: tokens.refresh_token,
    scope,
  };
}

const field = (body: Record<string, unknown>, name: string): string | undefined => {
  const v = body[name];
  if (v === undefined) return undefined;
  if (typeof v !== 'string') throw new OAuthError(400, 'invalid_request', `${name} must be a single string`);
  return v;
};

const invalidGrant = (why: string) => new OAuthError(400, 'invalid_grant', why);

/** Handle one token request body (already parsed); throws `OAuthError`. */
export async function tokenRequest(deps: Deps, body: Record<string, unknown>) {
  const grantType = field(body, 'grant_type');
  if (!grantType) throw new OAuthError(400, 'invalid_request', 'grant_type is required');
  if (grantType !== 'authorization_code' && grantType !== 'refresh_token') {
    throw new OAuthError(400, 'unsupported_grant_type', 'grant_type must be authorization_code or refresh_token');
  }
  const clientId = field(body, 'client_id');
  if (!clientId) throw new OAuthError(401, 'invalid_client', 'client_id is required (public clients send it in the body)');
  const client = await knownClient(deps.db, clientId);
  if (!client) throw new OAuthError(401, 'invalid_client', 'unknown or revoked client');
  const resource = field(body, 'resource');
  if (resource !== undefined && resource !== mcpResource(deps)) {
    throw new OAuthError(400, 'invalid_target', `resource must be ${mcpResource(deps)}`);
  }
  return grantType === 'authorization_code' ? codeGrant(deps, clientId, body) : refreshTokenGrant(deps, clientId, body);
}

async function codeGrant(deps: Deps, clientId: string, body: Record<string, unknown>) {
  const code = field(body, 'code');
  const redirectUri = field(body, 'redirect_uri');
  const verifier = field(body, 'code_verifier');
  if (!code) throw new OAuthError(400, 'invalid_request', 'code is required');
  if (!verifier) throw new OAuthError(400, 'invalid_request', 'code_verifier is required (PKCE)');
  if (!VERIFIER_RE.test(verifier)) throw new OAuthError(400, 'invalid_request', 'code_verifier must be 43 to 128 unreserved characters (RFC 7636 §4.1)');
  if (code.length > 200) throw invalidGrant('unknown authorization code');
  const resource = field(body, 'resource');

  const outcome = await deps.db.transaction(async (tx) => {
    const now = deps.now();
    const [row] = await tx.query<{
      id: string;
      client_id: string;
      redirect_uri: string;
      scope: string;
      resource: string;
      code_challenge: string;
      user_id: string;
      expired: boolean;
      used: boolean;
      session_id: string | null;
    }>(
      `select id, client_id, redirect_uri, scope, resource, code_challenge, user_id, session_id,
              code_expires_at <= $2::timestamptz as expired, code_used_at is not null as used
         from auth.oauth_authorizations where code_hash = $1 and status = 'approved' for update`,
      [sha256Hex(code), now.toISOString()],
    );
    if (!row) return { error: invalidGrant('unknown authorization code') };
    if (row.used) {
      if (row.session_id) await tx.query('delete from auth.sessions where id = $1', [row.session_id]);
      return { error: invalidGrant('the authorization code was already used; the tokens it gave are revoked') };
    }
    await tx.query('update auth.oauth_authorizations set code_used_at = $2 where id = $1', [row.id, now.toISOString()]);
    if (row.expired) return { error: invalidGrant('the authorization code has expired') };
    if (row.client_id !== clientId) return { error: invalidGrant('the authorization code was issued to another client') };
    if (redirectUri !== row.redirect_uri) return { error: invalidGrant('redirect_uri must be the one of the authorization request') };
    if (resource !== undefined && resource !== row.resource)
      return { error: new OAuthError(400, 'invalid_target', 'resource differs from the authorization request') };
    const challenge = createHash('sha256').update(verifier).digest('base64url');
    if (challenge !== row.code_challenge) return { error: invalidGrant('code_verifier does not match the code_challenge (PKCE)') };
    const user = await findUserById(tx, row.user_id);
    if (!user || (user.banned_until && new Date(user.banned_until) > now)) return { error: invalidGrant('the user can no longer sign in') };
    const { tokens, sessionId } = await openSession(tx, deps, user, 'oauth', { oauth: { clientId, scope: row.scope } });
    await tx.query('update auth.oauth_authorizations set session_id = $2 where id = $1', [row.id, sessionId]);
    return { response: oauthTokenResponse(tokens, row.scope) };
  });
  if (outcome.error) throw outcome.error;
  return outcome.response!;
}

async function refreshTokenGrant(deps: Deps, clientId: string, body: Record<string, unknown>) {
  const refreshToken = field(body, 'refresh_token');
  if (!refreshToken) throw new OAuthError(400, 'invalid_request', 'refresh_token is required');
  try {
    const tokens = await refreshGrant(deps, refreshToken, clientId);
    // The scope granted with the session travels in the access token just signed.
    return oauthTokenResponse(tokens, String(decodeJwt(tokens.access_token).scope ?? ''));
  } catch (err) {
    if (err instanceof AuthError && err.status === 400) throw invalidGrant(err.message);
    throw err;
  }
}
