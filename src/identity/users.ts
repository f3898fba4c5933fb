/**
 * Users of the identity platform (auth.users + auth.identities) and their GoTrue JSON shape.
 *
 * `createUser` is the one code path behind `POST /auth/v1/admin/users`, `svc user create` and
 * the embed session's first-sight learner: it normalises the email (`normaliseEmail`, the only
 * normalisation, applied on every path that takes an email), checks the password policy or the
 * imported hash, and writes auth.users, its identity and the internal `users` row (svc_user_id)
 * in the caller's transaction. Throws `AuthError` (422 `email_exists`, 422 `weak_password`,
 * 400 `validation_failed`).
 *
 * Finder functions return `undefined` for "no such row"; callers turn that into their error.
 */
import type { Queryable } from '../db/index.ts';
import { AuthError } from './errors.ts';
import { hashPassword, validateImportedHash, validatePassword } from './passwords.ts';

export interface IdentityJson {
  identity_id: string;
  id: string;
  user_id: string;
  identity_data: Record<string, unknown>;
  provider: string;
  email: string | null;
  last_sign_in_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface UserRow {
  id: string;
  aud: string;
  role: string;
  email: string | null;
  encrypted_password: string | null;
  email_confirmed_at: string | null;
  phone: string | null;
  raw_app_meta_data: Record<string, unknown>;
  raw_user_meta_data: Record<string, unknown>;
  banned_until: string | null;
  last_sign_in_at: string | null;
  is_anonymous: boolean;
  created_at: string;
  updated_at: string;
  svc_user_id: string;
  identities: IdentityJson[];
}

/** Trim and lower-case an email address; the only normalisation, applied on every path. */
export function normaliseEmail(email: string): string {
  return email.trim().toLowerCase();
}

const EMAIL_RE = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** Normalise and check an email address; throws 400 `validation_failed` (GoTrue's message). */
export function validEmail(email: string): string {
  const normalised = normaliseEmail(email);
  if (normalised.length > 255 || !EMAIL_RE.test(normalised)) {
    throw new AuthError(400, 'validation_failed', 'Unable to validate email address: invalid format');
  }
  return normalised;
}

/** Columns of auth.users plus the internal id and the identities, timestamps as RFC 3339 text. */
export const USER_COLUMNS = `u.id, u.aud, u.role, u.email, u.encrypted_password, u.phone, u.raw_app_meta_data,
  u.raw_user_meta_data, u.is_anonymous,
  to_json(u.email_confirmed_at) #>> '{}' as email_confirmed_at, to_json(u.banned_until) #>> '{}' as banned_until,
  to_json(u.last_sign_in_at) #>> '{}' as last_sign_in_at, to_json(u.created_at) #>> '{}' as created_at,
  to_json(u.updated_at) #>> '{}' as updated_at, su.id as svc_user_id,
  coalesce((select json_agg(json_build_object(
      'identity_id', i.id, 'id', i.provider_id, 'user_id', i.user_id, 'identity_data', i.identity_data,
      'provider', i.provider, 'email', i.email, 'last_sign_in_at', i.last_sign_in_at,
      'created_at', i.created_at, 'updated_at', i.updated_at) order by i.created_at, i.id)
    from auth.identities i where i.user_id = u.id), '[]'::json) as identities`;

const USER_FROM = 'auth.users u join public.users su on su.auth_user_id = u.id';

export async function findUserById(q: Queryable, id: string): Promise<UserRow | undefined> {
  const rows = await q.query<UserRow>(`select ${USER_COLUMNS} from ${USER_FROM} where u.id = $1`, [id]);
  return rows[0];
}

/** Session validity rules checked with the session lookup (seconds; 0 = no limit). */
export interface SessionLimits {
  maxLifetime: number;
  now: Date;
  /** The token's `tenant_id` claim (null when none): must equal the session's tenant. */
  tenantId?: string | null;
  /** The token's `client_id` claim (null when none): must equal the session's OAuth client. */
  clientId?: string | null;
}

/**
 * The user of a live session (one round trip), or undefined when the session has ended —
 * logged out, deleted with its user, or older than `limits.maxLifetime` — or when the token's
 * tenant claim is not the session's tenant.
 */
export async function findUserBySession(
  q: Queryable,
  userId: string,
  sessionId: string,
  limits: SessionLimits = { maxLifetime: 0, now: new Date() },
): Promise<UserRow | undefined> {
  const rows = await q.query<UserRow>(
    `select ${USER_COLUMNS} from auth.sessions s
       join ${USER_FROM} on u.id = s.user_id
      where s.id = $1 and s.user_id = $2
        and ($3::int = 0 or s.created_at + make_interval(secs => $3::int) > $4::timestamptz)
        and s.tenant_id is not distinct from $5::uuid
        and s.oauth_client_id is not distinct from $6::text`,
    [sessionId, userId, limits.maxLifetime, limits.now.toISOString(), limits.tenantId ?? null, limits.clientId ?? null],
  );
  return rows[0];
}

export async function findUserByEmail(q: Queryable, email: string): Promise<UserRow | undefined> {
  const rows = await q.query<UserRow>(`select ${USER_COLUMNS} from ${USER_FROM} where u.email = $1`, [normaliseEmail(email)]);
  return rows[0];
}

export interface NewUser {
  email?: string;
  password?: string;
  /** A bcrypt or argon2 hash imported from another GoTrue instance, instead of `password`. */
  passwordHash?: string;
  emailConfirm?: boolean;
  appMetadata?: Record<string, unknown>;
  userMetadata?: Record<string, unknown>;
  /** `banned_until` as an ISO timestamp (already computed from `ban_duration`). */
  bannedUntil?: string | null;
  /** Identity provider and subject; default `email` / the user id. */
  provider?: string;
  providerId?: string;
}

export async function createUser(q: Queryable, input: NewUser): Promise<UserRow> {
  const email = input.email === undefined ? null : validEmail(input.email);
  if (input.password !== undefined && input.passwordHash !== undefined) {
    throw new AuthError(400, 'validation_failed', 'Only a password or a password hash should be provided');
  }
  let encrypted: string | null = null;
  if (input.password !== undefined) {
    validatePassword(input.password);
    encrypted = await hashPassword(input.password);
  } else if (input.passwordHash !== undefined) {
    encrypted = validateImportedHash(input.passwordHash);
  }
  const provider = input.provider ?? 'email';
  // GoTrue sets provider/providers first, then merges the caller's app_metadata over them.
  const appMetadata = mergeMetadata({ provider, providers: [provider] }, input.appMetadata ?? {});
  if (email !== null) {
    const taken = await q.query('select 1 from auth.users where email = $1', [email]);
    if (taken.length) throw new AuthError(422, 'email_exists', 'A user with this email address has already been registered');
  }
  const [user] = await q.query<{ id: string }>(
    `insert into auth.users (email, encrypted_password, email_confirmed_at, raw_app_meta_data, raw_user_meta_data, banned_until)
     values ($1, $2, case when $3::boolean then now() end, $4::jsonb, $5::jsonb, $6::timestamptz) returning id`,
    [email, encrypted, input.emailConfirm ?? false, JSON.stringify(appMetadata), JSON.stringify(input.userMetadata ?? {}), input.bannedUntil ?? null],
  );
  await q.query(
    `insert into auth.identities (user_id, provider, provider_id, identity_data, email)
     values ($1, $2, $3, jsonb_build_object('sub', $3::text, 'email', $4::text, 'email_verified', $5::boolean), $4)`,
    [user!.id, provider, input.providerId ?? user!.id, email, input.emailConfirm ?? false],
  );
  await q.query('insert into public.users (auth_user_id) values ($1)', [user!.id]);
  return (await findUserById(q, user!.id))!;
}

/**
 * Merge `updates` into a metadata object as GoTrue does (`UpdateUserMetaData`): each key is set,
 * and a key whose value is `null` is removed.
 */
export function mergeMetadata(current: Record<string, unknown>, updates: Record<string, unknown>): Record<string, unknown> {
  const merged = { ...current };
  for (const [key, value] of Object.entries(updates)) {
    if (value === null) delete merged[key];
    else merged[key] = value;
  }
  return merged;
}

/**
 * SQL expression merging a metadata patch into `column` atomically (GoTrue's merge rule: keys
 * are set; a `null` value removes the key). Parameters `$<first>` (jsonb of the set keys) and
 * `$<first+1>` (text[] of removed keys) come from `metadataPatchParams`.
 */
export const metadataPatchSql = (column: string, first: number) => `(${column} || $${first}::jsonb) - $${first + 1}::text[]`;

export function metadataPatchParams(updates: Record<string, unknown>): [string, string[]] {
  const set = Object.fromEntries(Object.entries(updates).filter(([, v]) => v !== null));
  const removed = Object.entries(updates)
    .filter(([, v]) => v === null)
    .map(([k]) => k);
  return [JSON.stringify(set), removed];
}

/** GoTrue's user object (the JSON field names are frozen: auth-js reads them). */
export function userJson(u: UserRow) {
  return {
    id: u.id,
    aud: u.aud,
    role: u.role,
    email: u.email ?? '',
    email_confirmed_at: u.email_confirmed_at ?? undefined,
    phone: u.phone ?? '',
    confirmed_at: u.email_confirmed_at ?? undefined,
    last_sign_in_at: u.last_sign_in_at ?? undefined,
    app_metadata: u.raw_app_meta_data,
    user_metadata: u.raw_user_meta_data,
    identities: u.identities,
    created_at: u.created_at,
    updated_at: u.updated_at,
    banned_until: u.banned_until ?? undefined,
    is_anonymous: u.is_anonymous,
  };
}
