/**
 * Errors of the OAuth endpoints in OAuth's own shape: `{error, error_description}` with
 * `Cache-Control: no-store` (RFC 6749 §5.2; RFC 7591 §3.2.2 for registration; RFC 8707 §2 for
 * `invalid_target`). The browser-facing steps (authorize, sign-in, consent) never answer JSON:
 * they redirect the error to the client (RFC 6749 §4.1.2.1) or, when the client or its redirect
 * URI cannot be trusted, show it on a page (`PageError`, pages.ts).
 */
import type { FastifyReply } from 'fastify';

/** The error codes these endpoints emit (RFC 6749 §4.1.2.1, §5.2; RFC 7591 §3.2.2; RFC 8707 §2). */
export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unauthorized_client'
  | 'unsupported_grant_type'
  | 'unsupported_response_type'
  | 'invalid_scope'
  | 'invalid_target'
  | 'access_denied'
  | 'server_error'
  | 'temporarily_unavailable'
  | 'invalid_redirect_uri'
  | 'invalid_client_metadata';

export class OAuthError extends Error {
  constructor(
    readonly status: number,
    readonly error: OAuthErrorCode,
    readonly description: string,
    /** Seconds for `Retry-After` (429, 503). */
    readonly retryAfterSeconds?: number,
  ) {
    super(description);
  }
}

/** Send `err` as an OAuth JSON error. */
export function sendOAuthError(reply: FastifyReply, err: OAuthError) {
  reply.code(err.status).header('cache-control', 'no-store').header('pragma', 'no-cache');
  if (err.retryAfterSeconds !== undefined) reply.header('retry-after', String(err.retryAfterSeconds));
  return reply.send({ error: err.error, error_description: err.description });
}

/**
 * An error of the browser-facing steps that must not go back to the client: unknown or revoked
 * client, a redirect URI it did not register, an expired or unknown authorization, a form
 * without its CSRF value. Shown as a page with `status`.
 */
export class PageError extends Error {
  constructor(
    readonly status: number,
    readonly title: string,
    message: string,
  ) {
    super(message);
  }
}
