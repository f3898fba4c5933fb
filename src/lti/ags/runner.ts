/**
 * The score sender of one process: works the outbox (deliver.ts) whenever a transaction queued a
 * score (the trigger's `NOTIFY svc_lti_scores`, any process) and every `POLL_SECONDS` (retries
 * that have come due, rows a crashed sender left, notices missed). Durability is the outbox's: a
 * row stays until it is delivered, skipped or failed, whichever process sends it; several
 * processes may run a sender (a stream is worked by one at a time: deliver.ts claims under a lock).
 *
 * `kick()` runs a pass now (coalesced with a running one); `idle()` resolves when no pass is
 * running; `stop()` ends the timer and the listen and waits for the running pass.
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Deps } from '../../deps.ts';
import { deliverStream, dueStreams, type StreamKey } from './deliver.ts';

/** Seconds between two passes when nothing kicks. */
export const POLL_SECONDS = 2;
/** Streams worked at once by one process. */
export const CONCURRENCY = 4;
export const SCORES_CHANNEL = 'svc_lti_scores';

export interface ScoreSender {
  kick(): void;
  idle(): Promise<void>;
  stop(): Promise<void>;
}

/** Start the sender of this process (header). */
export function startScoreSender(deps: Pick<Deps, 'db' | 'now' | 'config'>, log: Pick<FastifyBaseLogger, 'warn'>, pollSeconds = POLL_SECONDS): ScoreSender {
  let running: Promise<void> | undefined;
  let again = false;
  let stopped = false;
  let unlisten: (() => Promise<void>) | undefined;

  const pass = async () => {
    do {
      again = false;
      const streams = await dueStreams(deps);
      const work = [...streams];
      const worker = async () => {
        for (let key: StreamKey | undefined; !stopped && (key = work.shift()); ) {
          await deliverStream(deps, key).catch((err) => log.warn({ err }, 'lti scores: a delivery failed'));
        }
      };
      await Promise.all(Array.from({ length: Math.min(CONCURRENCY, work.length) }, worker));
    } while (again && !stopped);
  };
  const kick = () => {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = pass()
      .catch((err) => log.warn({ err }, 'lti scores: a pass failed'))
      .finally(() => {
        running = undefined;
      });
  };
  const timer = setInterval(kick, pollSeconds * 1000);
  timer.unref();
  deps.db
    .listen(SCORES_CHANNEL, () => kick(), () => kick())
    .then((stop) => {
      if (stopped) void stop();
      else unlisten = stop;
    })
    .catch((err) => log.warn({ err }, 'lti scores: cannot listen; polling only'));
  kick();
  return {
    kick,
    idle: async () => {
      while (running) await running;
    },
    stop: async () => {
      stopped = true;
      clearInterval(timer);
      await unlisten?.().catch(() => {});
      while (running) await running;
    },
  };
}
