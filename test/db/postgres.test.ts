/**
 * The PostgreSQL backend (src/db/postgres.ts, node-postgres): parameterised queries are prepared
 * statements (one round trip each once prepared, no re-parsing), and values come and go as the
 * embedded backend's do (src/db/types.ts).
 */
import { type AddressInfo, createServer, type Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { DbUnavailableError } from '../../src/db/errors.ts';
import { openPostgres } from '../../src/db/postgres.ts';
import { backend, useFreshDb } from '../helpers/harness.ts';

describe.skipIf(backend !== 'postgres')('postgres.js backend', () => {
  const store = useFreshDb();

  it('prepares queries that have parameters, and only those', async () => {
    const statements = await store.db.transaction(async (tx) => {
      await tx.query('select $1::int + 1 as n', [1]);
      await tx.query('select 41 + 1 as n');
      return tx.query<{ statement: string }>('select statement from pg_prepared_statements where statement like $1 order by 1', ['select % + 1 as n']);
    });
    expect(statements.map((s) => s.statement)).toEqual(['select $1::int + 1 as n']);
  });

  it('returns timestamps as text with microseconds, numeric as numbers, and takes a string bound to jsonb as JSON text', async () => {
    const [row] = await store.db.query<Record<string, unknown>>(
      `select $1::timestamptz as at, array[$1::timestamptz] as ats, 92.5::numeric as score, $2::jsonb as doc, interval '90 seconds' as span`,
      ['2026-03-01T10:00:00.123456Z', '{"a": [1, "x"]}'],
    );
    const text = expect.stringMatching(/^2026-03-01 \d\d:\d\d:00\.123456[+-]\d\d/); // PostgreSQL's text, in the session's time zone
    expect(row).toEqual({ at: text, ats: [text], score: 92.5, doc: { a: [1, 'x'] }, span: '00:01:30' });
  });

  it('runs multi-statement scripts with exec, in and out of a transaction', async () => {
    await store.db.exec('create temporary table if not exists t_exec (n int); drop table t_exec;');
    const n = await store.db.transaction(async (tx) => {
      await tx.exec('create temporary table t_exec (n int) on commit drop; insert into t_exec values (1), (2);');
      return tx.query<{ n: number }>('select count(*)::int as n from t_exec');
    });
    expect(n).toEqual([{ n: 2 }]);
  });

  it('a dedicated connection (an export’s) to a server that never answers fails within the acquire bound', async () => {
    // A peer that accepts the TCP connection and says nothing: a frozen host, a half-open proxy.
    const sockets: Socket[] = [];
    const silent = createServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const db = openPostgres(`postgres://svc@127.0.0.1:${(silent.address() as AddressInfo).port}/svc`, { acquireTimeoutMs: 300 });
    try {
      // Without the bound it would wait for an answer forever (this test's timeout fails it).
      await expect(db.dedicatedClient!('svc-export')).rejects.toBeInstanceOf(DbUnavailableError);
    } finally {
      for (const socket of sockets) socket.destroy();
      silent.close();
      await db.close();
    }
  });
});
