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
 */
import { createHash, createHmac, randomBytes } from 'node:crypto';
import type { Db, Queryable } from '../db/index.ts';
import type { Deps } from '../deps.ts';
import { epochSeconds } from '../deps.ts';
import { AuthError } from './errors.ts';
import { signAccessToken, verifyAccessToken, TokenError, type AccessTokenClaims } from './jwt.ts';
import { findUserById, findUserBySession, userJson, type UserRow } from './users.ts';

export const sha256Hex = (value: string) => createHash('sha256').update(value).digest('hex');

function deriveRefreshToken(secret: string, sessionId: string, nonce: string): string {
  return createHmac('sha256', secret).update(`refresh:${sessionId}:${nonce}`).digest('base64url');
}

async function insertRefreshToken(
  q: Queryable,
  deps: Pick<Deps, 'config'>,
  userId: string,
  sessionId: string,
  parent: string | null,
): Promise<string> {
  const nonce = randomBytes(16).toString('base64url');
  const token = deriveRefreshToken(deps.config.jwtSecret, sessionId, nonce);
  await q.query(
    'insert into auth.refresh_tokens (token_hash, nonce, user_id, session_id, parent) values ($1, $2, $3, $4, $5)',
    [sha256Hex(token), nonce, userId, sessionId, parent],
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

async function tokenResponse(
  deps: Pick<Deps, 'config' | 'now'>,
  user: UserRow,
  session: { id: string; aal: string; amr: AccessTokenClaims['amr'] },
  refreshToken: string,
): Promise<TokenResponse> {
  const { token, expiresAt } = await signAccessToken(deps, {
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
  });
  return {
    access_token: token,
    token_type: 'bearer',
    expires_in: deps.config.accessTokenTtl,
    expires_at: expiresAt,
    refresh_token: refreshToken,
    user: userJson(user),
  };
}

/** Start a session for `user` (signed in by `method`, e.g. `password` or `idp`) and issue tokens. */
export async function startSession(
  q: Queryable,
  deps: Pick<Deps, 'config' | 'now'>,
  user: UserRow,
  method: string,
): Promise<TokenResponse> {
  const amr = [{ method, timestamp: epochSeconds(deps.now()) }];
  const [session] = await q.query<{ id: string; aal: string }>(
    'insert into auth.sessions (user_id, amr) values ($1, $2::jsonb) returning id, aal',
    [user.id, JSON.stringify(amr)],
  );
  await q.query('update auth.users set last_sign_in_at = now() where id = $1', [user.id]);
  const refreshToken = await insertRefreshToken(q, deps, user.id, session!.id, null);
  return tokenResponse(deps, user, { id: session!.id, aal: session!.aal, amr }, refreshToken);
}

interface RefreshRow {
  id: string;
  user_id: string;
  session_id: string;
  revoked: boolean;
  aal: string;
  amr: AccessTokenClaims['amr'];
  token_hash: string;
}

/** The `refresh_token` grant; throws `AuthError` as GoTrue does. */
export async function refreshGrant(deps: Deps, refreshToken: string): Promise<TokenResponse> {
  const notFound = () => new AuthError(400, 'refresh_token_not_found', 'Invalid Refresh Token: Refresh Token Not Found');
  if (refreshToken.length < 16 || refreshToken.length > 512) throw notFound();
  const outcome = await deps.db.transaction(async (tx) => {
    const [row] = await tx.query<RefreshRow>(
      `select rt.id, rt.user_id, rt.session_id, rt.revoked, rt.token_hash, s.aal, s.amr
         from auth.refresh_tokens rt join auth.sessions s on s.id = rt.session_id
        where rt.token_hash = $1
        for update`,
      [sha256Hex(refreshToken)],
    );
    if (!row) return { error: notFound() };
    const user = await findUserById(tx, row.user_id);
    if (!user) return { error: notFound() };
    if (user.banned_until && new Date(user.banned_until) > deps.now()) {
      return { error: new AuthError(400, 'user_banned', 'User is banned') };
    }
    const session = { id: row.session_id, aal: row.aal, amr: row.amr };
    if (!row.revoked) {
      await tx.query('update auth.refresh_tokens set revoked = true, updated_at = now() where id = $1', [row.id]);
      await tx.query('update auth.sessions set refreshed_at = now(), updated_at = now() where id = $1', [row.session_id]);
      const child = await insertRefreshToken(tx, deps, row.user_id, row.session_id, row.token_hash);
      return { response: await tokenResponse(deps, user, session, child) };
    }
    // Reuse within the interval is allowed only for the direct parent of the live token.
    const [newest] = await tx.query<{ nonce: string; revoked: boolean; parent: string | null; age: number }>(
      `select nonce, revoked, parent, extract(epoch from (clock_timestamp() - created_at))::float8 as age
         from auth.refresh_tokens where session_id = $1 order by id desc limit 1`,
      [row.session_id],
    );
    if (newest && !newest.revoked && newest.parent === row.token_hash && newest.age <= deps.config.refreshReuseInterval) {
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
 * Verify an access token and that its session still exists and its user is not banned.
 * Throws `TokenError` (bad or expired token) or `AuthError` 403 `session_not_found`.
 */
export async function verifySession(deps: Deps, token: string): Promise<VerifiedSession> {
  const claims = await verifyAccessToken(deps, token);
  const user = await findUserBySession(deps.db, claims.sub, claims.session_id);
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
