/**
 * Bounded shutdown of the server process on SIGTERM or SIGINT (issue #11). Times are counted from
 * the signal (`Config.shutdown`, SVC_SHUTDOWN_DELAY / SVC_SHUTDOWN_TIMEOUT):
 *
 *   0          readiness fails (`/readyz` 503 "shutdown"); every response says `Connection: close`
 *              (src/app.ts), so keep-alive clients go elsewhere; requests are still served
 *   delayMs    the listener closes: no new connection; idle keep-alive connections are closed (Node's
 *              `server.close()`); a request arriving on an open connection gets Fastify's 503
 *   …          requests under way finish, and their connections close after their response
 *   timeoutMs  connections still open are cut (`closeAllConnections`)
 *   then       the app's onClose hooks: the grading queue stops and hands its running jobs back
 *              (src/embed/queue/index.ts `stop`), Redis clients quit; then `release()` closes the database
 *              and the embedded folder lock; exit 0
 *
 * A second signal exits at once with 1. A repeat within `REPEAT_MS` of the first is not a second
 * signal: under `npm start`, a signal sent to the whole process group (Ctrl-C, systemd's default
 * `KillMode=control-group`) reaches the server twice — from the sender and forwarded by npm.
 * Cleanup that hangs is cut `CLEANUP_MS` after the deadline (exit 1), so with the defaults (5 s,
 * 20 s) the process is gone within 25 s: under Kubernetes' 30 s `terminationGracePeriodSeconds`
 * (docs/operations.md). Uncaught errors are not handled here: they end the process as Node does.
 *
 * (close-with-grace, fastify/demo's helper, was tried first: it exits on any repeated signal, and
 * under `npm start` a group-wide SIGTERM then ended the process with 1 about one time in three.)
 */
import type { FastifyInstance } from 'fastify';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ShutdownConfig } from '../config.ts';

/** Milliseconds after the deadline for the queue, database and lock to close before a forced exit. */
export const CLEANUP_MS = 5000;
/** Milliseconds after the first signal during which the same signal again is the same request to stop. */
export const REPEAT_MS = 500;

const SIGNALS = ['SIGTERM', 'SIGINT'] as const;

/** Shut `app` down as described above on the first signal; `release` runs after the app closed. */
export function shutdownOnSignal(app: FastifyInstance, settings: ShutdownConfig, release: () => Promise<void>): void {
  let first: { signal: NodeJS.Signals; at: number } | undefined;
  const onSignal = (signal: NodeJS.Signals) => {
    if (!first) {
      first = { signal, at: Date.now() };
      void shutdown(app, settings, release, signal);
    } else if (signal !== first.signal || Date.now() - first.at >= REPEAT_MS) {
      app.log.warn(`shutdown: second signal (${signal}), exiting now`);
      process.exit(1);
    }
  };
  for (const signal of SIGNALS) process.on(signal, onSignal);
}

async function shutdown(app: FastifyInstance, settings: ShutdownConfig, release: () => Promise<void>, signal: NodeJS.Signals) {
  const start = Date.now();
  setTimeout(() => {
    app.log.error(`shutdown: not done ${CLEANUP_MS} ms after the deadline, exiting`);
    process.exit(1);
  }, settings.timeoutMs + CLEANUP_MS);
  app.readiness.shuttingDown = true;
  app.log.info({ signal, ...settings }, 'shutdown: readiness fails now; closing the listener after delayMs');
  try {
    await sleep(settings.delayMs);
    const cut = setTimeout(
      () => {
        app.log.warn('shutdown: deadline reached, closing the connections still open');
        app.server.closeAllConnections();
      },
      settings.timeoutMs - (Date.now() - start),
    );
    try {
      await app.close();
    } finally {
      clearTimeout(cut);
    }
    await release();
  } catch (err) {
    app.log.error({ err }, 'shutdown: failed');
    process.exit(1);
  }
  app.log.info({ ms: Date.now() - start }, 'shutdown: done');
  process.exit(0);
}
