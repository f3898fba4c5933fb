/**
 * The PostgreSQL backend (src/db/postgres.ts): parameterised queries are prepared statements
 * (one round trip each once prepared, no re-parsing).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../../src/db/index.ts';
import { backend, freshDb } from '../helpers/harness.ts';

describe.skipIf(backend !== 'postgres')('postgres.js backend', () => {
  let db: Db;
  let drop: () => Promise<void>;
  beforeAll(async () => {
    ({ db, drop } = await freshDb());
  });
  afterAll(() => drop());

  it('prepares queries that have parameters, and only those', async () => {
    const statements = await db.transaction(async (tx) => {
      await tx.query('select $1::int + 1 as n', [1]);
      await tx.query('select 41 + 1 as n');
      return tx.query<{ statement: string }>('select statement from pg_prepared_statements where statement like $1 order by 1', ['select % + 1 as n']);
    });
    expect(statements.map((s) => s.statement)).toEqual(['select $1::int + 1 as n']);
  });

});
