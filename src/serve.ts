/**
 * Serve (src/main.ts calls this once telemetry is set up): load config, open the database (embedded PGlite folder unless
 * DATABASE_URL is set; with DATABASE_READ_URL also its read replica), apply migrations, listen. In embedded mode the data folder is locked
 * for the life of the process and its address is published for the `svc` CLI. Signals shut it
 * down within a deadline (src/http/shutdown.ts).
 */
import { buildApp } from './app.ts';
import { ConfigError, loadConfig } from './config.ts';
import { DataDirBusyError, lockDataDir, writeServerInfo } from './db/data-dir-lock.ts';
import { migrate, openDb } from './db/index.ts';
import { shutdownOnSignal } from './http/shutdown.ts';
import { startMetricsServer } from './telemetry/metrics-server.ts';

async function main(stopTracing?: () => Promise<void>) {
  const config = loadConfig();
  const unlock = config.dataDir ? await lockDataDir(config.dataDir) : async () => {};
  const db = await openDb(config);
  await migrate(db);
  // The read replica (PostgreSQL only, config.ts refuses it on PGlite): opened without a check, as
  // reads fall back to the primary while it cannot serve (src/db/replica.ts).
  const readDb = config.databaseReadUrl ? await openDb({ ...config, databaseUrl: config.databaseReadUrl }) : undefined;
  const app = await buildApp({ config, db, readDb, now: () => new Date() });
  const address = await app.listen({ port: config.port, host: config.host });
  if (config.dataDir) writeServerInfo(config.dataDir, { url: address, pid: process.pid });
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
    await readDb?.close();
    await db.close();
    await unlock();
    await stopTracing?.();
  });
}

/** Run the service until a signal stops it; configuration and start-up errors end the process (2, or 1). */
export const serve = (stopTracing?: () => Promise<void>) => main(stopTracing).catch((err) => {
  if (err instanceof ConfigError || err instanceof DataDirBusyError) {
    console.error(`svc: ${err.message}`);
    process.exit(2);
  }
  console.error(err);
  process.exit(1);
});
