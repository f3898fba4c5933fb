/**
 * The database: reachable, migrated to the newest migration this build ships, the roles the
 * service switches to (`anon`, `authenticated`, `svc_results`: src/db/roles.ts) present.
 *
 * PostgreSQL (DATABASE_URL): one pool of one connection, capped by SVC_DB_ACQUIRE_TIMEOUT.
 * Embedded (SVC_DATA_DIR): the folder is opened only when no process holds it (its lock,
 * src/db/data-dir-lock.ts) — never created. A folder held by a running server is checked through
 * that server's `/readyz` (database, migrations, queue) instead; the checks that need the
 * database directly (the tenants' identity providers) then say they were skipped.
 * Nothing is written: no migration is applied, no role created.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { isDataDirLocked, lockDataDir, readServerInfo } from '../../db/data-dir-lock.ts';
import { migrationStatus } from '../../db/migrate.ts';
import { openDb, type Db } from '../../db/index.ts';
import { error, ok, reason, warning, type DoctorContext, type Finding } from './types.ts';

export const ROLES = ['anon', 'authenticated', 'svc_results'];

/** The database's findings, and the open database (with how to close it) when it could be opened. */
export interface DatabaseCheck {
  findings: Finding[];
  db?: Db;
  /** Why checks needing the database were not run (a folder held by a server, no folder yet). */
  skipped?: string;
  close(): Promise<void>;
}

/** `postgres://user@host:port/db` without the password. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    u.password = '';
    return u.toString();
  } catch {
    return '(not a URL)';
  }
}

/** Reachable, migrated, roles: on an open `db` described as `where`. */
export async function inspect(db: Db, where: string): Promise<Finding[]> {
  const findings: Finding[] = [];
  try {
    await db.query('select 1');
  } catch (err) {
    return [
      error(
        'database',
        `cannot reach ${where} (${reason((err as { cause?: unknown }).cause ?? err)})`,
        'start the database server, or correct DATABASE_URL (host, port, user, password, database name)',
      ),
    ];
  }
  findings.push(ok('database', `reachable: ${where}`));
  const { applied, latest } = await migrationStatus(db)();
  if (applied === latest) findings.push(ok('migrations', `at the newest migration (${latest})`));
  else if (applied < latest)
    findings.push(
      warning('migrations', `at migration ${applied}; this build ships ${latest}`, 'run `svc migrate` (or start the server: it applies them on start)'),
    );
  else
    findings.push(
      error('migrations', `at migration ${applied}, newer than this build's ${latest}`, 'run the service version that migrated this database, or a newer one'),
    );
  const present = (await db.query<{ rolname: string }>('select rolname from pg_roles where rolname = any($1)', [ROLES])).map((r) => r.rolname);
  const missing = ROLES.filter((r) => !present.includes(r));
  findings.push(
    missing.length
      ? error('roles', `missing role(s): ${missing.join(', ')}`, 'run `svc migrate` as a user allowed to CREATE ROLE (it creates them)')
      : ok('roles', `${ROLES.join(', ')} exist`),
  );
  return findings;
}

/** A server's `/readyz`: ok when it answers 200, error with what it names otherwise. */
async function viaServer(url: string, pid: number, dataDir: string, timeoutMs: number): Promise<Finding> {
  const held = `the data folder ${dataDir} is held by the running server at ${url} (pid ${pid})`;
  try {
    const res = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(timeoutMs) });
    const body = await res.text();
    return res.ok
      ? ok('database', `${held}; its /readyz says it is ready (database, migrations, queue)`)
      : error(
          'database',
          `${held}; its /readyz answers ${res.status}: ${body.slice(0, 200)}`,
          "read the server's log; `svc doctor` checks the folder itself once the server is stopped",
        );
  } catch (err) {
    return error('database', `${held}, but it does not answer (${reason(err)})`, `stop that process (pid ${pid}) if it hangs, then start the server again`);
  }
}

export async function checkDatabase(ctx: DoctorContext): Promise<DatabaseCheck> {
  const { config, timeoutMs } = ctx;
  const nothing = async () => {};
  if (config.databaseUrl) {
    const where = `PostgreSQL ${redactUrl(config.databaseUrl)}`;
    const db = await openDb({
      databaseUrl: config.databaseUrl,
      dbPoolSize: 2,
      dbAcquireTimeoutMs: Math.min(config.dbAcquireTimeoutMs ?? timeoutMs, timeoutMs),
      dbStatementTimeoutMs: timeoutMs,
    });
    const findings = await inspect(db, where);
    const reachable = findings[0]!.status === 'ok';
    if (!reachable) await db.close().catch(() => {});
    return reachable ? { findings, db, close: () => db.close() } : { findings, skipped: 'the database cannot be reached', close: nothing };
  }
  const dataDir = config.dataDir!;
  if (!existsSync(join(dataDir, 'pgdata'))) {
    return { findings: [ok('database', `embedded: ${dataDir} has no database yet; \`npm start\` makes it`)], skipped: 'no database yet', close: nothing };
  }
  if (await isDataDirLocked(dataDir)) {
    const server = readServerInfo(dataDir);
    const finding = server
      ? await viaServer(server.url, server.pid, dataDir, timeoutMs)
      : error(
          'database',
          `the data folder ${dataDir} is in use by another process (an \`svc\` command or a server starting)`,
          'run `svc doctor` again when it ends',
        );
    return { findings: [finding], skipped: `the data folder is held by ${server ? `the running server at ${server.url}` : 'another process'}`, close: nothing };
  }
  const unlock = await lockDataDir(dataDir);
  const db = await openDb({ dataDir }).catch(async (err) => {
    await unlock();
    throw err;
  });
  const findings = await inspect(db, `embedded PGlite in ${dataDir}`);
  return {
    findings,
    db,
    close: async () => {
      await db.close();
      await unlock();
    },
  };
}
