/**
 * Opening the database: PostgreSQL when a URL is given, otherwise embedded PGlite in a folder
 * (or in memory when the folder is undefined). Callers get the same `Db` interface either way.
 */
import { join } from 'node:path';
import { openPostgres } from './postgres.ts';
import type { Db } from './types.ts';

export type { Db, Queryable, Row } from './types.ts';
export { migrate } from './migrate.ts';
export { asUser, asResultsTenant } from './roles.ts';

/**
 * The embedded database lives in `<dataDir>/pgdata`, beside secrets.json and the lock.
 * PGlite is imported only when used: loading it costs ~40 MiB of RSS a server on PostgreSQL
 * does not need.
 */
export async function openDb(target: {
  databaseUrl?: string;
  dataDir?: string;
  dbPoolSize?: number;
  /** PostgreSQL only: the bounds of issue #11 (SVC_DB_ACQUIRE_TIMEOUT, SVC_DB_STATEMENT_TIMEOUT). */
  dbAcquireTimeoutMs?: number;
  dbStatementTimeoutMs?: number;
}): Promise<Db> {
  if (target.databaseUrl) {
    return openPostgres(target.databaseUrl, {
      max: target.dbPoolSize,
      acquireTimeoutMs: target.dbAcquireTimeoutMs,
      statementTimeoutMs: target.dbStatementTimeoutMs,
    });
  }
  const { openPglite } = await import('./pglite.ts');
  return openPglite(target.dataDir === undefined ? undefined : join(target.dataDir, 'pgdata'));
}
