/**
 * The grading queue's name and the one set of job options every job is created with (the queue's
 * defaults, `send` and the sweep's `insert`). pg-boss itself, its `db` adapter and the install of
 * the queue at start are the process's job queue (src/jobs). See index.ts for the design.
 */

export const GRADING_QUEUE = 'embed-grading';
/** Retries of a job whose runs keep failing: practically unlimited ("graded when the model is back"). */
export const RETRY_LIMIT = 1_000_000;
export const RETENTION_DAYS = 3650;
/** Seconds before an expired job (its process died) runs again: pg-boss's `retryDelay`, doubled with jitter per retry. */
export const EXPIRED_RETRY_DELAY = 5;
/**
 * The options of every grading job (the queue's defaults, `send` and the sweep's `insert`): retried
 * practically forever with backoff, leased for `leaseSeconds`.
 */
export function jobOptions(leaseSeconds: number) {
  return { retryLimit: RETRY_LIMIT, retryDelay: EXPIRED_RETRY_DELAY, retryBackoff: true, expireInSeconds: leaseSeconds };
}
