/**
 * pg-boss on our `Db`: its `db` adapter (`bossDb`) and the install of its schema, queues and
 * schedules at start, one process at a time (`installQueues`). See index.ts for the design.
 */
import type PgBoss from 'pg-boss';
import type { Db, Queryable } from '../db/index.ts';

/** Namespace of the advisory lock under which processes install pg-boss and the queues (key 1). */
const INSTALL_LOCK = 7312;

/** JS values → what both drivers bind: undefined → null, plain objects → JSON text. */
function bindable(value: unknown): unknown {
  if (value === undefined) return null;
  if (value !== null && typeof value === 'object' && !Array.isArray(value) && !(value instanceof Date) && !Buffer.isBuffer(value)) {
    return JSON.stringify(value);
  }
  return value;
}

/** pg-boss's `db` option: one method running SQL with positional parameters. */
export interface BossDb {
  executeSql(text: string, values?: unknown[]): Promise<{ rows: unknown[] }>;
}

/**
 * pg-boss's `db` adapter over a `Queryable`: statements with parameters go to `query`; scripts
 * (pg-boss's `BEGIN; …; COMMIT;` blocks: schema install, migrations, maintenance) run in a
 * transaction of `db` (required for them), so a failing one rolls back cleanly on either backend. Pass the caller's
 * transaction as `q` to make a job part of it (`send`/`insert`/`complete` with `{ db }`).
 */
export function bossDb(q: Queryable, db?: Db): BossDb {
  return {
    async executeSql(text, values) {
      if ((!values || values.length === 0) && /^\s*BEGIN\s*;/i.test(text)) {
        if (!db) throw new Error('jobs: a pg-boss script needs the database, not a transaction');
        await db.transaction((tx) => tx.exec(text));
        return { rows: [] };
      }
      return { rows: await q.query(text, (values ?? []).map(bindable)) };
    },
  };
}

/** A queue to create at start (pg-boss `createQueue` options), and its cron schedule if any. */
export interface QueueInstall {
  name: string;
  options?: Omit<PgBoss.Queue, 'name'>;
  schedule?: { cron: string; data?: object; tz?: string };
}

/**
 * Start `boss` (installing pg-boss's schema on first start), create each queue unless it exists and
 * put each schedule in place (or remove one no longer declared), one process at a time.
 * Concurrently, two processes fail: pg-boss's `create_queue` deadlocks (one's partition and
 * foreign-key DDL waits for the other's pending insert of the same queue row, which waits for the
 * first), and its schema install, though under pg-boss's own advisory lock, can still run
 * `CREATE SCHEMA IF NOT EXISTS` on a stale catalog cache (taking an advisory lock does not process
 * catalog invalidations) and hit a duplicate key. So processes on PostgreSQL take turns under an
 * advisory lock held in a transaction of their own, while pg-boss works in fresh transactions on
 * other connections of the pool (hence SVC_DB_POOL_SIZE ≥ 2). An embedded database has one
 * process: no lock. A queue that exists keeps the options it was created with.
 */
export async function installQueues(boss: PgBoss, db: Db, queues: QueueInstall[]): Promise<void> {
  const run = async () => {
    await boss.start();
    for (const q of queues) {
      if (!(await boss.getQueue(q.name))) await boss.createQueue(q.name, { name: q.name, policy: 'standard', ...q.options });
      if (q.schedule) await boss.schedule(q.name, q.schedule.cron, q.schedule.data ?? {}, { tz: q.schedule.tz ?? 'UTC' });
      else await boss.unschedule(q.name);
    }
  };
  if (db.kind !== 'postgres') return run();
  await db.transaction(async (tx) => {
    await tx.query('select pg_advisory_xact_lock($1, $2)', [INSTALL_LOCK, 1]);
    await run();
  });
}
