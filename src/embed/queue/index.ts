/**
 * The grading queue: a durable job per submitted artifact in PostgreSQL, through pg-boss (v10),
 * on both backends (issue #6 "Nothing lost").
 *
 * The queue runs on the process's pg-boss, the service's job queue (src/jobs: pg-boss on our `Db`
 * through its `db` adapter, on PGlite as on PostgreSQL; its schema and this queue installed at
 * start, one process at a time). The queue is declared there (`Jobs.declare`, no handler: the
 * loops below work it); the job queue's maintenance runs every third of the lease (src/app.ts).
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
 * replaced, same id, priority 0); ../grading/grade-job.ts bounds how long. Jobs are kept for `RETENTION_DAYS`.
 *
 * Workers. Only a process with a model (`SVC_JUDGE_*`) works the queue: `judgeConcurrency`
 * loops, each fetching one job at a time (pg-boss `fetch`: `FOR UPDATE SKIP LOCKED`, so a job
 * runs in one place), by priority, then oldest first: a submission whose request is waiting
 * has priority 1, retries and the backlog 0. Idle loops look again every `judgePollSeconds`, or at once when this process
 * enqueues (`kick`). The handler (../grading/grade-job.ts) completes or fails its job in the transaction
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
 *
 * Files, one job each: options.ts (the queue's name, the one set of job options), workers.ts (the loops, leases, runs, hand-back), waiters.ts (waiting
 * requests), sweep.ts (the backlog sweep); this file is the facade the judge uses.
 */
import type PgBoss from 'pg-boss';
import type { FastifyBaseLogger } from 'fastify';
import type { Db, Queryable } from '../../db/index.ts';
import { bossDb, type Jobs } from '../../jobs/index.ts';
import { GRADING_QUEUE, jobOptions, RETENTION_DAYS } from './options.ts';
import { sweepBacklog } from './sweep.ts';
import { Waiters } from './waiters.ts';
import { Workers } from './workers.ts';
import type { CriterionResult } from '../grading/verdict-view.ts';

export { GRADING_QUEUE };

/** The grading of a learner's artifact (job id = the artifact's id). */
export interface ArtifactJobData {
  artifact_id: string;
  tenant_id: string;
}

/** A calibration run (../calibration/runs.ts; job id = the run's id). */
export interface CalibrationJobData {
  calibration_run_id: string;
  tenant_id: string;
}

/** A job of the grading queue: a learner's submission, or a calibration run (issue #21). */
export type GradingJobData = ArtifactJobData | CalibrationJobData;

/** The job id of `data`: the artifact's or the calibration run's id. */
export const jobId = (data: GradingJobData): string => ('artifact_id' in data ? data.artifact_id : data.calibration_run_id);

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
  /** Run again after `delaySeconds` (../grading/grade-job.ts chooses it), behind submissions whose requests are waiting (priority 0). */
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

/** The grading queue of one process: enqueue, wait for outcomes and, with a handler, work it. */
export class GradingQueue {
  private readonly boss: PgBoss;
  private started = false;
  private stopping = false;
  private readonly waiters = new Waiters();
  private readonly workers: Workers | undefined;
  private sweepTimer: NodeJS.Timeout | undefined;

  private readonly db: Db;

  /** The grading queue on `jobs` (declared there now; created when `jobs` starts). */
  constructor(
    private readonly jobs: Jobs,
    private readonly options: QueueOptions,
  ) {
    this.boss = jobs.boss;
    this.db = jobs.db;
    const db = jobs.db;
    jobs.declare({ name: GRADING_QUEUE, options: { policy: 'standard', ...jobOptions(options.leaseSeconds) } });
    const { handler } = options;
    if (handler) {
      this.workers = new Workers({
        boss: this.boss,
        db,
        options: { ...options, handler },
        requeue: (tx, data, delaySeconds) => this.send(tx, data, { priority: 0, startAfter: Math.max(1, Math.ceil(delaySeconds)) }),
        report: (artifactId, outcome) => this.waiters.notify(artifactId, outcome),
      });
    }
  }

  /** True when this process works the queue. */
  get working(): boolean {
    return Boolean(this.workers);
  }

  /** True from a completed `start()` until `stop()` (readiness, src/http/probes.ts). */
  get isRunning(): boolean {
    return this.started && !this.stopping;
  }

  /** Start the job queue (pg-boss's schema, this queue: src/jobs) if not yet, then the workers (if any) and the sweep. */
  async start(): Promise<void> {
    await this.jobs.start();
    this.started = true;
    if (!this.workers) return;
    await this.sweep().catch((err) => this.options.log.warn({ err }, 'embed queue: backlog sweep failed'));
    this.workers.start();
    const every = Math.max(60, this.options.leaseSeconds, this.options.pollSeconds * 10) * 1000;
    this.sweepTimer = setInterval(() => {
      void this.sweep().catch((err) => this.options.log.warn({ err }, 'embed queue: backlog sweep failed'));
    }, every);
    this.sweepTimer.unref();
  }

  /** Stop: no new runs; abort and release running ones. pg-boss stops with the job queue (after this). */
  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    clearInterval(this.sweepTimer);
    await this.workers?.stop();
    this.waiters.notifyAll({ kind: 'pending', reason: 'shutting down' });
  }

  /**
   * Enqueue the grading of artifact `data.artifact_id` (job id = artifact id), or calibration run
   * `data.calibration_run_id` (job id = run id), in transaction `tx`. `priority` 1 for a
   * submission whose request waits, 0 for the backlog and calibration runs.
   */
  async enqueue(tx: Queryable, data: GradingJobData, priority = 1): Promise<void> {
    await this.send(tx, data, { priority });
  }

  private async send(tx: Queryable, data: GradingJobData, options: { priority: number; startAfter?: number }): Promise<void> {
    await this.boss.send(GRADING_QUEUE, data, {
      id: jobId(data),
      priority: options.priority,
      ...(options.startAfter !== undefined && { startAfter: options.startAfter }),
      db: bossDb(tx, this.db),
      ...jobOptions(this.options.leaseSeconds),
      retentionDays: RETENTION_DAYS,
    } as PgBoss.SendOptions);
  }

  /** Wake an idle worker of this process (a job was just enqueued). */
  kick(): void {
    this.workers?.kick();
  }

  /** The outcome of this process's run of job `artifactId` (an artifact's or a calibration run's id), or undefined after `ms` milliseconds. */
  waitFor(artifactId: string, ms: number): Promise<JobOutcome | undefined> {
    if (ms <= 0 || this.stopping) return Promise.resolve(undefined);
    return this.waiters.waitFor(artifactId, ms);
  }

  /** Re-enqueue pending artifacts without a live job (sweep.ts). Returns how many. */
  async sweep(): Promise<number> {
    const count = await sweepBacklog(this.boss, this.db, this.options.leaseSeconds);
    if (count) {
      this.options.log.info({ count }, 'embed queue: re-enqueued pending submissions');
      for (let i = 0; i < Math.min(count, this.options.concurrency); i++) this.kick();
    }
    return count;
  }
}
