/**
 * Server backend: PostgreSQL through postgres.js (a pool of `max` connections).
 * `timestamptz` is returned as text to keep microseconds; `numeric` as a JS number.
 */
import postgres from 'postgres';
import type { Db, Queryable } from './types.ts';

export function openPostgres(url: string, options: { max?: number } = {}): Db {
  const sql = postgres(url, {
    max: options.max ?? 10,
    onnotice: () => {},
    types: {
      timestamptz: { to: 1184, from: [1184, 1114], serialize: (v: unknown) => v, parse: (v: string) => v },
      numeric: { to: 1700, from: [1700], serialize: (v: unknown) => String(v), parse: (v: string) => Number(v) },
    },
    connection: { application_name: 'svc' },
  });
  const wrap = (q: postgres.Sql | postgres.TransactionSql): Queryable => ({
    async query<T>(text: string, params: unknown[] = []) {
      return (await q.unsafe(text, params as postgres.ParameterOrJSON<never>[])) as unknown as T[];
    },
    async exec(script: string) {
      await q.unsafe(script).simple();
    },
  });
  return {
    kind: 'postgres',
    ...wrap(sql),
    transaction: (fn) => sql.begin((tx) => fn(wrap(tx))) as Promise<never>,
    close: () => sql.end({ timeout: 5 }),
  };
}
