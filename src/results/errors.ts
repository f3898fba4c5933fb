/**
 * Errors of the Results API (DESIGN §6): one error class with a closed set of codes, one
 * code → HTTP status map, and one renderer for the body `{"error": {"code", "message"}}`
 * (exactly these keys, nothing else).
 *
 *   invalid_request 400   bad limit, cursor, uuid, unknown or repeated parameter, bad URL/body
 *   unauthorized    401   missing, malformed, unknown or revoked API key
 *   not_found       404   unknown path, unknown id, or another tenant's id (never 403)
 *   rate_limited    429   too many requests (`Retry-After` is set by the limiter)
 *   internal_error  500   anything unexpected; the detail is logged, never sent
 *
 * `message` is public text for the API user. `internal` is detail for the log only.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';

/** The closed set of error codes and the HTTP status of each. Codes are never renamed or reused. */
export const ERROR_STATUS = {
  invalid_request: 400,
  unauthorized: 401,
  not_found: 404,
  rate_limited: 429,
  internal_error: 500,
} as const;

export type ResultsErrorCode = keyof typeof ERROR_STATUS;

/** The one error type of the Results API; thrown anywhere in the plugin, rendered by the handler. */
export class ResultsError extends Error {
  constructor(
    readonly code: ResultsErrorCode,
    message: string,
    /** Detail for the log, never sent to the client. */
    readonly internal?: unknown,
  ) {
    super(message);
    this.name = 'ResultsError';
  }

  /** The HTTP status of `code`. */
  get status(): number {
    return ERROR_STATUS[this.code];
  }
}

/** `invalid_request` naming the offending parameter: `limit: must be an integer from 1 to 200`. */
export const invalidParam = (param: string, problem: string) => new ResultsError('invalid_request', `${param}: ${problem}`);

/** The one JSON body of every error of this surface. */
export function errorBody(code: ResultsErrorCode, message: string): { error: { code: ResultsErrorCode; message: string } } {
  return { error: { code, message } };
}

/** Send a ResultsError: status from the map, the fixed body, `WWW-Authenticate` on 401. */
export function sendResultsError(reply: FastifyReply, err: ResultsError): FastifyReply {
  if (err.code === 'unauthorized') reply.header('www-authenticate', 'Bearer realm="results"');
  return reply.code(err.status).type('application/json; charset=utf-8').send(errorBody(err.code, err.message));
}

const MAX_PUBLIC_MESSAGE = 300;

/**
 * Map anything thrown inside the plugin to a ResultsError. Fastify's own client errors
 * (bad content type, body that is not JSON, too large, …) become `invalid_request` with their
 * message; 404 → `not_found`; 429 → `rate_limited`; everything else (including 5xx and plain
 * Errors, e.g. from the database) → `internal_error` with a fixed message.
 */
export function toResultsError(err: unknown): ResultsError {
  if (err instanceof ResultsError) return err;
  const status = (err as { statusCode?: unknown } | null)?.statusCode;
  const message = String((err as { message?: unknown } | null)?.message ?? '').slice(0, MAX_PUBLIC_MESSAGE);
  if (typeof status === 'number' && status >= 400 && status < 500) {
    if (status === 401) return new ResultsError('unauthorized', 'a valid API key is required', err);
    if (status === 404) return new ResultsError('not_found', 'not found', err);
    if (status === 429) return new ResultsError('rate_limited', message || 'too many requests', err);
    return new ResultsError('invalid_request', message || 'the request is not valid', err);
  }
  return new ResultsError('internal_error', 'internal error', err);
}

/** Fastify error handler for the plugin: log 5xx with their detail, render the fixed body. */
export function resultsErrorHandler(err: unknown, req: FastifyRequest, reply: FastifyReply): FastifyReply {
  const e = toResultsError(err);
  if (e.status >= 500) req.log.error({ err: e.internal ?? err }, 'results: unexpected error');
  else if (e.internal !== undefined) req.log.info({ err: e.internal, code: e.code }, 'results: client error');
  return sendResultsError(reply, e);
}
