/**
 * Authorization requests and codes (OAuth 2.1 §4.1; GoTrue's oauth_authorizations): one row per
 * `GET /oauth/authorize`, bound to the user who signs in, approved or denied once.
 *
 * - The request lives `AUTHORIZATION_TTL_SECONDS` (10 min) to sign in and decide; afterwards it
 *   is "not found", as an unknown id is.
 * - Each page step carries a CSRF value bound to this authorization: a random token whose
 *   sha256 is stored (`csrf_hash`), replaced when the step changes (sign-in → consent), compared
 *   in constant time. A value from another authorization, or from an earlier step, is refused.
 * - Approval stores the sha256 of a random 256-bit authorization code, valid
 *   `CODE_TTL_SECONDS` (2 min) and redeemable once (token.ts).
 * - The redirect back carries `code` (or `error`), `state` as sent, and `iss` (RFC 9207).
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { Queryable } from '../../db/index.ts';
import type { Deps } from '../../deps.ts';
import { UUID_RE } from '../../lib/ids.ts';
import { issuer } from '../jwt.ts';
import { sha256Hex } from '../../lib/hash.ts';
import { scopesCover } from './scopes.ts';

export const AUTHORIZATION_TTL_SECONDS = 600;
export const CODE_TTL_SECONDS = 120;

/** A pending authorization as the steps read it. */
export interface Authorization {
  id: string;
  client_id: string;
  redirect_uri: string;
  scope: string;
  state: string | null;
  resource: string;
  user_id: string | null;
  csrf_hash: string;
}

const COLUMNS = 'id, client_id, redirect_uri, scope, state, resource, user_id, csrf_hash';

const newToken = () => randomBytes(32).toString('base64url');

/** What `GET /oauth/authorize` validated. */
export interface AuthorizationRequest {
  clientId: string;
  redirectUri: string;
  scope: string;
  state: string | null;
  resource: string;
  codeChallenge: string;
}

/** Store a new pending authorization; returns its id and the sign-in step's CSRF value. */
export async function createAuthorization(deps: Pick<Deps, 'db' | 'now'>, r: AuthorizationRequest): Promise<{ id: string; csrf: string }> {
  const csrf = newToken();
  const expires = new Date(deps.now().getTime() + AUTHORIZATION_TTL_SECONDS * 1000);
  // Rows a day past their expiry serve nothing (a replayed code is refused as unknown then too).
  await deps.db.query(`delete from auth.oauth_authorizations where expires_at < $1::timestamptz - interval '1 day'`, [deps.now().toISOString()]);
  const [row] = await deps.db.query<{ id: string }>(
    `insert into auth.oauth_authorizations (client_id, redirect_uri, scope, state, resource, code_challenge, csrf_hash, expires_at)
     values ($1, $2, $3, $4, $5, $6, $7, $8) returning id`,
    [r.clientId, r.redirectUri, r.scope, r.state, r.resource, r.codeChallenge, sha256Hex(csrf), expires.toISOString()],
  );
  return { id: row!.id, csrf };
}

/** The pending, unexpired authorization `id`, or undefined (malformed id, unknown, expired, decided). */
export async function pendingAuthorization(deps: Pick<Deps, 'db' | 'now'>, id: string): Promise<Authorization | undefined> {
  if (!UUID_RE.test(id)) return undefined;
  const [row] = await deps.db.query<Authorization>(
    `select ${COLUMNS} from auth.oauth_authorizations where id = $1 and status = 'pending' and expires_at > $2::timestamptz`,
    [id, deps.now().toISOString()],
  );
  return row;
}

/** True when `csrf` is the current step's value of `authorization` (constant-time). */
export function csrfMatches(authorization: Authorization, csrf: unknown): boolean {
  if (typeof csrf !== 'string' || csrf.length > 100) return false;
  const a = Buffer.from(sha256Hex(csrf));
  const b = Buffer.from(authorization.csrf_hash);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * Bind the authorization to `userId` (the person who signed in) and start the next step: returns
 * its new CSRF value, or undefined when the authorization is no longer pending or belongs to
 * someone else.
 */
export async function bindUser(deps: Pick<Deps, 'db' | 'now'>, id: string, userId: string): Promise<string | undefined> {
  const csrf = newToken();
  const rows = await deps.db.query(
    `update auth.oauth_authorizations set user_id = $2, csrf_hash = $3
      where id = $1 and status = 'pending' and expires_at > $4::timestamptz and (user_id is null or user_id = $2)
      returning id`,
    [id, userId, sha256Hex(csrf), deps.now().toISOString()],
  );
  return rows.length ? csrf : undefined;
}

/** True when `userId` already consented to `clientId` for every scope of `scope`. */
export async function consentCovers(q: Queryable, userId: string, clientId: string, scope: string): Promise<boolean> {
  const [row] = await q.query<{ scopes: string[] }>('select scopes from auth.oauth_consents where user_id = $1 and client_id = $2', [userId, clientId]);
  return !!row && scopesCover(row.scopes, scope);
}

/** `uri` with `params` added to its query (existing query kept; RFC 6749 §4.1.2). */
export function withQuery(uri: string, params: Record<string, string | null | undefined>): string {
  const url = new URL(uri);
  for (const [k, v] of Object.entries(params)) if (v !== null && v !== undefined) url.searchParams.append(k, v);
  return url.toString();
}

/** The redirect of an error to the client (RFC 6749 §4.1.2.1, RFC 9207 `iss`). */
export function errorRedirect(deps: Pick<Deps, 'config'>, redirectUri: string, state: string | null, error: string, description: string) {
  return withQuery(redirectUri, { error, error_description: description, state, iss: issuer(deps) });
}

/**
 * Decide a pending authorization of `userId`: `approve` issues the code and stores the consent
 * (scopes added to any earlier ones); `deny` ends it with `access_denied`. Returns the URL to
 * send the browser to, or undefined when the authorization is not pending, expired or not this
 * user's (a second decision, a race).
 */
export async function decide(deps: Pick<Deps, 'db' | 'now' | 'config'>, id: string, userId: string, action: 'approve' | 'deny'): Promise<string | undefined> {
  return deps.db.transaction(async (tx: Queryable) => {
    const now = deps.now();
    const code = newToken();
    const [row] = await tx.query<Authorization>(
      `update auth.oauth_authorizations
          set status = $3, code_hash = case when $3 = 'approved' then $4 end,
              code_expires_at = case when $3 = 'approved' then $5::timestamptz end
        where id = $1 and user_id = $2 and status = 'pending' and expires_at > $6::timestamptz
        returning ${COLUMNS}`,
      [
        id,
        userId,
        action === 'approve' ? 'approved' : 'denied',
        sha256Hex(code),
        new Date(now.getTime() + CODE_TTL_SECONDS * 1000).toISOString(),
        now.toISOString(),
      ],
    );
    if (!row) return undefined;
    if (action === 'deny') return errorRedirect(deps, row.redirect_uri, row.state, 'access_denied', 'The user denied the request');
    await tx.query(
      `insert into auth.oauth_consents (user_id, client_id, scopes, granted_at) values ($1, $2, $3, $4)
       on conflict (user_id, client_id) do update
          set scopes = (select array_agg(distinct s order by s) from unnest(auth.oauth_consents.scopes || excluded.scopes) s)`,
      [userId, row.client_id, row.scope.split(' '), now.toISOString()],
    );
    return withQuery(row.redirect_uri, { code, state: row.state, iss: issuer(deps) });
  });
}
