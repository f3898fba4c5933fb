/**
 * The grading queue's workers (a process with a model): `concurrency` loops, each fetching one job
 * at a time (pg-boss `fetch`: `FOR UPDATE SKIP LOCKED`, so a job runs in one place), by priority,
 * then oldest first. Idle loops look again every `pollSeconds`, or at once when this process
 * enqueues (`kick`). Each run renews its job's lease every third of it and is bounded by
 * `maxRunSeconds`; the handler completes its job, or queues its next run, in the transaction that
 * records the outcome. `stop` aborts the runs and hands their jobs back (cancel + resume: back to
 * `created`, fetchable at once by another process).
 *
 * Why our loops and not pg-boss's `work()` (src/embed/README.md): `work()` races every handler
 * against the job's `expireInSeconds` and fails the job when it is exceeded, which ends a run
 * that is alive but longer than its (renewed) lease; measured with test/embed/judge.queue.test.ts
 * "a run longer than its lease".
 */
import type PgBoss from 'pg-boss';
import type { Db } from '../../db/index.ts';
import { bossDb } from '../../jobs/index.ts';
import { GRADING_QUEUE } from './options.ts';
import type { GradingJob, GradingJobData, JobControl, JobOutcome, QueueOptions } from './index.ts';

interface WorkerDeps {
  boss: PgBoss;
  db: Db;
  options: QueueOptions & Required<Pick<QueueOptions, 'handler'>>;
  /** Queue the job's next run (`retryLater`), in the caller's transaction. */
  requeue(tx: Parameters<JobControl['retryLater']>[0], data: GradingJobData, delaySeconds: number): Promise<void>;
  /** Every run's outcome by job id (an artifact's or a calibration run's), for the requests of this process that wait for it. */
  report(artifactId: string, outcome: JobOutcome): void;
}

export class Workers {
  private stopping = false;
  private readonly loops: Promise<void>[] = [];
  private readonly sleepers: (() => void)[] = [];
  private kicks = 0;
  private readonly running = new Map<string, AbortController>();

  constructor(private readonly w: WorkerDeps) {}

  /** Start the loops. */
  start(): void {
    for (let i = 0; i < this.w.options.concurrency; i++) this.loops.push(this.loop());
  }

  /** Wake an idle loop (a job was just enqueued). */
  kick(): void {
    const wake = this.sleepers.shift();
    if (wake) wake();
    else this.kicks = Math.min(this.kicks + 1, this.w.options.concurrency);
  }

  /** No new runs; abort the running ones (their jobs go back to the queue) and wait for the loops. */
  async stop(): Promise<void> {
    this.stopping = true;
    for (const wake of this.sleepers.splice(0)) wake();
    for (const ctl of this.running.values()) ctl.abort();
    await Promise.allSettled(this.loops);
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
      const timer = setTimeout(wake, this.w.options.pollSeconds * 1000);
      this.sleepers.push(wake);
    });
  }

  private async loop(): Promise<void> {
    while (!this.stopping) {
      let job: GradingJob | undefined;
      try {
        [job] = (await this.w.boss.fetch(GRADING_QUEUE, { batchSize: 1, priority: true })) as unknown as GradingJob[];
      } catch (err) {
        this.w.options.log.warn({ err }, 'embed queue: fetch failed');
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
    const { db, options } = this.w;
    const everyMs = Math.max(1, (Number(job.expireInSeconds) || options.leaseSeconds) / 3) * 1000;
    const timer = setInterval(() => {
      void db
        .query<{ id: string }>(`update pgboss.job set started_on = now() where name = $1 and id = $2 and state = 'active' returning id`, [
          GRADING_QUEUE,
          job.id,
        ])
        .then((rows) => {
          if (!rows.length && !signal.aborted) {
            options.log.warn({ jobId: job.id }, 'embed queue: lost the lease of a running job; aborting the run');
            ctl.abort();
          }
        })
        .catch((err) => options.log.warn({ err }, 'embed queue: lease renewal failed'));
    }, everyMs);
    timer.unref();
    signal.addEventListener('abort', () => clearInterval(timer), { once: true });
  }

  /** One run of `job` by the handler, its lease renewed while it lasts, bounded by `maxRunSeconds`. */
  private async run(job: GradingJob): Promise<void> {
    const { boss, db, options } = this.w;
    const ctl = new AbortController();
    const done = new AbortController();
    this.running.set(job.id, ctl);
    const signal = AbortSignal.any([ctl.signal, AbortSignal.timeout(options.maxRunSeconds * 1000)]);
    this.renewLease(job, ctl, AbortSignal.any([signal, done.signal]));
    const control: JobControl = {
      complete: async (tx, output) => {
        await boss.complete(GRADING_QUEUE, job.id, (output ?? null) as never, { db: bossDb(tx, db) } as never);
      },
      retryLater: async (tx, delaySeconds) => {
        // pg-boss's own retry keeps the job's priority; a new job of priority 0 lets waiting
        // requests go first. Same id (the artifact's), so the job stays one per artifact.
        await boss.deleteJob(GRADING_QUEUE, job.id, { db: bossDb(tx, db) } as never);
        await this.w.requeue(tx, job.data, delaySeconds);
      },
    };
    let outcome: JobOutcome;
    try {
      outcome = await options.handler(job, control, signal);
    } catch (err) {
      if (this.stopping) {
        await this.release(job.id);
      } else {
        options.log.error({ err, jobId: job.id }, 'embed queue: grading run failed');
        await boss.fail(GRADING_QUEUE, job.id, { message: 'internal error' }).catch(() => {});
      }
      outcome = { kind: 'pending', reason: 'internal_error' };
    } finally {
      done.abort();
      this.running.delete(job.id);
    }
    if (outcome.kind === 'pending' && this.stopping) await this.release(job.id);
    this.w.report(job.id, outcome);
  }

  /** Put an active job back at once (shutdown): cancel, then resume → `created`. */
  private async release(id: string): Promise<void> {
    try {
      await this.w.boss.cancel(GRADING_QUEUE, id);
      await this.w.boss.resume(GRADING_QUEUE, id);
    } catch {
      // the database is going away; the lease brings the job back
    }
  }
}
