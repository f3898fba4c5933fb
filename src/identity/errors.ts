/**
 * Errors of the identity platform, rendered in GoTrue's shapes (supabase/auth
 * internal/api/errors.go `HandleResponseError`):
 *
 * - `X-Supabase-Api-Version: 2024-01-01` or later (auth-js sends it): `{code, message}`;
 * - no header, or an older version: `{code: <HTTP status>, error_code, msg}`.
 *
 * Both carry the `x-sb-error-code` header. A `weak_password` error adds
 * `weak_password: {reasons}` to either body, as GoTrue does and auth-js reads.
 *
 * Codes are a closed set of GoTrue's `ErrorCode` values (internal/api/apierrors/errorcode.go);
 * never invent or rename one: clients switch on them. One departure: `unavailable` (503, with
 * `Retry-After`) while the database cannot be reached (issue #11). GoTrue has no code for that
 * (it answers 500 `unexpected_failure`); auth-js treats any 502/503/504 as a retryable
 * `AuthRetryableFetchError` whatever the body says, so the status is what clients act on.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { DB_RETRY_AFTER_SECONDS } from '../db/errors.ts';

/** The GoTrue error codes this platform emits (a closed subset of GoTrue's). */
export type AuthErrorCode =
  | 'unexpected_failure'
  | 'validation_failed'
  | 'bad_json'
  | 'email_exists'
  | 'bad_jwt'
  | 'not_admin'
  | 'no_authorization'
  | 'user_not_found'
  | 'session_not_found'
  | 'session_expired'
  | 'refresh_token_not_found'
  | 'refresh_token_already_used'
  | 'user_banned'
  | 'email_not_confirmed'
  | 'same_password'
  | 'weak_password'
  | 'over_request_rate_limit'
  | 'invalid_credentials'
  | 'oauth_authorization_not_found'
  | 'oauth_consent_not_found'
  | 'unavailable';

export class AuthError extends Error {
  constructor(
    readonly status: number,
    readonly code: AuthErrorCode,
    message: string,
    /** Extra top-level body fields (only `weak_password: {reasons}` today). */
    readonly extra?: { weak_password: { reasons: string[] } },
    /** Seconds for `Retry-After` (429, 503). */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }
}

export const API_VERSION_2024 = '2024-01-01';

function apiVersion(req: FastifyRequest): string | undefined {
  const v = req.headers['x-supabase-api-version'];
  return typeof v === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(v) ? v : undefined;
}

/** The body GoTrue sends for `err` to a client speaking `version` (undefined: the initial version). */
export function authErrorBody(err: AuthError, version: string | undefined): Record<string, unknown> {
  const body: Record<string, unknown> =
    version && version >= API_VERSION_2024 ? { code: err.code, message: err.message } : { code: err.status, error_code: err.code, msg: err.message };
  return err.extra ? { ...body, ...err.extra } : body;
}

export function sendAuthError(req: FastifyRequest, reply: FastifyReply, err: AuthError) {
  reply.code(err.status).header('x-sb-error-code', err.code);
  if (err.retryAfterSeconds !== undefined) reply.header('retry-after', String(err.retryAfterSeconds));
  return reply.send(authErrorBody(err, apiVersion(req)));
}

/** The 503 of an unavailable database (see the header). */
export const unavailable = () =>
  new AuthError(503, 'unavailable', 'Service temporarily unavailable, please retry after a moment', undefined, DB_RETRY_AFTER_SECONDS);
