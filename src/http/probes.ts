/**
 * Health probes for a load balancer or an orchestrator (issue #11; Kubernetes "Liveness,
 * Readiness and Startup Probes"): registered at the root by src/app.ts, no credential, answers
 * never cached (`Cache-Control: no-store`).
 *
 *   GET /livez   200 `{"status":"live"}`: the process answers. Checks nothing outside it, so a
 *                database outage never gets the process restarted.
 *   GET /readyz  200 `{"status":"ready","checks":{name: "ok"}}` when every check passes, else
 *                503 `{"status":"unavailable","failing":[names],"checks":{name: "ok" | reason}}`.
 *
 * Checks (a `Readiness` registry decorated on the app as `app.readiness`; each part adds its own):
 *   database    `select 1` answers                                     (this module)
 *   migrations  the database has every migration this build ships    (this module; once it has
 *               passed it stays passed: migrations are forward-only)
 *   queue       the grading queue is started and not stopping         (src/embed/routes.ts)
 *   redis       every Redis client answers PING, when REDIS_URL is set (src/http/redis.ts)
 *   shutdown    the process has not begun to shut down                (src/http/shutdown.ts)
 * Each check gets `CHECK_TIMEOUT_MS` (1 s, the bound); checks run concurrently, and
 * concurrent probes share one evaluation. Reasons sent are fixed words ("timed out", "failed",
 * "not started", "shutting down"); the error behind a failure is logged once when a check starts
 * failing (and once when it passes again), never sent.
 */
import type { FastifyInstance } from 'fastify';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Db } from '../db/index.ts';
import { migrationStatus } from '../db/migrate.ts';

/** How long one check may take before it counts as failing, in milliseconds (issue #11). */
export const CHECK_TIMEOUT_MS = 1000;

/** A readiness check: resolves when its part is ready, rejects (with a `NotReady` reason, or any error) when not. */
export type ReadinessCheck = () => Promise<unknown>;

/** A check's public reason for failing (sent in the body); other errors are sent as "failed". */
export class NotReady extends Error {}

declare module 'fastify' {
  interface FastifyInstance {
    readiness: Readiness;
  }
}

export interface ReadinessReport {
  ready: boolean;
  checks: Record<string, string>;
  failing: string[];
}

/** The checks of one process; `shuttingDown` fails readiness at once (src/http/shutdown.ts). */
export class Readiness {
  private readonly checks = new Map<string, ReadinessCheck[]>();
  private readonly failed = new Set<string>();
  private evaluation: Promise<ReadinessReport> | undefined;
  shuttingDown = false;

  constructor(private readonly log: FastifyInstance['log']) {}

  /** Add a check under `name`; several checks under one name must all pass. */
  add(name: string, check: ReadinessCheck): void {
    this.checks.set(name, [...(this.checks.get(name) ?? []), check]);
  }

  /** Run every check (or join the run under way). */
  report(): Promise<ReadinessReport> {
    this.evaluation ??= this.evaluate().finally(() => {
      this.evaluation = undefined;
    });
    return this.evaluation;
  }

  private async evaluate(): Promise<ReadinessReport> {
    const names = [...this.checks.keys()];
    const reasons = await Promise.all(names.map((name) => this.run(name, this.checks.get(name)!)));
    const checks: Record<string, string> = Object.fromEntries(names.map((name, i) => [name, reasons[i] ?? 'ok']));
    checks.shutdown = this.shuttingDown ? 'shutting down' : 'ok';
    const failing = Object.keys(checks).filter((name) => checks[name] !== 'ok');
    return { ready: failing.length === 0, checks, failing };
  }

  /** Undefined when every check of `name` passed in time, else the public reason. */
  private async run(name: string, checks: ReadinessCheck[]): Promise<string | undefined> {
    const timeout = new AbortController();
    try {
      await Promise.race([
        Promise.all(checks.map((check) => check())),
        sleep(CHECK_TIMEOUT_MS, undefined, { signal: timeout.signal }).then(() => {
          throw new NotReady('timed out');
        }),
      ]);
      if (this.failed.delete(name)) this.log.info({ check: name }, 'readiness: check passes again');
      return undefined;
    } catch (err) {
      if (!this.failed.has(name)) {
        this.failed.add(name);
        this.log.warn({ check: name, err }, 'readiness: check failing');
      }
      return err instanceof NotReady ? err.message : 'failed';
    } finally {
      timeout.abort();
    }
  }
}

/** Decorate `app.readiness` with the database checks; call on the root instance before the surfaces. */
export function addReadiness(app: FastifyInstance, db: Db): void {
  const readiness = new Readiness(app.log);
  app.decorate('readiness', readiness);
  readiness.add('database', () => db.query('select 1'));
  const migrations = migrationStatus(db);
  let migrated = false;
  readiness.add('migrations', async () => {
    if (migrated) return;
    const { applied, latest } = await migrations();
    if (applied < latest) throw new NotReady('not applied');
    migrated = true;
  });
}

/** The probe routes (see the header). */
export async function probeRoutes(app: FastifyInstance): Promise<void> {
  app.get('/livez', async (_req, reply) => {
    reply.header('cache-control', 'no-store');
    return { status: 'live' };
  });
  app.get('/readyz', async (_req, reply) => {
    const report = await app.readiness.report();
    reply.header('cache-control', 'no-store');
    if (report.ready) return { status: 'ready', checks: report.checks };
    return reply.code(503).send({ status: 'unavailable', failing: report.failing, checks: report.checks });
  });
}
