/**
 * Forward-only SQL migrations (src/migrations/NNNN.do.name.sql) applied with postgrator.
 *
 * The whole run happens in one transaction that first takes a transaction-scoped advisory
 * lock, so two processes starting at once apply each migration exactly once, and a failing
 * migration leaves the schema as it was. Returns the versions applied by this call.
 *
 * Roles are cluster-wide on a PostgreSQL server, and advisory locks are per database: two
 * databases of one cluster migrated at once (parallel test files, two services) could both try
 * to create the request roles and one would fail on `pg_authid`'s unique index. So the roles
 * are ensured first, in their own transaction, each creation tolerating a concurrent one;
 * migration 0001's own `if not exists` then finds them.
 *
 * The migration transaction runs without the statement timeout (`SVC_DB_STATEMENT_TIMEOUT`):
 * a migration may take longer than any request should.
 *
 * On PGlite, a run that applied migrations ends with a `CHECKPOINT`: PostgreSQL's single-user mode
 * has no checkpointer (src/db/pglite.ts), so a server killed (kill -9) before its first timed
 * checkpoint would make the next start replay the whole schema's WAL — on a first start, every
 * migration since the empty cluster (issue #24: ready within 5 s of a restart after kill -9).
 */
import Postgrator from 'postgrator';
import { fileURLToPath } from 'node:url';
import type { Db, Queryable } from './types.ts';

const MIGRATIONS_GLOB = fileURLToPath(new URL('../migrations/*.do.*.sql', import.meta.url));
const MIGRATION_LOCK_KEY = 7_310_224_001;

/** The roles of the request paths (DESIGN §5), created once per cluster. */
const ENSURE_ROLES = `
do $$
declare
  r text;
begin
  foreach r in array array['anon', 'authenticated', 'svc_results'] loop
    if not exists (select from pg_roles where rolname = r) then
      begin
        execute format('create role %I nologin', r);
      exception when duplicate_object or unique_violation then
        null; -- created meanwhile by a migration of another database of this cluster
      end;
    end if;
  end loop;
end $$`;

/** A postgrator over `q` (the migrations folder, the version table). */
const postgratorOn = (q: Queryable) =>
  new Postgrator({
    migrationPattern: MIGRATIONS_GLOB,
    driver: 'pg',
    schemaTable: 'public.schema_migrations',
    execQuery: async (text: string) => ({ rows: await q.query(text) }),
    execSqlScript: (script: string) => q.exec(script),
  });

/** Apply the migrations `db` lacks (see the header); returns the versions applied, in order. */
export async function migrate(db: Db): Promise<number[]> {
  if (db.kind === 'postgres') await db.transaction((tx) => tx.exec(ENSURE_ROLES));
  const applied = await db.transaction(async (tx) => {
    // A migration may rewrite a large table: the service's statement timeout is not for it.
    await tx.exec('set local statement_timeout = 0');
    await tx.query('select pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY]);
    const done = await postgratorOn(tx).migrate();
    return done.map((m) => m.version);
  });
  if (db.kind === 'pglite' && applied.length > 0) await db.exec('checkpoint');
  return applied;
}

/**
 * For readiness (src/http/probes.ts): the newest migration version this build ships and the one
 * `db` has (0: none yet). Postgrator reads the folder once and keeps the list.
 */
export function migrationStatus(db: Db): () => Promise<{ applied: number; latest: number }> {
  const postgrator = postgratorOn(db);
  return async () => ({ applied: await postgrator.getDatabaseVersion(), latest: await postgrator.getMaxVersion() });
}
