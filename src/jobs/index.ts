/**
 * The job queue of the service: durable jobs in PostgreSQL through pg-boss (v10), on both backends,
 * one pg-boss per server process (DESIGN §9 "the job queue").
 *
 * pg-boss runs on our `Db` through its `db: {executeSql(text, values)}` adapter (`bossDb`,
 * install.ts), so it needs no connection of its own and works on PGlite (one connection, one
 * process) as on a PostgreSQL pool. It installs its own schema (`pgboss`) on first start;
 * processes starting together take turns installing it and creating the queues (`installQueues`).
 *
 * Declaring a queue. A surface declares its queue once, at module level:
 *
 *   export const scores = defineQueue<{ result_id: string }>({
 *     name: 'lti-scores',                       // pg-boss queue name, unique
 *     handler: async (job, { deps, log, signal }) => { … },   // runs in EVERY server process
 *     concurrency: 2,                           // loops per process (default 1)
 *     options: { retryLimit: 10, retryDelay: 30, retryBackoff: true, expireInSeconds: 300 },
 *     schedule: { cron: '0 * * * *' },          // optional: a job at each cron tick (UTC)
 *   });
 *
 * and puts jobs on it inside the transaction that makes them necessary:
 *
 *   await enqueue(tx, 'lti-scores', { result_id }, { singletonKey: result_id });
 *   // or scores.enqueue(tx, { result_id })
 *
 * A job and the rows that call for it exist together or not at all (pg-boss `send` with the `db`
 * option bound to the caller's transaction). `enqueue` returns the job id, or null when the
 * queue's policy refused a duplicate (`singleton`/`stately` policies, an `id` or `singletonKey`
 * already queued).
 *
 * Running. The app makes one `Jobs` per process (src/app.ts), starts it when ready and stops it on
 * close. `start` installs pg-boss's schema, every declared queue (options apply when the queue is
 * first created) and schedules, then works each queue with a handler through pg-boss `work`
 * (`concurrency` loops polling every `pollSeconds`, default 2; a job runs in one place:
 * `FOR UPDATE SKIP LOCKED`). The handler's promise completes the job; a throw fails it, and
 * pg-boss retries it as the queue's options say. A run lasts at most the job's `expireInSeconds`
 * (queue option; pg-boss's default 15 minutes); a job whose process died runs again after it
 * expires (maintenance every `maintenanceIntervalSeconds`). `stop` aborts `signal`, waits for
 * the runs to end (at most `stopTimeoutMs`), and stops pg-boss (the database stays open).
 *
 * Schedules. pg-boss's cron (minute resolution, `tz` default UTC): every process checks the
 * schedules, one at a time across processes (pg-boss's cron lock), and a tick makes one job
 * (singleton per minute). For "one run at a time across processes" give the queue
 * `policy: 'stately'` (one queued, one running) or `'singleton'` (one running).
 *
 * The grading queue (src/embed/queue/) runs on the same pg-boss with loops of its own (leases it
 * renews, priorities, hand-back on shutdown): it declares its queue on the process's `Jobs`
 * (`declare`, no handler) and uses `boss` directly.
 */
import PgBoss from 'pg-boss';
import type { FastifyBaseLogger } from 'fastify';
import type { Db, Queryable } from '../db/index.ts';
import type { Deps } from '../deps.ts';
import { bossDb, installQueues, type QueueInstall } from './install.ts';

export { bossDb, installQueues, type BossDb, type QueueInstall } from './install.ts';

/** pg-boss queue options, applied when the queue is first created. */
export type QueueOptions = Omit<PgBoss.Queue, 'name'>;

/** What a handler gets besides its job: the process's deps, a logger, and a signal aborted at shutdown. */
export interface JobContext {
  deps: Deps;
  log: FastifyBaseLogger;
  signal: AbortSignal;
}

/** One job: pg-boss's id, the queue's name, the data it was enqueued with. */
export interface Job<T> {
  id: string;
  name: string;
  data: T;
}

/** A queue's declaration. */
export interface QueueDefinition<T extends object = object> {
  /** pg-boss queue name: letters, digits, `-`, `_`, `.`, `/`; unique in the service. */
  name: string;
  /** Runs each job, in every server process. Resolve to complete it; throw to fail it (then retried per `options`). Without one, the queue is only created (its owner works it). */
  handler?: (job: Job<T>, ctx: JobContext) => Promise<unknown>;
  /** Loops working the queue in each process (default 1). */
  concurrency?: number;
  /** Seconds between looks at an empty queue (default 2, at least 0.5). */
  pollSeconds?: number;
  /** pg-boss queue options (policy, retries, expiry, retention, dead letter). */
  options?: QueueOptions;
  /** A job on every tick of `cron` (5 fields, minute resolution), with `data`, in `tz` (default UTC). */
  schedule?: { cron: string; data?: T; tz?: string };
}

/** A declared queue: its name, and `enqueue` bound to it. */
export interface QueueHandle<T extends object> {
  readonly name: string;
  enqueue(tx: Queryable, data: T, options?: EnqueueOptions): Promise<string | null>;
}

/** pg-boss `send` options for one job (id, priority, startAfter, singletonKey, retries, expiry…), without `db`. */
export type EnqueueOptions = Omit<PgBoss.SendOptions, 'db'>;

/** A queue of any job type (the registry holds queues of different types; each handler gets its own queue's jobs). */
// biome-ignore lint/suspicious/noExplicitAny: the job type varies per queue; QueueDefinition<T> is invariant in T (handler and schedule data), so no other type holds them all
type AnyQueueDefinition = QueueDefinition<any>;

const definitions = new Map<string, AnyQueueDefinition>();
/** Names declared on some `Jobs` with `declare` (the grading queue), so `enqueue` knows them. */
const declaredByInstances = new Set<string>();

/**
 * Declare queue `def.name` for every process of the service (module level, at import). Declaring
 * a name twice throws. Returns a handle whose `enqueue` puts jobs on it.
 */
export function defineQueue<T extends object>(def: QueueDefinition<T>): QueueHandle<T> {
  if (!/^[\w./-]+$/.test(def.name)) throw new Error(`job queue name ${JSON.stringify(def.name)}: letters, digits, - _ . / only`);
  if (definitions.has(def.name) && definitions.get(def.name) !== def) throw new Error(`job queue ${def.name} is declared twice`);
  definitions.set(def.name, def);
  return { name: def.name, enqueue: (tx, data, options) => enqueue(tx, def.name, data, options) };
}

/** The queues declared with `defineQueue`, by name. */
export const definedQueues = (): ReadonlyMap<string, AnyQueueDefinition> => definitions;

/**
 * pg-boss used only to write jobs through a caller's transaction: `send` with `{ db }` runs one
 * INSERT on that `db` and needs no started instance or connection of its own.
 */
const writer = new PgBoss({ db: { executeSql: () => Promise.reject(new Error('jobs: enqueue needs a transaction')) } });

/**
 * Put a job on queue `name` (declared with `defineQueue`, or a queue a `Jobs` declares) with
 * `data`, in the caller's transaction `tx`: committed with it or not at all. Returns the job's id,
 * or null when the queue's policy or an `id`/`singletonKey` already queued refused it. Throws on
 * a queue never declared in this process.
 */
export async function enqueue<T extends object>(tx: Queryable, name: string, data: T, options: EnqueueOptions = {}): Promise<string | null> {
  if (!definitions.has(name) && !declaredByInstances.has(name)) throw new Error(`job queue ${name} is not declared`);
  return writer.send(name, data, { ...options, db: bossDb(tx) });
}

export interface JobsOptions {
  /** Seconds between pg-boss maintenance runs (expiring jobs of dead processes, archiving). Default 60. */
  maintenanceIntervalSeconds?: number;
  /** The queues to work (default: every `defineQueue` declaration). */
  queues?: AnyQueueDefinition[];
  /** Longest `stop` waits for running handlers, in milliseconds (default 10 000). */
  stopTimeoutMs?: number;
}

/** The job queue of one server process: pg-boss on `deps.db`, every declared queue worked here. */
export class Jobs {
  /** This process's pg-boss (the grading queue uses it directly). */
  readonly boss: PgBoss;
  private readonly extra: QueueInstall[] = [];
  private starting: Promise<void> | undefined;
  private started = false;
  private stopping = false;
  private readonly abort = new AbortController();
  private readonly running = new Set<Promise<unknown>>();

  constructor(
    private readonly deps: Deps,
    private readonly log: FastifyBaseLogger,
    private readonly options: JobsOptions = {},
  ) {
    this.boss = new PgBoss({
      db: bossDb(deps.db, deps.db),
      supervise: true,
      schedule: true,
      maintenanceIntervalSeconds: Math.max(1, Math.floor(options.maintenanceIntervalSeconds ?? 60)),
    });
    this.boss.on('error', (err: Error) => log.warn({ err }, 'jobs: pg-boss error'));
  }

  /** True from a completed `start()` until `stop()`. */
  get isRunning(): boolean {
    return this.started && !this.stopping;
  }

  /** The database pg-boss runs on. */
  get db(): Db {
    return this.deps.db;
  }

  /** Declare a queue this process creates but works itself (no handler here): before `start`. */
  declare(queue: QueueInstall): void {
    if (this.starting) throw new Error(`jobs: queue ${queue.name} declared after start`);
    this.extra.push(queue);
    declaredByInstances.add(queue.name);
  }

  /** Install pg-boss, the queues and schedules, and work the queues with handlers. Idempotent: callers may all await it. */
  start(): Promise<void> {
    this.starting ??= this.doStart();
    return this.starting;
  }

  private async doStart(): Promise<void> {
    const queues = this.options.queues ?? [...definitions.values()];
    await installQueues(this.boss, this.deps.db, [...this.extra, ...queues.map((q) => ({ name: q.name, options: q.options, schedule: q.schedule }))]);
    for (const q of queues) {
      if (!q.handler) continue;
      const handler = q.handler;
      for (let i = 0; i < Math.max(1, q.concurrency ?? 1); i++) {
        await this.boss.work(q.name, { batchSize: 1, pollingIntervalSeconds: Math.max(0.5, q.pollSeconds ?? 2) }, async ([job]) => {
          if (!job) return;
          const run = handler({ id: job.id, name: job.name, data: job.data }, { deps: this.deps, log: this.log, signal: this.abort.signal });
          this.running.add(run);
          try {
            return await run;
          } catch (err) {
            if (!this.abort.signal.aborted) this.log.warn({ err, queue: q.name, jobId: job.id }, 'jobs: a run failed');
            throw err;
          } finally {
            this.running.delete(run);
          }
        });
      }
    }
    this.started = true;
  }

  /** Abort running handlers, wait for them (at most `stopTimeoutMs`), stop pg-boss. The database stays open. */
  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    this.abort.abort();
    await this.starting?.catch(() => {});
    if (this.running.size) {
      const timeout = new Promise((resolve) => setTimeout(resolve, this.options.stopTimeoutMs ?? 10_000).unref());
      await Promise.race([Promise.allSettled([...this.running]), timeout]);
    }
    if (this.starting) await this.boss.stop({ graceful: false, close: false, wait: true }).catch(() => {});
  }
}
