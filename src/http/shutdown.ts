/**
 * Bounded shutdown of the server process (issue #11), on the signals close-with-grace handles
 * (SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR2 …; it is the shutdown helper of fastify/demo). Times
 * are counted from the signal (`Config.shutdown`, SVC_SHUTDOWN_DELAY / SVC_SHUTDOWN_TIMEOUT):
 *
 *   0          readiness fails (`/readyz` 503 "shutdown"); every response says `Connection: close`
 *              (src/app.ts), so keep-alive clients go elsewhere; requests are still served
 *   delayMs    the listener closes: no new connection; idle keep-alive connections are closed (Node's
 *              `server.close()`); a request arriving on an open connection gets Fastify's 503
 *   …          requests under way finish, and their connections close after their response
 *   timeoutMs  connections still open are cut (`closeAllConnections`)
 *   then       the app's onClose hooks: the grading queue stops and hands its running jobs back
 *              (src/embed/queue.ts `stop`), Redis clients quit; then `release()` closes the database
 *              and the embedded folder lock; exit 0
 *
 * A second signal exits at once with 1. Cleanup that hangs is cut `CLEANUP_MS` after the deadline
 * (exit 1), so with the defaults (5 s, 20 s) the process is gone within 25 s: under Kubernetes'
 * 30 s `terminationGracePeriodSeconds` (docs/operations.md). Uncaught errors are not handled here:
 * they end the process as Node does.
 */
import closeWithGrace from 'close-with-grace';
import type { FastifyInstance } from 'fastify';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ShutdownConfig } from '../config.ts';

/** Milliseconds after the deadline for the queue, database and lock to close before a forced exit. */
export const CLEANUP_MS = 5000;

/** Shut `app` down as described above on the first signal; `release` runs after the app closed. */
export function shutdownOnSignal(app: FastifyInstance, settings: ShutdownConfig, release: () => Promise<void>): void {
  closeWithGrace(
    {
      delay: settings.timeoutMs + CLEANUP_MS,
      skip: ['uncaughtException', 'unhandledRejection', 'beforeExit'],
      logger: { error: (message: unknown) => app.log.error(message) },
      onSecondSignal: (signal) => app.log.warn(`shutdown: second ${signal}, exiting now`),
    },
    async ({ signal }) => {
      const start = Date.now();
      app.readiness.shuttingDown = true;
      app.log.info({ signal, ...settings }, 'shutdown: readiness fails now; closing the listener after delayMs');
      await sleep(settings.delayMs);
      const cut = setTimeout(() => {
        app.log.warn('shutdown: deadline reached, closing the connections still open');
        app.server.closeAllConnections();
      }, settings.timeoutMs - (Date.now() - start));
      try {
        await app.close();
      } finally {
        clearTimeout(cut);
      }
      await release();
      app.log.info({ ms: Date.now() - start }, 'shutdown: done');
    },
  );
}
