/**
 * Score delivery on the job queue (src/jobs; issue #22 "Delivery is durable").
 *
 * The outbox rows (`lti_score_deliveries`, written by the trigger of migration 0152 in the
 * transaction that changed the result) are the durable record of what is owed; the job queue runs
 * the sending:
 *
 * - `lti-scores`: one job per stream (placement, learner) — `deliverStream` (deliver.ts) sends its
 *   rows in order. Policy `stately` with the stream as `singletonKey`: at most one job of a stream
 *   queued and one running, so a stream is sent from one place at a time, in order, and a change
 *   arriving while it runs queues one more pass. A row that must wait (the platform down: its
 *   `next_attempt_at`) queues the next pass for then (`startAfter`). A job whose process died runs
 *   again when it expires.
 * - `lti-scores-sweep`: every minute (cron, one run across processes): a pass for every stream
 *   with a due row and no job — a notice missed, a process killed between commit and enqueue.
 * - `startScoreSender`: each process LISTENs to the trigger's `NOTIFY svc_lti_scores` and queues
 *   passes for the due streams at once, so a score leaves within a poll of the change.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '../../db/index.ts';
import type { Deps } from '../../deps.ts';
import { defineQueue } from '../../jobs/index.ts';
import { deliverStream, dueStreams, type StreamKey } from './deliver.ts';

export const SCORES_CHANNEL = 'svc_lti_scores';

const streamId = (k: StreamKey) => `${k.tenant_id}/${k.link}/${k.user_id}`;

/** The per-stream delivery job (header). */
export const scoresQueue = defineQueue<StreamKey>({
  name: 'lti-scores',
  concurrency: 2,
  pollSeconds: 1,
  options: { policy: 'stately', retryLimit: 20, retryDelay: 5, retryBackoff: true, expireInSeconds: 300, retentionDays: 7 },
  handler: async (job, { deps }) => {
    const outcome = await deliverStream(deps, job.data);
    if (outcome.kind === 'later') {
      const delay = Math.max(1, Math.ceil((Date.parse(outcome.at) - Date.now()) / 1000));
      await deps.db.transaction((tx) => scoresQueue.enqueue(tx, job.data, { singletonKey: streamId(job.data), startAfter: delay }));
    }
    return outcome;
  },
});

/** Queue a pass for every stream with a row to send now; returns how many were queued. */
export async function queueDueStreams(db: Db): Promise<number> {
  const streams = await dueStreams({ db }, 500);
  if (!streams.length) return 0;
  return db.transaction(async (tx) => {
    let queued = 0;
    for (const key of streams)
      if (await scoresQueue.enqueue(tx, { tenant_id: key.tenant_id, link: key.link, user_id: key.user_id }, { singletonKey: streamId(key) })) queued++;
    return queued;
  });
}

/** The minute sweep (header). */
export const scoresSweepQueue = defineQueue<object>({
  name: 'lti-scores-sweep',
  schedule: { cron: '* * * * *' },
  options: { policy: 'stately', retryLimit: 0, expireInSeconds: 120, retentionDays: 1 },
  handler: async (_job, { deps }) => ({ queued: await queueDueStreams(deps.db) }),
});

export interface ScoreSender {
  stop(): Promise<void>;
}

/**
 * Listen to the outbox's notices in this process and queue passes for the due streams (header);
 * `jobs.start()` (the queues exist) is awaited first. Coalesces notices that come while queuing.
 */
export function startScoreSender(deps: Pick<Deps, 'db'>, log: Pick<FastifyBaseLogger, 'warn'>, jobs: { start(): Promise<void> }): ScoreSender {
  let running: Promise<void> | undefined;
  let again = false;
  let stopped = false;
  let unlisten: (() => Promise<void>) | undefined;
  const kick = () => {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = (async () => {
      await jobs.start();
      do {
        again = false;
        await queueDueStreams(deps.db);
      } while (again && !stopped);
    })()
      .catch((err) => log.warn({ err }, 'lti scores: queuing deliveries failed'))
      .finally(() => {
        running = undefined;
      });
  };
  deps.db
    .listen(SCORES_CHANNEL, kick, kick)
    .then((stop) => {
      if (stopped) void stop();
      else unlisten = stop;
    })
    .catch((err) => log.warn({ err }, 'lti scores: cannot listen; the minute sweep sends scores'));
  return {
    stop: async () => {
      stopped = true;
      await unlisten?.().catch(() => {});
      while (running) await running;
    },
  };
}
