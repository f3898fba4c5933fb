/**
 * The error body of the `/v1` surfaces — the Results API and the embed endpoints (DESIGN §6,
 * plus issue #4's request id): exactly `{"error": {"code", "message", "request_id"}}`, a closed
 * set of codes with one HTTP status each, never a stack trace or SQL text. `request_id` is the
 * request's `X-Request-Id` (also sent as that header), so a partner can quote it to support.
 *
 *   invalid_request 400   bad parameter, cursor, uuid, body that is not JSON, oversized body…
 *   unauthorized    401   missing or invalid credential (`WWW-Authenticate: Bearer` is set)
 *   forbidden       403   a valid credential used outside its scope (an embed session of one
 *                         tenant naming another tenant: the credential, not a record, is wrong)
 *   not_found       404   unknown path, unknown id, another tenant's id (never 403)
 *   method_not_allowed 405  another method than GET on a read-only path (`Allow` is set)
 *   not_acceptable 406   an `Accept` the endpoint cannot serve (exports: ndjson, csv, parquet)
 *   archived        409   a submission to an archived activity (or one under archived content):
 *                         the state of the content, not the request, is the problem (issue #16)
 *   verdict_pending 409   an appeal of a result whose latest submission has no verdict yet (issue #21)
 *   appeal_open     409   an appeal of a result that already has an open appeal (issue #21)
 *   idempotency_key_reused 422  an `Idempotency-Key` sent again with another request body
 *   rate_limited    429   too many requests (`Retry-After` in seconds is always set)
 *   internal_error  500   anything unexpected; the detail is logged, never sent
 *   unavailable     503   the database cannot be reached or is too slow now (issue #11): an
 *                         outage, not a fault of the request; `Retry-After` in seconds is set
 *
 * `message` is public text for the API user; `internal` is detail for the log only.
 * Codes are never renamed or reused.
 */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { DB_RETRY_AFTER_SECONDS, isBadInput, isDbUnavailable } from '../db/errors.ts';

export const API_ERROR_STATUS = {
  invalid_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  not_acceptable: 406,
  archived: 409,
  verdict_pending: 409,
  appeal_open: 409,
  idempotency_key_reused: 422,
  rate_limited: 429,
  internal_error: 500,
  unavailable: 503,
} as const;

export type ApiErrorCode = keyof typeof API_ERROR_STATUS;

/** The one error type of the `/v1` surfaces; thrown anywhere, rendered by `apiErrorHandler`. */
export class ApiError extends Error {
  constructor(
    readonly code: ApiErrorCode,
    message: string,
    /** Detail for the log, never sent to the client. */
    readonly internal?: unknown,
    /** Seconds for `Retry-After` (429, 503). */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
    this.name = 'ApiError';
  }

  /** The HTTP status of `code`. */
  get status(): number {
    return API_ERROR_STATUS[this.code];
  }
}

/** The body of every error of these surfaces; `requestId` is the request's id (`req.id`). */
export function errorBody(code: ApiErrorCode, message: string, requestId?: string): { error: { code: ApiErrorCode; message: string; request_id?: string } } {
  return { error: requestId === undefined ? { code, message } : { code, message, request_id: requestId } };
}

/** Send an ApiError: status from the map, the fixed body with the request id, `WWW-Authenticate` on 401. */
/**
 * Headers that describe a body other than the error's: staged for a streamed answer (an export)
 * that failed before its first byte, they must not go out with the error's JSON.
 */
const REPRESENTATION_HEADERS = ['content-encoding', 'content-disposition', 'svc-consistent-through'];

export function sendApiError(reply: FastifyReply, err: ApiError): FastifyReply {
  for (const name of REPRESENTATION_HEADERS) {
    reply.removeHeader(name);
    if (!reply.raw.headersSent) reply.raw.removeHeader(name);
  }
  if (err.code === 'unauthorized') reply.header('www-authenticate', 'Bearer');
  if (err.retryAfterSeconds !== undefined) reply.header('retry-after', String(Math.max(1, Math.ceil(err.retryAfterSeconds))));
  return reply
    .code(err.status)
    .type('application/json; charset=utf-8')
    .send(errorBody(err.code, err.message, String(reply.request.id)));
}

/** A framework 4xx as client-facing text (never the framework's internal wording). */
function frameworkMessage(err: FastifyError): string {
  if (err.statusCode === 413) return 'the request body is too large';
  if (err.statusCode === 415) return 'the request body must be JSON (Content-Type: application/json)';
  if (err.code === 'FST_ERR_CTP_EMPTY_JSON_BODY') return 'the request body is empty';
  if (err.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || err instanceof SyntaxError) return 'the request body is not valid JSON';
  return 'the request is malformed';
}

/**
 * Map anything thrown to an ApiError: zod schema violations name the field; values the
 * database refuses (db/errors.ts) are `invalid_request`; Fastify's own
 * client errors become `invalid_request` (401/404/429 keep their meaning); an unavailable
 * database is `unavailable` (503, `Retry-After`); everything else, other database errors
 * included, becomes `internal_error` with a fixed message.
 */
export function toApiError(err: unknown): ApiError {
  if (err instanceof ApiError) return err;
  if (isDbUnavailable(err)) {
    return new ApiError('unavailable', 'the service is temporarily unavailable; retry after Retry-After seconds', err, DB_RETRY_AFTER_SECONDS);
  }
  const e = err as FastifyError;
  if (hasZodFastifySchemaValidationErrors(e)) {
    const issue = e.validation[0];
    const path = (issue?.instancePath ?? '').replace(/^\//, '').replace(/\//g, '.');
    const message = issue?.message ?? 'invalid value';
    return new ApiError('invalid_request', path ? `${path}: ${message}` : message, err);
  }
  if (isBadInput(err)) {
    return new ApiError('invalid_request', 'the request holds a value that cannot be stored (for example a NUL character)', err);
  }
  const status = e?.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    if (status === 401) return new ApiError('unauthorized', 'a valid credential is required', err);
    if (status === 404) return new ApiError('not_found', 'not found', err);
    if (status === 429) return new ApiError('rate_limited', 'too many requests', err);
    return new ApiError('invalid_request', frameworkMessage(e), err);
  }
  return new ApiError('internal_error', 'internal error', err);
}

/**
 * A Fastify error handler for a `/v1` surface: logs 5xx with detail (an outage at warn, without
 * the stack: one cause, many requests), and 4xx detail at info.
 */
export function apiErrorHandler(surface: string) {
  return (err: unknown, req: FastifyRequest, reply: FastifyReply): FastifyReply => {
    const e = toApiError(err);
    if (e.code === 'unavailable')
      req.log.warn({ reason: String((e.internal as { cause?: unknown })?.cause ?? e.internal) }, `${surface}: database unavailable`);
    else if (e.status >= 500) req.log.error({ err: e.internal ?? err }, `${surface}: unexpected error`);
    else if (e.internal !== undefined) req.log.info({ reason: e.internal, code: e.code }, `${surface}: client error`);
    return sendApiError(reply, e);
  };
}
