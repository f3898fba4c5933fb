/**
 * `POST /auth/v1/token?grant_type=password|refresh_token` (GoTrue internal/api/token.go).
 *
 * Password grant, in order:
 *  1. (hooks, before this handler) the per-IP and per-email rate limits — no hashing yet;
 *  2. body: `email` (neither email nor phone, or both: 400 `validation_failed`); phone sign-in
 *     is not offered (422 `validation_failed` "Phone logins are disabled");
 *  3. the user by normalised email; the password is verified against the stored hash, or
 *     against a dummy argon2id hash when there is no user or no password, so an unknown email
 *     and a wrong password cost the same and both answer 400 `invalid_credentials`
 *     "Invalid login credentials". A missing, empty or over-long password fails the same way
 *     without hashing (for every email alike);
 *  4. only with the right password: banned → 400 `user_banned`, unconfirmed email →
 *     400 `email_not_confirmed` (GoTrue checks the ban first; checking it after the password
 *     tells nobody without the password that the account exists);
 *  5. a new session; a bcrypt (or outdated argon2) hash is re-hashed to the current argon2id
 *     cost in the same transaction. A password that no longer meets the policy still signs in,
 *     with GoTrue's `weak_password: {reasons, message}` in the response.
 *
 * Refresh grant: `refreshGrant` (sessions.ts). Any other grant: 400 `invalid_credentials`
 * "unsupported_grant_type" (GoTrue's answer, odd as it is).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { Deps } from '../deps.ts';
import { AuthError } from './errors.ts';
import { parseBody } from './body.ts';
import { dummyPasswordHash, hashPassword, MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH, needsRehash, verifyPassword } from './passwords.ts';
import type { TokenLimits } from './rate-limit.ts';
import { refreshGrant, startSession } from './sessions.ts';
import { findUserByEmail, type UserRow } from './users.ts';
import type { Queryable } from '../db/index.ts';
import { countGrant } from '../telemetry/metrics.ts';

const passwordBody = z.object({
  email: z.string().max(1024).optional(),
  phone: z.string().max(64).optional(),
  password: z.string().max(10_000).optional(),
});
const refreshBody = z.object({ refresh_token: z.string().max(1024).optional() });

const invalidCredentials = () => new AuthError(400, 'invalid_credentials', 'Invalid login credentials');

/**
 * Steps 3–4 of the password grant: the user whose password this is, or throws `AuthError`
 * (`invalid_credentials`, `user_banned`, `email_not_confirmed`). An unknown email costs one
 * argon2id verification like a wrong password. Also used by the OAuth sign-in page.
 */
export async function checkPassword(deps: Deps, email: string, password: string): Promise<UserRow> {
  const user = await findUserByEmail(deps.db, email);
  if (!password || password.length > MAX_PASSWORD_LENGTH) throw invalidCredentials();
  const stored = user?.encrypted_password ?? (await dummyPasswordHash());
  const ok = (await verifyPassword(stored, password)) && Boolean(user?.encrypted_password);
  if (!user || !ok) throw invalidCredentials();
  if (user.banned_until && new Date(user.banned_until) > deps.now()) throw new AuthError(400, 'user_banned', 'User is banned');
  if (!user.email_confirmed_at) throw new AuthError(400, 'email_not_confirmed', 'Email not confirmed');
  return user;
}

/** Step 5's re-hash: a bcrypt (or outdated argon2) hash becomes the current argon2id, in `tx`. */
export async function rehashIfOutdated(tx: Queryable, user: UserRow, password: string): Promise<void> {
  if (needsRehash(user.encrypted_password!)) {
    await tx.query('update auth.users set encrypted_password = $2 where id = $1', [user.id, await hashPassword(password)]);
  }
}

async function passwordGrant(deps: Deps, rawBody: unknown) {
  const body = parseBody(passwordBody, rawBody);
  if (body.email && body.phone) {
    throw new AuthError(400, 'validation_failed', 'Only an email address or phone number should be provided on login.');
  }
  if (body.phone) throw new AuthError(422, 'validation_failed', 'Phone logins are disabled');
  if (!body.email) throw new AuthError(400, 'validation_failed', 'missing email or phone');
  const password = body.password ?? '';
  const user = await checkPassword(deps, body.email, password);
  const tokens = await deps.db.transaction(async (tx) => {
    await rehashIfOutdated(tx, user, password);
    return startSession(tx, deps, user, 'password');
  });
  if ([...password].length < MIN_PASSWORD_LENGTH) {
    const message = `Password should be at least ${MIN_PASSWORD_LENGTH} characters.`;
    return { ...tokens, weak_password: { reasons: ['length'], message } };
  }
  return tokens;
}

/** Register `POST /token` with its rate-limit hooks. */
export function tokenRoute(app: FastifyInstance, deps: Deps, limits: TokenLimits) {
  const onResponse = (req: FastifyRequest, reply: FastifyReply, done: () => void) => {
    countGrant((req.query as Record<string, unknown>).grant_type, reply);
    done();
  };
  app.post('/token', { onRequest: limits.byIp, preHandler: limits.byEmail, onResponse }, async (req) => {
    const grantType = (req.query as Record<string, unknown>).grant_type;
    if (grantType === 'password') return passwordGrant(deps, req.body);
    if (grantType === 'refresh_token') {
      const body = parseBody(refreshBody, req.body);
      if (!body.refresh_token) throw new AuthError(400, 'validation_failed', 'refresh_token required');
      return refreshGrant(deps, body.refresh_token);
    }
    throw new AuthError(400, 'invalid_credentials', 'unsupported_grant_type');
  });
}
