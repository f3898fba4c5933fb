/**
 * Reads on a streaming read replica (issue #15, `DATABASE_READ_URL`, docs/scaling.md).
 *
 * A hot standby serves the same SQL read-only, a little behind the primary (its replay lag). Only
 * reads that may be that much behind go there — the results API and the learner reads — and only
 * through `fromReplica`, which sends the read to the primary instead when the replica cannot
 * answer it as well as the primary would:
 *
 * - the replica is unavailable (`DbUnavailableError`: down, refusing, a dropped connection — the
 *   service keeps answering from the primary, at the primary's cost);
 * - it has not replayed what the read needs yet: a statement function created by a newer version
 *   of the service (SQLSTATE 42883 undefined_function, src/results/queries.ts installs them on the
 *   primary at start-up), or a query cancelled by replay (40001, "conflict with recovery");
 * - the caller says the answer is stale (`stale.result` / `stale.error`): a feed page that would
 *   end before the cursor it continues, an object not there yet (404).
 *
 * Each such fallback is published on the diagnostics channel `REPLICA_FALLBACK_CHANNEL` as
 * `{reason}`; telemetry counts it in `svc_db_replica_fallbacks_total{reason}` (src/telemetry/metrics.ts
 * subscribes, so the database layer does not depend on telemetry): the service stays up on the
 * primary alone, and the metric is how an operator sees it doing so.
 * Everything else the replica throws is the caller's, as from the primary. Writes, API-key and
 * session checks (revocation must hold at once) never come here: they use `deps.db`.
 */
import { channel } from 'node:diagnostics_channel';
import { isDbUnavailable, sqlState } from './errors.ts';
import type { Db } from './types.ts';

/** The diagnostics channel (node:diagnostics_channel) a replica fallback is published on: `{reason}`. */
export const REPLICA_FALLBACK_CHANNEL = 'svc:db:replica-fallback';
const fallbackChannel = channel(REPLICA_FALLBACK_CHANNEL);

/** Why a replica read went to the primary. */
export type FallbackReason = 'unavailable' | 'behind' | 'stale';

/** SQLSTATEs of a replica that is behind the primary: undefined_function, serialization_failure. */
const BEHIND = new Set(['42883', '40001']);

/** When a replica's answer is not good enough and the primary should answer instead. */
export interface Staleness<T> {
  /** The replica's answer is behind what the caller already knows (e.g. a cursor). */
  result?: (value: T) => boolean;
  /** The replica threw what the primary may not (e.g. not found). */
  error?: (err: unknown) => boolean;
}

/**
 * Run `read` on the read replica `target.readDb` when there is one, otherwise (or when the replica
 * cannot serve it, see above) on the primary `target.db`. At most two runs; the primary's answer
 * or error is final.
 */
export async function fromReplica<T>(target: { db: Db; readDb?: Db }, read: (db: Db) => Promise<T>, stale: Staleness<T> = {}): Promise<T> {
  if (!target.readDb) return read(target.db);
  let value: T;
  try {
    value = await read(target.readDb);
  } catch (err) {
    const reason = isDbUnavailable(err) ? 'unavailable' : BEHIND.has(sqlState(err) ?? '') ? 'behind' : stale.error?.(err) ? 'stale' : undefined;
    if (reason === undefined) throw err;
    return onPrimary(target.db, read, reason);
  }
  return stale.result?.(value) ? onPrimary(target.db, read, 'stale') : value;
}

/** The primary's run of a replica read, published with why on `REPLICA_FALLBACK_CHANNEL`. */
function onPrimary<T>(db: Db, read: (db: Db) => Promise<T>, reason: FallbackReason): Promise<T> {
  fallbackChannel.publish({ reason } satisfies { reason: FallbackReason });
  return read(db);
}
