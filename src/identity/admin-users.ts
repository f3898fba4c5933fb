/**
 * User administration — the one code path behind `/auth/v1/admin/users[/{id}]` (service-role
 * key) and `svc user list|get|update|delete|ban` (src/admin/ops/users.ts). Follows GoTrue's
 * internal/api/admin.go:
 *
 * - list: newest first (`created_at desc, id desc`). Page mode (`page`, `per_page`, what
 *   auth-js `listUsers` sends; default 50, capped at 1,000) answers `total` for the
 *   `X-Total-Count` / `Link` headers. Keyset mode (`limit`, `cursor`; GoTrue's cursor
 *   pagination) never counts or offsets and returns `pagination.next_cursor`. `filter` matches a
 *   substring of the email.
 * - get / update / delete by id: a malformed id is 404 `validation_failed` "user_id must be an
 *   UUID", an unknown one 404 `user_not_found` "User not found".
 * - update: `email` (normalised, unique), `password` (policy; ends every session of the user,
 *   as GoTrue's `UpdatePassword(tx, nil)`), `email_confirm`, `user_metadata` / `app_metadata`
 *   (merged; a `null` value removes the key), `ban_duration` (Go duration or "none").
 * - delete: hard delete (sessions, identities, memberships and learner records cascade);
 *   `should_soft_delete` is refused.
 *
 * Every function runs in the caller's transaction and throws `AuthError`.
 */
import type { Queryable } from '../db/index.ts';
import { keysetCodec, keysetPage } from '../lib/cursor.ts';
import { PG_TIMESTAMP_RE, UUID_RE } from '../lib/ids.ts';
import { parseGoDuration } from './duration.ts';
import { AuthError } from './errors.ts';
import { hashPassword, validatePassword } from './passwords.ts';
import { findUserById, metadataPatchParams, metadataPatchSql, normaliseEmail, USER_COLUMNS, userJson, validEmail, type UserRow } from './users.ts';

export const DEFAULT_PER_PAGE = 50;
export const MAX_PER_PAGE = 1000;

export type UserJson = ReturnType<typeof userJson>;

export type ListParams = { mode: 'page'; page: number; perPage: number; filter?: string } | { mode: 'cursor'; limit: number; cursor?: string; filter?: string };

export interface UserPage {
  users: UserJson[];
  aud: 'authenticated';
  /** Page mode only: users matching the filter, and the effective page and page size. */
  total?: number;
  page?: number;
  per_page?: number;
  /** Keyset mode only (GoTrue's `pagination` block; `next_cursor` absent on the last page). */
  pagination?: { next_cursor?: string; has_more: boolean };
}

const badPagination = (why: string) => new AuthError(400, 'validation_failed', `Bad Pagination Parameters: ${why}`);

/** Parse GoTrue's list query (`page`, `per_page` | `limit`, `cursor`; `filter`). */
export function listParams(query: Record<string, unknown>): ListParams {
  const str = (name: string) => {
    const v = query[name];
    if (v === undefined || v === '') return undefined;
    if (typeof v !== 'string') throw badPagination(`${name} must be given once`);
    return v;
  };
  const int = (name: string, min: number) => {
    const v = str(name);
    if (v === undefined) return undefined;
    if (!/^\d{1,9}$/.test(v) || Number(v) < min) throw badPagination(`${name} must be an integer of at least ${min}`);
    return Number(v);
  };
  const filter = str('filter');
  if (filter !== undefined && filter.length > 320) throw badPagination('filter is too long');
  const page = int('page', 1);
  const perPage = int('per_page', 1);
  const limit = int('limit', 1);
  const cursor = str('cursor');
  if ((limit !== undefined || cursor !== undefined) && page === undefined && perPage === undefined) {
    return { mode: 'cursor', limit: Math.min(limit ?? DEFAULT_PER_PAGE, MAX_PER_PAGE), cursor, filter };
  }
  return { mode: 'page', page: page ?? 1, perPage: Math.min(perPage ?? DEFAULT_PER_PAGE, MAX_PER_PAGE), filter };
}

/** Keyset cursors (src/lib/cursor.ts, unsigned): `[created_at, id]` of the last user sent. */
const cursors = keysetCodec();

function decodeCursor(cursor: string): [string, string] {
  const parts = cursors.decode(cursor);
  if (parts?.length === 2 && PG_TIMESTAMP_RE.test(parts[0]!) && UUID_RE.test(parts[1]!)) return [parts[0]!, parts[1]!];
  throw badPagination('invalid cursor');
}

/** `%`, `_` and `\` taken literally in a LIKE pattern. */
const likeLiteral = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);

/** One page of users, newest first. */
export async function listUsers(q: Queryable, params: ListParams): Promise<UserPage> {
  const pattern = params.filter ? `%${likeLiteral(normaliseEmail(params.filter))}%` : null;
  const from = `auth.users u join public.users su on su.auth_user_id = u.id where ($1::text is null or u.email like $1)`;
  if (params.mode === 'page') {
    const [{ total }] = (await q.query<{ total: number }>(`select count(*)::int as total from ${from}`, [pattern])) as [{ total: number }];
    const rows = await q.query<UserRow>(`select ${USER_COLUMNS} from ${from} order by u.created_at desc, u.id desc limit $2 offset $3`, [
      pattern,
      params.perPage,
      (params.page - 1) * params.perPage,
    ]);
    return { users: rows.map(userJson), aud: 'authenticated', total, page: params.page, per_page: params.perPage };
  }
  const after = params.cursor ? decodeCursor(params.cursor) : null;
  const rows = await q.query<UserRow & { cursor_ts: string }>(
    `select ${USER_COLUMNS}, to_json(u.created_at) #>> '{}' as cursor_ts from ${from}
        and ($2::timestamptz is null or (u.created_at, u.id) < ($2::timestamptz, $3::uuid))
      order by u.created_at desc, u.id desc limit $4`,
    [pattern, after?.[0] ?? null, after?.[1] ?? null, params.limit + 1],
  );
  const { items, next_cursor } = keysetPage(rows, params.limit, (last) => cursors.encode([last.cursor_ts, last.id]));
  return {
    users: items.map(userJson),
    aud: 'authenticated',
    pagination: next_cursor ? { next_cursor, has_more: true } : { has_more: false },
  };
}

/** The user with id `id`; throws GoTrue's 404s. */
export async function getUser(q: Queryable, id: string): Promise<UserRow> {
  if (!UUID_RE.test(id)) throw new AuthError(404, 'validation_failed', 'user_id must be an UUID');
  const user = await findUserById(q, id);
  if (!user) throw new AuthError(404, 'user_not_found', 'User not found');
  return user;
}

/** The user with this email (normalised), for the CLI; throws 404 `user_not_found`. */
export async function getUserByIdOrEmail(q: Queryable, idOrEmail: string): Promise<UserRow> {
  if (UUID_RE.test(idOrEmail)) return getUser(q, idOrEmail);
  const [row] = await q.query<{ id: string }>('select id from auth.users where email = $1', [normaliseEmail(idOrEmail)]);
  if (!row) throw new AuthError(404, 'user_not_found', 'User not found');
  return getUser(q, row.id);
}

/** GoTrue's `AdminUserParams` for an update (all optional). */
export interface UserUpdate {
  email?: string;
  password?: string;
  email_confirm?: boolean;
  user_metadata?: Record<string, unknown>;
  app_metadata?: Record<string, unknown>;
  ban_duration?: string;
  role?: string;
}

/** `banned_until` for a GoTrue `ban_duration` ("none" → null); throws 400 `validation_failed`. */
export function bannedUntil(banDuration: string, now: Date): string | null {
  if (banDuration === 'none') return null;
  const ms = parseGoDuration(banDuration);
  if (ms === undefined) {
    throw new AuthError(400, 'validation_failed', `invalid format for ban duration: time: invalid duration "${banDuration.slice(0, 40)}"`);
  }
  return new Date(now.getTime() + ms).toISOString();
}

/** Apply `update` to user `id`; returns the updated user. */
export async function updateUser(q: Queryable, id: string, update: UserUpdate, now: Date): Promise<UserRow> {
  const user = await getUser(q, id);
  if (update.role !== undefined && update.role !== user.role) {
    throw new AuthError(400, 'validation_failed', 'role cannot be changed: every user has the role "authenticated"');
  }
  const email = update.email !== undefined && update.email !== '' ? validEmail(update.email) : undefined;
  const banned = update.ban_duration !== undefined && update.ban_duration !== '' ? bannedUntil(update.ban_duration, now) : undefined;
  let encrypted: string | undefined;
  if (update.password !== undefined) {
    validatePassword(update.password);
    encrypted = await hashPassword(update.password);
  }
  if (email !== undefined && email !== user.email) {
    const taken = await q.query('select 1 from auth.users where email = $1 and id <> $2', [email, id]);
    if (taken.length) throw new AuthError(422, 'email_exists', 'A user with this email address has already been registered');
    await q.query('update auth.users set email = $2 where id = $1', [id, email]);
    await q.query(
      `update auth.identities set email = $2, identity_data = identity_data || jsonb_build_object('email', $2::text), updated_at = now()
        where user_id = $1 and provider = 'email'`,
      [id, email],
    );
  }
  if (encrypted !== undefined) {
    await q.query('update auth.users set encrypted_password = $2 where id = $1', [id, encrypted]);
    await q.query('delete from auth.sessions where user_id = $1', [id]);
  }
  if (update.email_confirm) {
    await q.query('update auth.users set email_confirmed_at = coalesce(email_confirmed_at, now()) where id = $1', [id]);
  }
  if (update.user_metadata) {
    await q.query(`update auth.users set raw_user_meta_data = ${metadataPatchSql('raw_user_meta_data', 2)} where id = $1`, [
      id,
      ...metadataPatchParams(update.user_metadata),
    ]);
  }
  if (update.app_metadata) {
    await q.query(`update auth.users set raw_app_meta_data = ${metadataPatchSql('raw_app_meta_data', 2)} where id = $1`, [
      id,
      ...metadataPatchParams(update.app_metadata),
    ]);
  }
  if (banned !== undefined) {
    await q.query('update auth.users set banned_until = $2::timestamptz where id = $1', [id, banned]);
  }
  await q.query('update auth.users set updated_at = now() where id = $1', [id]);
  return (await findUserById(q, id))!;
}

/** Delete user `id` and everything that hangs off it. */
export async function deleteUser(q: Queryable, id: string, options: { softDelete?: boolean } = {}): Promise<UserRow> {
  if (options.softDelete) throw new AuthError(400, 'validation_failed', 'should_soft_delete is not supported: users are deleted');
  const user = await getUser(q, id);
  await q.query('delete from auth.users where id = $1', [id]);
  return user;
}
