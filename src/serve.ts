/**
 * Serve (src/main.ts calls this once telemetry is set up): load config, open the database (embedded PGlite folder unless
 * DATABASE_URL is set; with DATABASE_READ_URL also its read replica), apply migrations, listen. In embedded mode the data folder is locked
 * for the life of the process and its address is published for the `svc` CLI. Signals shut it
 * down within a deadline (src/http/shutdown.ts).
 */
import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.ts';
import { ConfigError, loadConfig, type Config } from './config.ts';
import { DataDirBusyError, lockDataDir, writeServerInfo } from './db/data-dir-lock.ts';
import { migrate, openDb, type Db } from './db/index.ts';
import { shutdownOnSignal } from './http/shutdown.ts';
import { startMetricsServer } from './telemetry/metrics-server.ts';

/** A service started in this process: its app and address, and how to release what it holds. */
export interface StartedService {
  app: FastifyInstance;
  /** The address it listens on (`http://127.0.0.1:8787`). */
  url: string;
  db: Db;
  readDb?: Db;
  /** Close the read replica and the database and unlock the data folder (after `app.close()`). */
  release(): Promise<void>;
}

/**
 * Start the service of `config` in this process: lock the embedded folder (throws
 * `DataDirBusyError` when another process holds it), open and migrate the database, build the app,
 * listen on `config.port` (0: a free one) and publish the address for the `svc` CLI. `npm start`
 * (below) and `npm run demo` (scripts/demo.ts) both start the service through it; `opened`: a
 * database already opened on the config's data folder (the demo starts PGlite from a migrated dump).
 */
export async function startService(config: Config, opened?: Db): Promise<StartedService> {
  const unlock = config.dataDir ? await lockDataDir(config.dataDir) : async () => {};
  const db = await (opened ? Promise.resolve(opened) : openDb(config)).catch(async (err) => {
    await unlock();
    throw err;
  });
  const release = async () => {
    await readDb?.close();
    await db.close();
    await unlock();
  };
  let readDb: Db | undefined;
  let app: FastifyInstance | undefined;
  try {
    await migrate(db);
    // The read replica (PostgreSQL only, config.ts refuses it on PGlite): opened without a check, as
    // reads fall back to the primary while it cannot serve (src/db/replica.ts).
    readDb = config.databaseReadUrl ? await openDb({ ...config, databaseUrl: config.databaseReadUrl }) : undefined;
    app = await buildApp({ config, db, readDb, now: () => new Date() });
    const url = await app.listen({ port: config.port, host: config.host });
    if (config.dataDir) writeServerInfo(config.dataDir, { url, pid: process.pid });
    return { app, url, db, readDb, release };
  } catch (err) {
    // A start that fails (a port in use: EADDRINUSE) leaves nothing open or locked.
    await app?.close().catch(() => {});
    await release().catch(() => {});
    throw err;
  }
}

async function main(stopTracing?: () => Promise<void>) {
  const config = loadConfig();
  const { app, url: address, db, readDb, release } = await startService(config);
  app.log.info(
    { backend: db.kind, node: process.version, readReplica: readDb !== undefined, dataDir: config.dataDir, judge: config.judge ? config.judge.model : 'off' },
    `service listening on ${address}`,
  );
  const metrics = config.metrics ? await startMetricsServer(config.metrics) : undefined;
  if (metrics) app.log.info({ metrics: `${metrics.url}/metrics` }, `metrics on ${metrics.url}/metrics`);
  if (config.fetchAllowPrivate) {
    app.log.warn('SVC_FETCH_ALLOW_PRIVATE is set: the judge may fetch private and loopback addresses (tests only)');
  }
  shutdownOnSignal(app, config.shutdown, async () => {
    await metrics?.close();
    await release();
    await stopTracing?.();
  });
}

/** Run the service until a signal stops it; configuration and start-up errors end the process (2, or 1). */
export const serve = (stopTracing?: () => Promise<void>) =>
  main(stopTracing).catch((err) => {
    if (err instanceof ConfigError || err instanceof DataDirBusyError) {
      console.error(`svc: ${err.message}`);
      process.exit(2);
    }
    console.error(err);
    process.exit(1);
  });
