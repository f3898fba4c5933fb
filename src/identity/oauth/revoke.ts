/**
 * `POST /auth/v1/oauth/revoke` — OAuth 2.0 Token Revocation (RFC 7009), for the public clients of
 * this server (issue #23).
 *
 * Request: form-encoded (or JSON) `token` (required), `token_type_hint` (`refresh_token` or
 * `access_token`; only a hint — both kinds are tried, RFC 7009 §2.1) and `client_id` (public
 * clients identify themselves with it, as at the token endpoint; no secret).
 *
 * Outcome: the token's **session** ends (its row in `auth.sessions` is deleted, and with it every
 * refresh token of the session). A refresh token therefore stops refreshing at once, and the
 * access tokens of that session stop working on their next use (`verifySession` looks the session
 * up), as RFC 7009 §2.1 allows ("MAY revoke the respective access tokens"). An access token is
 * revoked the same way: it is stateless (a JWT bound to its `session_id`), so ending its session is
 * the only way to stop it.
 *
 * Answers: 200 with an empty body whether or not the token was known, expired or already revoked
 * (RFC 7009 §2.2: "invalid tokens do not cause an error response"). A token issued to another
 * client (another OAuth client, or a first-party session) is refused and stays valid: RFC 7009
 * §2.1 ("verifies whether the token was issued to the client making the revocation request. If
 * this validation fails, the request is refused and the client is informed of the error"), with
 * RFC 6749 §5.2's code for a grant "issued to another client". Errors in OAuth's shape (errors.ts):
 * 400 `invalid_request` (no `token`, a parameter that is not one string),
 * 400 `invalid_grant` (the token was issued to another client; nothing revoked),
 * 401 `invalid_client` (no `client_id`, or an unknown or revoked client).
 */
import type { Deps } from '../../deps.ts';
import { AUDIENCE, mcpResource, verifyAccessToken } from '../jwt.ts';
import { sha256Hex } from '../../lib/hash.ts';
import { knownClient } from './clients.ts';
import { OAuthError } from './errors.ts';

const one = (body: Record<string, unknown>, name: string): string | undefined => {
  const v = body[name];
  if (v === undefined) return undefined;
  if (typeof v !== 'string') throw new OAuthError(400, 'invalid_request', `${name} must be a single string`);
  return v;
};

/**
 * Revoke the token of `body` for the client it names; resolves to the id of the session ended
 * (undefined when nothing was revoked — the caller answers 200 either way). Throws `OAuthError`.
 */
export async function revokeToken(deps: Deps, body: Record<string, unknown>): Promise<string | undefined> {
  const token = one(body, 'token');
  const hint = one(body, 'token_type_hint');
  const clientId = one(body, 'client_id');
  if (!token) throw new OAuthError(400, 'invalid_request', 'token is required');
  if (!clientId) throw new OAuthError(401, 'invalid_client', 'client_id is required (public clients send it in the body)');
  if (!(await knownClient(deps.db, clientId))) throw new OAuthError(401, 'invalid_client', 'unknown or revoked client');
  if (token.length > 4096) return undefined;

  const asRefresh = () => refreshSession(deps, token);
  const asAccess = () => accessSession(deps, token);
  const found = hint === 'access_token' ? ((await asAccess()) ?? (await asRefresh())) : ((await asRefresh()) ?? (await asAccess()));
  if (!found) return undefined;
  if (found.clientId !== clientId) throw new OAuthError(400, 'invalid_grant', 'the token was issued to another client');
  await deps.db.query('delete from auth.sessions where id = $1 and oauth_client_id = $2', [found.sessionId, clientId]);
  return found.sessionId;
}

/** A token's session and the OAuth client it was issued to (null: a first-party session). */
interface TokenOwner {
  sessionId: string;
  clientId: string | null;
}

/** The session of a refresh token (live or already rotated) and its client, if any. */
async function refreshSession(deps: Deps, token: string): Promise<TokenOwner | undefined> {
  if (token.length < 16 || token.length > 512) return undefined;
  const [row] = await deps.db.query<{ session_id: string; client_id: string | null }>(
    `select rt.session_id, s.oauth_client_id::text as client_id from auth.refresh_tokens rt join auth.sessions s on s.id = rt.session_id
      where rt.token_hash = $1`,
    [sha256Hex(token)],
  );
  return row && { sessionId: row.session_id, clientId: row.client_id };
}

/** The session of a valid (signed, unexpired) access token and its client, if any. */
async function accessSession(deps: Deps, token: string): Promise<TokenOwner | undefined> {
  try {
    const claims = await verifyAccessToken(deps, token, [AUDIENCE, mcpResource(deps)]);
    return claims.session_id ? { sessionId: claims.session_id, clientId: typeof claims.client_id === 'string' ? claims.client_id : null } : undefined;
  } catch {
    return undefined;
  }
}
