/**
 * Why a model call gave no verdict, in two families (model.ts's header, issue #10 "Outage vs.
 * ungradable"): transient failures are the model's (the submission waits and is tried again);
 * the others are this artifact's (after the bounded attempts it ends `not_gradable`).
 * `classify` maps what the `openai` client throws to a `GraderError`.
 */
import { APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';

/** Why a model call did not give a verdict (see the header for the two families). */
export type GraderFailure = 'timeout' | 'unreachable' | 'model_error' | 'rate_limited' | 'refused' | 'invalid_output' | 'model_rejected';

/** Failures that are the model's (outage, overload, configuration), not the artifact's. */
const TRANSIENT: ReadonlySet<GraderFailure> = new Set(['timeout', 'unreachable', 'model_error', 'rate_limited']);

export class GraderError extends Error {
  constructor(
    /** Stable category, stored in the artifact's verification and the call ledger. */
    readonly reason: GraderFailure,
    message: string,
    /** Seconds the model asked us to wait (`Retry-After` / `retry-after-ms` on a 429 or 503), when it said. */
    readonly retryAfterSeconds?: number,
    /** The HTTP status of the model's answer, when there was one. */
    readonly httpStatus?: number,
  ) {
    super(message);
  }

  /** True when the model is at fault (the submission waits for it); false when this artifact cannot be graded. */
  get transient(): boolean {
    return TRANSIENT.has(this.reason);
  }
}

/** OpenAI error codes and messages that refuse a request for its content (this artifact), not for the service's sake. */
const CONTENT_REJECTION_CODES = new Set([
  'context_length_exceeded',
  'string_above_max_length',
  'content_filter',
  'content_policy_violation',
  'invalid_image',
  'invalid_image_format',
  'image_parse_error',
  'invalid_image_url',
]);
const CONTENT_REJECTION_TEXT =
  /context.length|maximum context|too many tokens|content (management )?polic|content filter|could not (process|read) (the )?image/i;

/** Seconds to wait from a response's `retry-after-ms` / `retry-after` (seconds or an HTTP date), if any. */
export function retryAfterSeconds(headers: { get(name: string): string | null } | undefined, now = Date.now()): number | undefined {
  const ms = Number(headers?.get('retry-after-ms'));
  if (headers?.get('retry-after-ms') && Number.isFinite(ms) && ms >= 0) return ms / 1000;
  const value = headers?.get('retry-after');
  if (!value) return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds;
  const date = Date.parse(value);
  return Number.isFinite(date) ? Math.max(0, (date - now) / 1000) : undefined;
}

/** Classify an error thrown by the `openai` client (anything not an `APIError` is a connection problem). */
export function classify(err: unknown, aborted: boolean): GraderError {
  if (err instanceof GraderError) return err;
  if (err instanceof APIConnectionTimeoutError || err instanceof APIUserAbortError || aborted) {
    return new GraderError('timeout', 'the model did not answer in time');
  }
  if (!(err instanceof APIError) || err.status === undefined) {
    return new GraderError('unreachable', `the model could not be reached: ${(err as Error).message}`.slice(0, 500));
  }
  const after = retryAfterSeconds(err.headers as { get(name: string): string | null } | undefined);
  if (err.status === 429) return new GraderError('rate_limited', 'the model is rate-limited', after, 429);
  const code = typeof err.code === 'string' ? err.code : '';
  if ([400, 413, 422].includes(err.status) && (CONTENT_REJECTION_CODES.has(code) || CONTENT_REJECTION_TEXT.test(err.message))) {
    return new GraderError('model_rejected', `the model refused the request: ${err.message}`.slice(0, 500), undefined, err.status);
  }
  return new GraderError('model_error', `the model call failed: ${err.message}`.slice(0, 500), after, err.status);
}
