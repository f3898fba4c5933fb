/**
 * Running a transaction again when PostgreSQL asks for it: a transaction aborted as a deadlock
 * victim (SQLSTATE 40P01) or for a serialization failure (40001) was rolled back whole, and the
 * documented remedy is to run it again (PostgreSQL manual, "Serialization Failure Handling").
 * Used by every authoring tool call (src/authoring/tool.ts `invoke`) and by the embed judge's
 * submission (src/embed/judge.ts), whose transactions take program order locks that concurrent
 * moves also take (migrations 0030, 0110, 0131).
 */
import pRetry from 'p-retry';
import { sqlState } from './errors.ts';

/** SQLSTATEs after which the whole transaction may simply run again. */
const RERUN = new Set(['40P01', '40001']);

/**
 * How many times such a transaction runs again before its error is the caller's. Two were seen to
 * run out once in ~900 concurrent mixed moves (an outside review); four, with backoff up to
 * 100 ms, make that vanishingly rare, at a cost only a conflict pays.
 */
export const RERUNS = 4;

/**
 * `run()` (one whole transaction), and again — `RERUNS` times at most, after 5–100 ms growing
 * (p-retry, randomized) — while it fails with 40P01 or 40001. Any other error, or the last
 * conflict, is thrown as it came. `run` must have no effect outside its transaction that a rerun
 * would repeat harmfully.
 */
export function rerunOnConflict<T>(run: () => Promise<T>): Promise<T> {
  return pRetry(run, {
    retries: RERUNS,
    minTimeout: 5,
    maxTimeout: 100,
    randomize: true,
    shouldRetry: ({ error }) => RERUN.has(sqlState(error) ?? ''),
  });
}
