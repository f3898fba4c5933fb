/**
 * Publishing the sync horizon for read replicas (migration 0120): while a process has a read
 * replica (`DATABASE_READ_URL`), it writes the primary's horizon into `svc.replica_horizon` every
 * `intervalMs` (default 1 s), so the replica's feed pages and their watermark
 * (`Svc-Consistent-Through`) advance as replay does. The watermark a replica serves is therefore at
 * most about one interval plus its replay lag behind the primary's. Every process with a replica
 * publishes (a one-row upsert each); any one of them is enough, and when none runs the replica's
 * feed simply stops advancing (never runs ahead).
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '../db/index.ts';

/** How often the horizon is published, in milliseconds. */
export const PUBLISH_INTERVAL_MS = 1000;

/**
 * Start publishing on `primary` (first publication at once); resolves after the first one
 * (a failure there is logged, not thrown: the replica then waits, the service serves). Returns a
 * function that stops publishing.
 */
export async function publishHorizon(primary: Db, log: Pick<FastifyBaseLogger, 'warn' | 'info'>, intervalMs = PUBLISH_INTERVAL_MS): Promise<() => void> {
  let failing = false;
  const publish = async () => {
    try {
      await primary.query('select svc.results_publish_horizon()');
      if (failing) log.info('results: publishing the sync horizon for the read replica again');
      failing = false;
    } catch (err) {
      if (!failing) log.warn({ err }, 'results: publishing the sync horizon for the read replica failed; the replica feed waits');
      failing = true;
    }
  };
  await publish();
  const timer = setInterval(() => void publish(), intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
