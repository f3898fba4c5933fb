/**
 * Users of the identity platform (auth.users + auth.identities) and their GoTrue JSON shape.
 *
 * `createUser` is the one code path behind `POST /auth/v1/admin/users`, `svc user create` and
 * the embed session's first-sight learner: it normalises the email (trim + lower case, once),
 * hashes the password, writes auth.users, its identity and the internal `users` row
 * (svc_user_id) in the caller's transaction. Throws `AuthError` 422 `email_exists` on a duplicate.
 */
import type { Queryable } from '../db/index.ts';
import { AuthError } from './errors.ts';
import { hashPassword, MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from './passwords.ts';

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
}

/** Trim and lower-case an email address; the only normalisation, applied on every path. */
export function normaliseEmail(email: string): string {
  return email.trim().toLowerCase();
}

const EMAIL_RE = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

export function validatePassword(password: string): void {
  if (password.length < MIN_PASSWORD_LENGTH) {
    throw new AuthError(422, 'weak_password', `Password should be at least ${MIN_PASSWORD_LENGTH} characters.`);
  }
  if (password.length > MAX_PASSWORD_LENGTH) {
    throw new AuthError(422, 'validation_failed', `Password cannot be longer than ${MAX_PASSWORD_LENGTH} characters.`);
  }
}

/** Columns of auth.users plus the internal id, formatted by PostgreSQL as RFC 3339 text. */
const USER_COLUMNS = `u.id, u.aud, u.role, u.email, u.encrypted_password, u.phone, u.raw_app_meta_data,
  u.raw_user_meta_data, u.is_anonymous,
  to_json(u.email_confirmed_at) #>> '{}' as email_confirmed_at, to_json(u.banned_until) #>> '{}' as banned_until,
  to_json(u.last_sign_in_at) #>> '{}' as last_sign_in_at, to_json(u.created_at) #>> '{}' as created_at,
  to_json(u.updated_at) #>> '{}' as updated_at, su.id as svc_user_id`;

export async function findUserById(q: Queryable, id: string): Promise<UserRow | undefined> {
  const rows = await q.query<UserRow>(
    `select ${USER_COLUMNS} from auth.users u join public.users su on su.auth_user_id = u.id where u.id = $1`,
    [id],
  );
  return rows[0];
}

/** The user of a live session (one round trip), or undefined when the session has ended. */
export async function findUserBySession(q: Queryable, userId: string, sessionId: string): Promise<UserRow | undefined> {
  const rows = await q.query<UserRow>(
    `select ${USER_COLUMNS} from auth.sessions s
       join auth.users u on u.id = s.user_id join public.users su on su.auth_user_id = u.id
      where s.id = $1 and s.user_id = $2`,
    [sessionId, userId],
  );
  return rows[0];
}

export async function findUserByEmail(q: Queryable, email: string): Promise<UserRow | undefined> {
  const rows = await q.query<UserRow>(
    `select ${USER_COLUMNS} from auth.users u join public.users su on su.auth_user_id = u.id where u.email = $1`,
    [normaliseEmail(email)],
  );
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
  /** Identity provider and subject; default `email` / the user id. */
  provider?: string;
  providerId?: string;
}

export async function createUser(q: Queryable, input: NewUser): Promise<UserRow> {
  const email = input.email === undefined ? null : normaliseEmail(input.email);
  if (email !== null && !EMAIL_RE.test(email)) {
    throw new AuthError(400, 'validation_failed', 'Unable to validate email address: invalid format');
  }
  let encrypted: string | null = null;
  if (input.password !== undefined) {
    validatePassword(input.password);
    encrypted = await hashPassword(input.password);
  } else if (input.passwordHash !== undefined) {
    if (!/^(\$2[aby]\$\d\d\$.{53}|\$argon2(id|i|d)\$.+)$/.test(input.passwordHash)) {
      throw new AuthError(400, 'validation_failed', 'password_hash must be a bcrypt or argon2 hash');
    }
    encrypted = input.passwordHash;
  }
  const provider = input.provider ?? 'email';
  const appMetadata = { provider, providers: [provider], ...(input.appMetadata ?? {}) };
  if (email !== null) {
    const taken = await q.query('select 1 from auth.users where email = $1', [email]);
    if (taken.length) throw new AuthError(422, 'email_exists', 'A user with this email address has already been registered');
  }
  const [user] = await q.query<{ id: string }>(
    `insert into auth.users (email, encrypted_password, email_confirmed_at, raw_app_meta_data, raw_user_meta_data)
     values ($1, $2, case when $3::boolean then now() end, $4::jsonb, $5::jsonb) returning id`,
    [email, encrypted, input.emailConfirm ?? false, JSON.stringify(appMetadata), JSON.stringify(input.userMetadata ?? {})],
  );
  await q.query(
    `insert into auth.identities (user_id, provider, provider_id, identity_data, email)
     values ($1, $2, $3, jsonb_build_object('sub', $3::text, 'email', $4::text), $4)`,
    [user!.id, provider, input.providerId ?? user!.id, email],
  );
  await q.query('insert into public.users (auth_user_id) values ($1)', [user!.id]);
  return (await findUserById(q, user!.id))!;
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
    identities: [],
    created_at: u.created_at,
    updated_at: u.updated_at,
    banned_until: u.banned_until ?? undefined,
    is_anonymous: u.is_anonymous,
  };
}
