/**
 * The judge's services of one process: the grader (when a model is configured) and the grading
 * queue, created once by the app (app.ts) and handed to the embed plugin (which starts and stops
 * the queue) and the authoring plugin (whose calibration tools enqueue runs on it). The queue's
 * handler works both kinds of job: a learner's submission (grading/grade-job.ts) and a
 * calibration run (calibration/runs.ts). At every start of a working queue, calibration runs made
 * stale by a new model or prompt version are queued, and open runs without a job are enqueued.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Deps } from '../deps.ts';
import type { Jobs } from '../jobs/index.ts';
import { gradingHandler, maxRunSeconds } from './grading/grade-job.ts';
import { Grader } from './grading/model.ts';
import { GradingQueue, type JobHandler } from './queue/index.ts';
import { calibrationHandler, enqueueOpenRuns, isCalibrationJob, queueStaleRuns } from './calibration/runs.ts';

export interface JudgeServices {
  /** The grader of this process, or null without a model (SVC_JUDGE_*). */
  grader: Grader | null;
  queue: GradingQueue;
  /** Bring calibration up to date: queue stale runs (all activities, or one) and enqueue open runs without a job. */
  catchUpCalibration(scope?: { activityId?: string }): Promise<void>;
}

/** Create the grader and the grading queue of this process on its job queue `jobs` (not started: the embed plugin starts it). */
export function createJudgeServices(deps: Deps, log: FastifyBaseLogger, jobs: Jobs): JudgeServices {
  const grader = deps.config.judge ? new Grader(deps.config.judge) : null;
  const e = deps.config.embed;
  let handler: JobHandler | undefined;
  if (grader) {
    const grade = gradingHandler(deps, grader);
    const calibrate = calibrationHandler(deps, grader);
    handler = (job, control, signal) => (isCalibrationJob(job) ? calibrate(job, control, signal) : grade(job, control, signal));
  }
  const queue = new GradingQueue(jobs, {
    leaseSeconds: e.judgeLeaseSeconds,
    maxRunSeconds: maxRunSeconds(deps),
    concurrency: e.judgeConcurrency,
    pollSeconds: e.judgePollSeconds,
    handler,
    log,
  });
  const model = deps.config.judge?.model;
  return {
    grader,
    queue,
    async catchUpCalibration(scope = {}) {
      if (model) await queueStaleRuns(deps.db, model, scope);
      await enqueueOpenRuns(deps.db, queue, scope);
    },
  };
}
