/**
 * Forward-only SQL migrations (src/migrations/NNNN.do.name.sql) applied with postgrator.
 *
 * The whole run happens in one transaction that first takes a transaction-scoped advisory
 * lock, so two processes starting at once apply each migration exactly once, and a failing
 * migration leaves the schema as it was. Returns the versions applied by this call.
 */
import Postgrator from 'postgrator';
import { fileURLToPath } from 'node:url';
import type { Db } from './types.ts';

const MIGRATIONS_GLOB = fileURLToPath(new URL('../migrations/*.do.*.sql', import.meta.url));
const MIGRATION_LOCK_KEY = 7_310_224_001;

export async function migrate(db: Db): Promise<number[]> {
  return db.transaction(async (tx) => {
    await tx.query('select pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY]);
    const postgrator = new Postgrator({
      migrationPattern: MIGRATIONS_GLOB,
      driver: 'pg',
      schemaTable: 'public.schema_migrations',
      execQuery: async (text: string) => ({ rows: await tx.query(text) }),
      execSqlScript: (script: string) => tx.exec(script),
    });
    const applied = await postgrator.migrate();
    return applied.map((m) => m.version);
  });
}
