/**
 * The grading queue: a durable job per submitted artifact in PostgreSQL, through pg-boss (v10),
 * on both backends (issue #6 "Nothing lost").
 *
 * pg-boss runs on our `Db` through its `db: {executeSql(text, values)}` adapter (`bossDb`), so
 * it needs no connection of its own and works on PGlite (one connection, one process) as on a
 * PostgreSQL pool. Its multi-statement scripts (schema install, migrations, maintenance: each
 * `BEGIN; … COMMIT;` under an advisory lock) run inside one of our transactions, so a failing
 * one rolls back cleanly on either backend. pg-boss installs its own schema (`pgboss`) on first
 * start; processes starting together take turns installing it and creating the queue (`install`).
 *
 * Jobs. The job id is the artifact id. `enqueue` inserts the job in the caller's transaction,
 * the one that stores the submission: a submission and its job exist together or not at all.
 * Every job carries a short lease (`expireIn` = `leaseSeconds`, SVC_JUDGE_LEASE, default 30 s)
 * that its run renews every third of it while alive (`started_on` moved forward: pg-boss expires
 * an active job when `started_on + expire_in` has passed). A run whose process died stops
 * renewing; pg-boss's maintenance (every `leaseSeconds / 3`) then fails the job, which retries
 * after `EXPIRED_RETRY_DELAY` seconds (with backoff, so a run that keeps crashing backs off) —
 * within a minute of the death, not after the longest possible run. A run itself is bounded by
 * `maxRunSeconds` (reading, every attempt and backoff). Retries are practically unlimited
 * (`RETRY_LIMIT`). A run that must wait (the model down, the tenant's
 * budget spent) queues the next run after the delay the job chooses (`retryLater`: the job is
 * replaced, same id, priority 0); grade-job.ts bounds how long. Jobs are kept for `RETENTION_DAYS`.
 *
 * Workers. Only a process with a model (`SVC_JUDGE_*`) works the queue: `judgeConcurrency`
 * loops, each fetching one job at a time (pg-boss `fetch`: `FOR UPDATE SKIP LOCKED`, so a job
 * runs in one place), by priority, then oldest first: a submission whose request is waiting
 * has priority 1, retries and the backlog 0. Idle loops look again every `judgePollSeconds`, or at once when this process
 * enqueues (`kick`). The handler (grade-job.ts) completes or fails its job in the transaction
 * that records the outcome. On shutdown runs are aborted and their jobs released for another
 * process (cancel + resume: back to `created`, fetchable at once).
 *
 * Backlog sweep. At start and every few minutes a worker process re-enqueues every artifact
 * whose verification is still `pending` but that has no live job (a job archived after
 * retention, submissions stored before this queue existed), one sweeper at a time (advisory
 * lock). So "configured later" and "restart" both grade everything left pending.
 *
 * Waiting. `waitFor(artifactId, ms)` resolves with the outcome of a run of this process, or
 * undefined after `ms` (the judge then reads the artifact once more).
 */
import PgBoss from 'pg-boss';
import type { FastifyBaseLogger } from 'fastify';
import type { Db, Queryable } from '../db/index.ts';
import type { CriterionResult } from './verdict-view.ts';

export const GRADING_QUEUE = 'embed-grading';
/** Retries of a job whose runs keep failing: practically unlimited ("graded when the model is back"). */
export const RETRY_LIMIT = 1_000_000;
export const RETENTION_DAYS = 3650;
/** Seconds before an expired job (its process died) runs again: pg-boss's `retryDelay`, doubled with jitter per retry. */
export const EXPIRED_RETRY_DELAY = 5;
/** Namespace of the advisory lock of the backlog sweep. */
const SWEEP_LOCK = 7311;
/** Namespace of the advisory lock under which processes install pg-boss and the queue (key 1). */
const INSTALL_LOCK = 7312;
/** Artifacts re-enqueued per sweep. */
const SWEEP_BATCH = 500;

export interface GradingJobData {
  artifact_id: string;
  tenant_id: string;
}

export interface GradingJob {
  id: string;
  data: GradingJobData;
  /** The job's lease in seconds. */
  expireInSeconds: number;
}

/**
 * What became of a run, for a waiting request: a verdict (`graded`), an end without a verdict
 * (`final`: `not_gradable`, or `failed` with reason `model_unavailable`), still waiting
 * (`pending`: the model is down, the tenant's budget is spent, a review is required), or gone.
 */
export type JobOutcome =
  | { kind: 'graded'; status: 'passed' | 'failed'; score: number; feedback: string; criteria?: CriterionResult[] }
  | { kind: 'final'; status: 'failed' | 'not_gradable'; reason: string; feedback: string }
  | { kind: 'pending'; reason: string }
  | { kind: 'gone' };

/** Completes the job being run, or queues its next run, in the caller's transaction. */
export interface JobControl {
  complete(tx: Queryable, output?: Record<string, unknown>): Promise<void>;
  /** Run again after `delaySeconds` (grade-job.ts chooses it), behind submissions whose requests are waiting (priority 0). */
  retryLater(tx: Queryable, delaySeconds: number): Promise<void>;
}

export type JobHandler = (job: GradingJob, control: JobControl, signal: AbortSignal) => Promise<JobOutcome>;

export interface QueueOptions {
  /** Lease of a job in seconds, renewed every third of it while the run is alive. */
  leaseSeconds: number;
  /** Longest a run may take, in seconds; then it is aborted. */
  maxRunSeconds: number;
  concurrency: number;
  pollSeconds: number;
  /** Works the queue when set (a process with a model). */
  handler?: JobHandler;
  log: FastifyBaseLogger;
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
 * (pg-boss's `BEGIN; …; COMMIT;` blocks) run in a transaction of `db` (see the header).
 */
export function bossDb(q: Queryable, db: Db): { executeSql(text: string, values?: unknown[]): Promise<{ rows: any[] }> } {
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

export class GradingQueue {
  private readonly boss: PgBoss;
  private started = false;
  private stopping = false;
  private readonly loops: Promise<void>[] = [];
  private readonly sleepers: (() => void)[] = [];
  private kicks = 0;
  private readonly running = new Map<string, AbortController>();
  private readonly waiters = new Map<string, Set<(o: JobOutcome) => void>>();
  private sweepTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly db: Db,
    private readonly options: QueueOptions,
  ) {
    this.boss = new PgBoss({
      db: bossDb(db, db),
      schedule: false,
      supervise: true,
      // Maintenance puts back the jobs of killed processes: look three times per lease.
      maintenanceIntervalSeconds: Math.max(1, Math.floor(options.leaseSeconds / 3)),
    });
    this.boss.on('error', (err: Error) => options.log.warn({ err }, 'embed queue: pg-boss error'));
  }

  /** True when this process works the queue. */
  get working(): boolean {
    return Boolean(this.options.handler);
  }

  /** True from a completed `start()` until `stop()` (readiness, src/http/probes.ts). */
  get isRunning(): boolean {
    return this.started && !this.stopping;
  }

  /** Install or check pg-boss's schema, create the queue, start the workers (if any) and the sweep. */
  async start(): Promise<void> {
    await this.install();
    this.started = true;
    if (!this.options.handler) return;
    await this.sweep().catch((err) => this.options.log.warn({ err }, 'embed queue: backlog sweep failed'));
    for (let i = 0; i < this.options.concurrency; i++) this.loops.push(this.loop());
    const every = Math.max(60, this.options.leaseSeconds, this.options.pollSeconds * 10) * 1000;
    this.sweepTimer = setInterval(() => {
      void this.sweep().catch((err) => this.options.log.warn({ err }, 'embed queue: backlog sweep failed'));
    }, every);
    this.sweepTimer.unref();
  }

  /**
   * Install pg-boss's schema (first start) and create the grading queue unless it exists, one
   * process at a time. Concurrently, two processes fail: pg-boss's `create_queue` deadlocks (one's
   * partition and foreign-key DDL waits for the other's pending insert of the same queue row,
   * which waits for the first), and its schema install, though under pg-boss's own advisory lock,
   * can still run `CREATE SCHEMA IF NOT EXISTS` on a stale catalog cache (taking an advisory lock
   * does not process catalog invalidations) and hit a duplicate key. So processes on PostgreSQL
   * take turns under an advisory lock held in a transaction of their own, while pg-boss works in
   * fresh transactions on other connections of the pool (hence SVC_DB_POOL_SIZE ≥ 2). An embedded
   * database has one process: no lock.
   */
  private async install(): Promise<void> {
    const run = async () => {
      await this.boss.start();
      if (await this.boss.getQueue(GRADING_QUEUE)) return;
      await this.boss.createQueue(GRADING_QUEUE, {
        name: GRADING_QUEUE,
        policy: 'standard',
        retryLimit: RETRY_LIMIT,
        retryDelay: EXPIRED_RETRY_DELAY,
        retryBackoff: true,
        expireInSeconds: this.options.leaseSeconds,
      });
    };
    if (this.db.kind !== 'postgres') return run();
    await this.db.transaction(async (tx) => {
      await tx.query('select pg_advisory_xact_lock($1, $2)', [INSTALL_LOCK, 1]);
      await run();
    });
  }

  /** Stop: no new runs; abort and release running ones; stop pg-boss (the database stays open). */
  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    clearInterval(this.sweepTimer);
    for (const wake of this.sleepers.splice(0)) wake();
    for (const ctl of this.running.values()) ctl.abort();
    await Promise.allSettled(this.loops);
    for (const set of this.waiters.values()) for (const w of set) w({ kind: 'pending', reason: 'shutting down' });
    this.waiters.clear();
    if (this.started) await this.boss.stop({ graceful: false, close: false, wait: true }).catch(() => {});
  }

  /**
   * Enqueue the grading of artifact `data.artifact_id` in transaction `tx` (job id = artifact
   * id). `priority` 1 for a submission whose request waits, 0 for the backlog.
   */
  async enqueue(tx: Queryable, data: GradingJobData, priority = 1): Promise<void> {
    await this.send(tx, data, { priority });
  }

  private async send(tx: Queryable, data: GradingJobData, options: { priority: number; startAfter?: number }): Promise<void> {
    await this.boss.send(GRADING_QUEUE, data, {
      id: data.artifact_id,
      priority: options.priority,
      ...(options.startAfter !== undefined && { startAfter: options.startAfter }),
      db: bossDb(tx, this.db),
      retryLimit: RETRY_LIMIT,
      retryDelay: EXPIRED_RETRY_DELAY,
      retryBackoff: true,
      expireInSeconds: this.options.leaseSeconds,
      retentionDays: RETENTION_DAYS,
    } as PgBoss.SendOptions);
  }

  /** Wake an idle worker of this process (a job was just enqueued). */
  kick(): void {
    const wake = this.sleepers.shift();
    if (wake) wake();
    else this.kicks = Math.min(this.kicks + 1, this.options.concurrency);
  }

  /** The outcome of this process's run of `artifactId`, or undefined after `ms` milliseconds. */
  waitFor(artifactId: string, ms: number): Promise<JobOutcome | undefined> {
    if (ms <= 0 || this.stopping) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      let set = this.waiters.get(artifactId);
      if (!set) this.waiters.set(artifactId, (set = new Set()));
      const done = (o: JobOutcome | undefined) => {
        clearTimeout(timer);
        set!.delete(waiter);
        if (!set!.size) this.waiters.delete(artifactId);
        resolve(o);
      };
      const waiter = (o: JobOutcome) => done(o);
      const timer = setTimeout(() => done(undefined), ms);
      set.add(waiter);
    });
  }

  private notify(artifactId: string, outcome: JobOutcome) {
    for (const w of [...(this.waiters.get(artifactId) ?? [])]) w(outcome);
  }

  /** Sleep until kicked, stopped, or `pollSeconds` passed. */
  private sleep(): Promise<void> {
    if (this.kicks > 0) {
      this.kicks--;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const wake = () => {
        clearTimeout(timer);
        const i = this.sleepers.indexOf(wake);
        if (i >= 0) this.sleepers.splice(i, 1);
        resolve();
      };
      const timer = setTimeout(wake, this.options.pollSeconds * 1000);
      this.sleepers.push(wake);
    });
  }

  private async loop(): Promise<void> {
    while (!this.stopping) {
      let job: GradingJob | undefined;
      try {
        [job] = (await this.boss.fetch(GRADING_QUEUE, { batchSize: 1, priority: true })) as unknown as GradingJob[];
      } catch (err) {
        this.options.log.warn({ err }, 'embed queue: fetch failed');
      }
      if (this.stopping) {
        if (job) await this.release(job.id);
        break;
      }
      if (!job) {
        await this.sleep();
        continue;
      }
      await this.run(job);
    }
  }

  /**
   * Renew `job`'s lease every third of it until `signal` aborts; if the job is no longer ours
   * (expired and taken back), abort the run through `ctl`.
   */
  private renewLease(job: GradingJob, ctl: AbortController, signal: AbortSignal): void {
    const everyMs = Math.max(1, (Number(job.expireInSeconds) || this.options.leaseSeconds) / 3) * 1000;
    const timer = setInterval(() => {
      void this.db
        .query<{ id: string }>(`update pgboss.job set started_on = now() where name = $1 and id = $2 and state = 'active' returning id`, [GRADING_QUEUE, job.id])
        .then((rows) => {
          if (!rows.length && !signal.aborted) {
            this.options.log.warn({ artifactId: job.data?.artifact_id }, 'embed queue: lost the lease of a running job; aborting the run');
            ctl.abort();
          }
        })
        .catch((err) => this.options.log.warn({ err }, 'embed queue: lease renewal failed'));
    }, everyMs);
    timer.unref();
    signal.addEventListener('abort', () => clearInterval(timer), { once: true });
  }

  /** One run of `job` by the handler, its lease renewed while it lasts, bounded by `maxRunSeconds`. */
  private async run(job: GradingJob): Promise<void> {
    const ctl = new AbortController();
    const done = new AbortController();
    this.running.set(job.id, ctl);
    const signal = AbortSignal.any([ctl.signal, AbortSignal.timeout(this.options.maxRunSeconds * 1000)]);
    this.renewLease(job, ctl, AbortSignal.any([signal, done.signal]));
    const control: JobControl = {
      complete: async (tx, output) => {
        await this.boss.complete(GRADING_QUEUE, job.id, (output ?? null) as never, { db: bossDb(tx, this.db) } as never);
      },
      retryLater: async (tx, delaySeconds) => {
        // pg-boss's own retry keeps the job's priority; a new job of priority 0 lets waiting
        // requests go first. Same id (the artifact's), so the job stays one per artifact.
        const db = bossDb(tx, this.db);
        await this.boss.deleteJob(GRADING_QUEUE, job.id, { db } as never);
        await this.send(tx, job.data, { priority: 0, startAfter: Math.max(1, Math.ceil(delaySeconds)) });
      },
    };
    let outcome: JobOutcome;
    try {
      outcome = await this.options.handler!(job, control, signal);
    } catch (err) {
      if (this.stopping) {
        await this.release(job.id);
      } else {
        this.options.log.error({ err, artifactId: job.data?.artifact_id }, 'embed queue: grading run failed');
        await this.boss.fail(GRADING_QUEUE, job.id, { message: 'internal error' }).catch(() => {});
      }
      outcome = { kind: 'pending', reason: 'internal_error' };
    } finally {
      done.abort();
      this.running.delete(job.id);
    }
    if (outcome.kind === 'pending' && this.stopping) await this.release(job.id);
    this.notify(job.data.artifact_id, outcome);
  }

  /** Put an active job back at once (shutdown): cancel, then resume → `created`. */
  private async release(id: string): Promise<void> {
    try {
      await this.boss.cancel(GRADING_QUEUE, id);
      await this.boss.resume(GRADING_QUEUE, id);
    } catch {
      // the database is going away; the lease brings the job back
    }
  }

  /** Re-enqueue pending artifacts without a live job (see the header). Returns how many. */
  async sweep(): Promise<number> {
    const count = await this.db.transaction(async (tx) => {
      const [{ locked }] = (await tx.query<{ locked: boolean }>('select pg_try_advisory_xact_lock($1, 0) as locked', [SWEEP_LOCK])) as [
        { locked: boolean },
      ];
      if (!locked) return 0;
      // pg-boss's job table: a job is live while its state is before `completed`.
      const orphans = await tx.query<{ id: string; tenant_id: string }>(
        `select a.id, a.tenant_id from artifacts a
          where a.verification->>'status' = 'pending'
            and not exists (select 1 from pgboss.job j where j.name = $1 and j.id = a.id and j.state < 'completed')
          order by a.created_at
          limit ${SWEEP_BATCH}`,
        [GRADING_QUEUE],
      );
      if (!orphans.length) return 0;
      const db = bossDb(tx, this.db);
      await this.boss.deleteJob(GRADING_QUEUE, orphans.map((o) => o.id), { db } as never);
      await this.boss.insert(
        orphans.map((o) => ({
          id: o.id,
          name: GRADING_QUEUE,
          data: { artifact_id: o.id, tenant_id: o.tenant_id },
          priority: 0,
          retryLimit: RETRY_LIMIT,
          retryDelay: EXPIRED_RETRY_DELAY,
          retryBackoff: true,
          expireInSeconds: this.options.leaseSeconds,
          keepUntil: new Date(Date.now() + RETENTION_DAYS * 86_400_000).toISOString(),
        })),
        { db } as never,
      );
      return orphans.length;
    });
    if (count) {
      this.options.log.info({ count }, 'embed queue: re-enqueued pending submissions');
      for (let i = 0; i < Math.min(count, this.options.concurrency); i++) this.kick();
    }
    return count;
  }
}
