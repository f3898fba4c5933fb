/**
 * Sessions and refresh tokens (GoTrue's model): one auth.sessions row per sign-in, one family
 * of refresh tokens per session, rotated on every use.
 *
 * Refresh-token rule (GoTrue `refresh_token_grant`, api/token_refresh.go):
 * - an active token → it is revoked and a child issued;
 * - a revoked token that is the parent of the family's newest (live) token, issued within
 *   `refreshReuseInterval` seconds → that newest token is returned again (two tabs refreshing
 *   at once both work);
 * - a revoked token after that interval → the whole session is revoked (400
 *   `refresh_token_already_used`).
 * Concurrent refreshes of one session are serialised with `select … for update` on the token
 * and its session, so a waiting refresh re-reads the token's `revoked` after the first commits.
 *
 * Session limits (GoTrue `Session.CheckValidity`): with `identity.sessionMaxLifetime` a session
 * ends that many seconds after sign-in — its access tokens expire then at the latest, and
 * `verifySession` refuses it; with `identity.sessionInactivityTimeout` a session that has not
 * been refreshed for that long can no longer be refreshed (400 `session_expired`). Times come
 * from the injectable clock `deps.now`, so tests can move it.
 */
import { sha256Hex } from '../lib/hash.ts';
import { createHmac, randomBytes } from 'node:crypto';
import type { Db, Queryable } from '../db/index.ts';
import type { Deps } from '../deps.ts';
import { epochSeconds } from '../deps.ts';
import { AuthError } from './errors.ts';
import { AUDIENCE, mcpResource, signAccessToken, verifyAccessToken, TokenError, type AccessTokenClaims } from './jwt.ts';
import { findUserById, findUserBySession, userJson, type UserRow } from './users.ts';

function deriveRefreshToken(secret: string, sessionId: string, nonce: string): string {
  return createHmac('sha256', secret).update(`refresh:${sessionId}:${nonce}`).digest('base64url');
}

async function insertRefreshToken(q: Queryable, deps: Pick<Deps, 'config' | 'now'>, userId: string, sessionId: string, parent: string | null): Promise<string> {
  const nonce = randomBytes(16).toString('base64url');
  const token = deriveRefreshToken(deps.config.jwtSecret, sessionId, nonce);
  const now = deps.now().toISOString();
  await q.query(
    `insert into auth.refresh_tokens (token_hash, nonce, user_id, session_id, parent, created_at, updated_at)
     values ($1, $2, $3, $4, $5, $6, $6)`,
    [sha256Hex(token), nonce, userId, sessionId, parent, now],
  );
  return token;
}

/** GoTrue's token response: `{access_token, token_type, expires_in, expires_at, refresh_token, user}`. */
export interface TokenResponse {
  access_token: string;
  token_type: 'bearer';
  expires_in: number;
  expires_at: number;
  refresh_token: string;
  user: ReturnType<typeof userJson>;
}

interface SessionInfo {
  id: string;
  aal: string;
  amr: AccessTokenClaims['amr'];
  /** When the session was created (RFC 3339). */
  created_at: string;
  /** The tenant an embed session is bound to (its tokens' `tenant_id` claim); null for a password sign-in. */
  tenant_id: string | null;
  /** The OAuth client that started the session and the scope it was granted (null: first-party). */
  oauth_client_id: string | null;
  oauth_scope: string | null;
}

/** End of the session's maximum lifetime in epoch seconds, or undefined without a limit. */
function sessionNotAfter(deps: Pick<Deps, 'config'>, session: SessionInfo): number | undefined {
  const max = deps.config.identity.sessionMaxLifetime;
  return max > 0 ? epochSeconds(new Date(session.created_at)) + max : undefined;
}

async function tokenResponse(deps: Pick<Deps, 'config' | 'now'>, user: UserRow, session: SessionInfo, refreshToken: string): Promise<TokenResponse> {
  const { token, issuedAt, expiresAt } = await signAccessToken(
    deps,
    {
      sub: user.id,
      role: user.role,
      email: user.email ?? '',
      phone: user.phone ?? '',
      app_metadata: user.raw_app_meta_data,
      user_metadata: user.raw_user_meta_data,
      session_id: session.id,
      aal: session.aal,
      amr: session.amr,
      is_anonymous: user.is_anonymous,
      ...(session.tenant_id && { tenant_id: session.tenant_id }),
      ...(session.oauth_client_id && { aud: mcpResource(deps), client_id: session.oauth_client_id, scope: session.oauth_scope ?? '' }),
    },
    sessionNotAfter(deps, session),
  );
  return {
    access_token: token,
    token_type: 'bearer',
    expires_in: Math.max(0, expiresAt - issuedAt),
    expires_at: expiresAt,
    refresh_token: refreshToken,
    user: userJson(user),
  };
}

/** What binds a new session: an embed session's tenant, or the OAuth client that starts it. */
export interface SessionBinding {
  tenantId?: string;
  oauth?: { clientId: string; scope: string };
}

/**
 * Start a session for `user` (signed in by `method`, e.g. `password`, `idp` or `oauth`) and issue
 * tokens. With `binding.tenantId` (an embed session) the session is bound to that tenant: every
 * access token it issues, refreshes included, carries the `tenant_id` claim, and RLS then acts in
 * that tenant only (migration 0060; docs/architecture.md "Who can act where"). With
 * `binding.oauth` (issue #12) its tokens carry `aud` = the /mcp resource, `client_id` and `scope`,
 * and only that client may refresh it (`refreshGrant`). Returns the token response and the
 * session's id.
 */
export async function openSession(
  q: Queryable,
  deps: Pick<Deps, 'config' | 'now'>,
  user: UserRow,
  method: string,
  binding: SessionBinding = {},
): Promise<{ tokens: TokenResponse; sessionId: string }> {
  const now = deps.now();
  const amr = [{ method, timestamp: epochSeconds(now) }];
  const tenantId = binding.tenantId ?? null;
  const oauthClientId = binding.oauth?.clientId ?? null;
  const oauthScope = binding.oauth?.scope ?? null;
  const [session] = await q.query<{ id: string; aal: string; created_at: string }>(
    `insert into auth.sessions (user_id, amr, created_at, updated_at, tenant_id, oauth_client_id, oauth_scope)
     values ($1, $2::jsonb, $3, $3, $4, $5, $6)
     returning id, aal, to_json(created_at) #>> '{}' as created_at`,
    [user.id, JSON.stringify(amr), now.toISOString(), tenantId, oauthClientId, oauthScope],
  );
  const [signedIn] = await q.query<{ last_sign_in_at: string }>(
    `update auth.users set last_sign_in_at = $2 where id = $1 returning to_json(last_sign_in_at) #>> '{}' as last_sign_in_at`,
    [user.id, now.toISOString()],
  );
  const refreshToken = await insertRefreshToken(q, deps, user.id, session!.id, null);
  const current = { ...user, last_sign_in_at: signedIn?.last_sign_in_at ?? user.last_sign_in_at };
  const info = {
    id: session!.id,
    aal: session!.aal,
    amr,
    created_at: session!.created_at,
    tenant_id: tenantId,
    oauth_client_id: oauthClientId,
    oauth_scope: oauthScope,
  };
  return { tokens: await tokenResponse(deps, current, info, refreshToken), sessionId: session!.id };
}

/** `openSession` for a first-party sign-in (`tenantId`: an embed session's tenant); the tokens only. */
export async function startSession(
  q: Queryable,
  deps: Pick<Deps, 'config' | 'now'>,
  user: UserRow,
  method: string,
  tenantId: string | null = null,
): Promise<TokenResponse> {
  return (await openSession(q, deps, user, method, tenantId ? { tenantId } : {})).tokens;
}

interface RefreshRow {
  id: string;
  user_id: string;
  session_id: string;
  revoked: boolean;
  aal: string;
  amr: AccessTokenClaims['amr'];
  token_hash: string;
  created_at: string;
  last_active_at: string;
  tenant_id: string | null;
  oauth_client_id: string | null;
  oauth_scope: string | null;
}

/** GoTrue's `session_expired` answers, or undefined when the session may still be refreshed. */
function expiredSession(deps: Pick<Deps, 'config' | 'now'>, row: RefreshRow): AuthError | undefined {
  const { sessionMaxLifetime, sessionInactivityTimeout } = deps.config.identity;
  const now = deps.now().getTime();
  if (sessionMaxLifetime > 0 && new Date(row.created_at).getTime() + sessionMaxLifetime * 1000 <= now) {
    return new AuthError(400, 'session_expired', 'Invalid Refresh Token: Session Expired');
  }
  if (sessionInactivityTimeout > 0 && new Date(row.last_active_at).getTime() + sessionInactivityTimeout * 1000 <= now) {
    return new AuthError(400, 'session_expired', 'Invalid Refresh Token: Session Expired (Inactivity)');
  }
  return undefined;
}

/**
 * The `refresh_token` grant; throws `AuthError` as GoTrue does. `clientId` is the OAuth client
 * presenting the token (null: the first-party `/token` endpoint): a refresh token is redeemed only
 * by the client whose session it belongs to — any other caller gets "not found", so an OAuth
 * client's token never yields a first-party session, nor the other way round.
 */
export async function refreshGrant(deps: Deps, refreshToken: string, clientId: string | null = null): Promise<TokenResponse> {
  const notFound = () => new AuthError(400, 'refresh_token_not_found', 'Invalid Refresh Token: Refresh Token Not Found');
  if (refreshToken.length < 16 || refreshToken.length > 512) throw notFound();
  const outcome = await deps.db.transaction(async (tx) => {
    const [row] = await tx.query<RefreshRow>(
      `select rt.id, rt.user_id, rt.session_id, rt.revoked, rt.token_hash, s.aal, s.amr, s.tenant_id, s.oauth_client_id, s.oauth_scope,
              to_json(s.created_at) #>> '{}' as created_at,
              to_json(coalesce(s.refreshed_at, s.created_at)) #>> '{}' as last_active_at
         from auth.refresh_tokens rt join auth.sessions s on s.id = rt.session_id
        where rt.token_hash = $1
        for update`,
      [sha256Hex(refreshToken)],
    );
    if (!row || row.oauth_client_id !== clientId) return { error: notFound() };
    const user = await findUserById(tx, row.user_id);
    if (!user) return { error: notFound() };
    if (user.banned_until && new Date(user.banned_until) > deps.now()) {
      return { error: new AuthError(400, 'user_banned', 'Invalid Refresh Token: User Banned') };
    }
    const expired = expiredSession(deps, row);
    if (expired) return { error: expired };
    const session = {
      id: row.session_id,
      aal: row.aal,
      amr: row.amr,
      created_at: row.created_at,
      tenant_id: row.tenant_id,
      oauth_client_id: row.oauth_client_id,
      oauth_scope: row.oauth_scope,
    };
    if (!row.revoked) {
      await tx.query('update auth.refresh_tokens set revoked = true, updated_at = $2 where id = $1', [row.id, deps.now().toISOString()]);
      await tx.query('update auth.sessions set refreshed_at = $2, updated_at = now() where id = $1', [row.session_id, deps.now().toISOString()]);
      const child = await insertRefreshToken(tx, deps, row.user_id, row.session_id, row.token_hash);
      return { response: await tokenResponse(deps, user, session, child) };
    }
    // Reuse within the interval is allowed only for the direct parent of the live token.
    const [newest] = await tx.query<{ nonce: string; revoked: boolean; parent: string | null; age: number }>(
      `select nonce, revoked, parent, extract(epoch from ($2::timestamptz - created_at))::float8 as age
         from auth.refresh_tokens where session_id = $1 order by id desc limit 1`,
      [row.session_id, deps.now().toISOString()],
    );
    if (newest && !newest.revoked && newest.parent === row.token_hash && newest.age < deps.config.refreshReuseInterval) {
      const token = deriveRefreshToken(deps.config.jwtSecret, row.session_id, newest.nonce);
      return { response: await tokenResponse(deps, user, session, token) };
    }
    await tx.query('delete from auth.sessions where id = $1', [row.session_id]);
    return { error: new AuthError(400, 'refresh_token_already_used', 'Invalid Refresh Token: Already Used') };
  });
  if (outcome.error) throw outcome.error;
  return outcome.response!;
}

/** What a verified session token yields: its claims and the live user. */
export interface VerifiedSession {
  claims: AccessTokenClaims;
  user: UserRow;
}

/**
 * Verify an access token and that its session still exists (not logged out, not past its
 * maximum lifetime, its OAuth grant not revoked) and its user is not banned. One query after the
 * signature check. `audiences`: what the calling surface accepts (default: first-party tokens
 * only; `/mcp` adds its resource URL). Throws `TokenError` (bad or expired token, another
 * audience), `AuthError` 403 `session_not_found` or 403 `user_banned`. Used by every surface
 * that takes a session token.
 */
export async function verifySession(deps: Deps, token: string, audiences: string[] = [AUDIENCE]): Promise<VerifiedSession> {
  const claims = await verifyAccessToken(deps, token, audiences);
  const user = await findUserBySession(deps.db, claims.sub, claims.session_id, {
    maxLifetime: deps.config.identity.sessionMaxLifetime,
    now: deps.now(),
    tenantId: claims.tenant_id ?? null,
    clientId: claims.client_id ?? null,
  });
  if (!user) throw new AuthError(403, 'session_not_found', 'Session from session_id claim in JWT does not exist');
  if (user.banned_until && new Date(user.banned_until) > deps.now()) throw new AuthError(403, 'user_banned', 'User is banned');
  return { claims, user };
}

/** End sessions of a user: `local` (this one), `others` (all but this one) or `global` (all). */
export async function endSessions(db: Db, claims: AccessTokenClaims, scope: 'global' | 'local' | 'others') {
  const where = {
    local: 'id = $2',
    others: 'id <> $2',
    global: '$2::uuid is not null',
  }[scope];
  await db.query(`delete from auth.sessions where user_id = $1 and ${where}`, [claims.sub, claims.session_id]);
}

export { TokenError };
