/**
 * The grading queue's pg-boss: its `db` adapter over our `Db`, the one set of job options every
 * job is created with, and the install (schema + queue) at start. See index.ts for the design.
 */
import type PgBoss from 'pg-boss';
import type { Db, Queryable } from '../../db/index.ts';

export const GRADING_QUEUE = 'embed-grading';
/** Retries of a job whose runs keep failing: practically unlimited ("graded when the model is back"). */
export const RETRY_LIMIT = 1_000_000;
export const RETENTION_DAYS = 3650;
/** Seconds before an expired job (its process died) runs again: pg-boss's `retryDelay`, doubled with jitter per retry. */
export const EXPIRED_RETRY_DELAY = 5;
/** Namespace of the advisory lock under which processes install pg-boss and the queue (key 1). */
const INSTALL_LOCK = 7312;

/**
 * The options of every grading job (the queue's defaults, `send` and the sweep's `insert`): retried
 * practically forever with backoff, leased for `leaseSeconds`.
 */
export function jobOptions(leaseSeconds: number) {
  return { retryLimit: RETRY_LIMIT, retryDelay: EXPIRED_RETRY_DELAY, retryBackoff: true, expireInSeconds: leaseSeconds };
}

/** JS values → what both drivers bind: undefined → null, plain objects → JSON text. */
function bindable(value: unknown): unknown {
  if (value === undefined) return null;
  if (value !== null && typeof value === 'object' && !Array.isArray(value) && !(value instanceof Date) && !Buffer.isBuffer(value)) {
    return JSON.stringify(value);
  }
  return value;
}

/**
 * pg-boss's `db` adapter over a `Queryable`: statements with parameters go to `query`; scripts
 * (pg-boss's `BEGIN; …; COMMIT;` blocks) run in a transaction of `db` (see index.ts).
 */
export function bossDb(q: Queryable, db: Db): { executeSql(text: string, values?: unknown[]): Promise<{ rows: unknown[] }> } {
  return {
    async executeSql(text, values) {
      if ((!values || values.length === 0) && /^\s*BEGIN\s*;/i.test(text)) {
        await db.transaction((tx) => tx.exec(text));
        return { rows: [] };
      }
      return { rows: await q.query(text, (values ?? []).map(bindable)) };
    },
  };
}

/**
 * Start `boss` (installing pg-boss's schema on first start) and create the grading queue unless
 * it exists, one process at a time. Concurrently, two processes fail: pg-boss's `create_queue`
 * deadlocks (one's partition and foreign-key DDL waits for the other's pending insert of the same
 * queue row, which waits for the first), and its schema install, though under pg-boss's own
 * advisory lock, can still run `CREATE SCHEMA IF NOT EXISTS` on a stale catalog cache (taking an
 * advisory lock does not process catalog invalidations) and hit a duplicate key. So processes on
 * PostgreSQL take turns under an advisory lock held in a transaction of their own, while pg-boss
 * works in fresh transactions on other connections of the pool (hence SVC_DB_POOL_SIZE ≥ 2). An
 * embedded database has one process: no lock.
 */
export async function installQueue(boss: PgBoss, db: Db, leaseSeconds: number): Promise<void> {
  const run = async () => {
    await boss.start();
    if (await boss.getQueue(GRADING_QUEUE)) return;
    await boss.createQueue(GRADING_QUEUE, { name: GRADING_QUEUE, policy: 'standard', ...jobOptions(leaseSeconds) });
  };
  if (db.kind !== 'postgres') return run();
  await db.transaction(async (tx) => {
    await tx.query('select pg_advisory_xact_lock($1, $2)', [INSTALL_LOCK, 1]);
    await run();
  });
}
