/**
 * Errors of the embed surface (`/v1/embed/*`), rendered in the Results API's body (DESIGN §6):
 * exactly `{"error": {"code", "message"}}`, nothing else, never a stack trace or SQL text.
 *
 * The codes are a closed set with one status each. The results surface has its own class with
 * the same body (src/results/errors.ts, written in parallel); a later refactor may merge the two.
 *
 * `internal` carries detail for the server log only; it is never sent.
 */
import type { FastifyReply } from 'fastify';

export const EMBED_ERROR_STATUS = {
  invalid_request: 400,
  unauthorized: 401,
  not_found: 404,
  internal_error: 500,
} as const;

export type EmbedErrorCode = keyof typeof EMBED_ERROR_STATUS;

export class EmbedError extends Error {
  constructor(
    readonly code: EmbedErrorCode,
    message: string,
    /** Detail for the log (why a token was refused, …); never sent to the client. */
    readonly internal?: string,
  ) {
    super(message);
  }

  get status(): number {
    return EMBED_ERROR_STATUS[this.code];
  }
}

/**
 * The one message of every authentication failure: unknown tenant, tenant without an IdP,
 * bad signature, wrong issuer or audience, expired token, not a member. Identical on purpose,
 * so that neither tenants nor the reason of a refusal can be probed.
 */
export const UNAUTHORIZED_MESSAGE = 'the token is not valid for this tenant';

/** The 401 of every authentication failure; `internal` says why, in the log only. */
export const unauthorized = (internal?: string) => new EmbedError('unauthorized', UNAUTHORIZED_MESSAGE, internal);

export const invalidRequest = (message: string) => new EmbedError('invalid_request', message);

export const notFound = (message: string) => new EmbedError('not_found', message);

/** Send `err` as `{"error": {"code", "message"}}` with its status. */
export function sendEmbedError(reply: FastifyReply, err: EmbedError) {
  return reply.code(err.status).type('application/json; charset=utf-8').send({ error: { code: err.code, message: err.message } });
}
