/**
 * Server backend: PostgreSQL through postgres.js (a pool of `max` connections, by default
 * `DEFAULT_POOL_SIZE`; the server passes `SVC_DB_POOL_SIZE`). Parameterised queries are prepared
 * statements, named per connection and cached by postgres.js: one round trip per query
 * (Bind/Execute) instead of two (Parse/Describe, then Bind/Execute) and no re-parsing. Every query
 * text the service sends is a fixed template (values are always parameters), so the cache stays
 * small.
 * `timestamptz` is returned as text to keep microseconds; `numeric` as a JS number; a string
 * bound to a json/jsonb parameter is taken as JSON text, as PGlite does.
 */
import { availableParallelism } from 'node:os';
import postgres from 'postgres';
import type { Db, Queryable } from './types.ts';

/**
 * Default pool size: twice the CPU cores, at least 4 (the PostgreSQL wiki's rule of thumb for
 * active connections). More busy backends than that only time-slice against each other and
 * against the server: the results API's p99 on 2 cores was 6–9× worse with 10 (bench/README.md).
 */
export const DEFAULT_POOL_SIZE = Math.max(4, 2 * availableParallelism());

export function openPostgres(url: string, options: { max?: number } = {}): Db {
  const sql = postgres(url, {
    max: options.max ?? DEFAULT_POOL_SIZE,
    onnotice: () => {},
    types: {
      timestamptz: { to: 1184, from: [1184, 1114], serialize: (v: unknown) => v, parse: (v: string) => v },
      // A string bound to a json/jsonb parameter is already JSON text: send it as is (postgres.js
      // would JSON-encode it again and store a jsonb string). Objects are encoded once.
      json: {
        to: 3802,
        from: [114, 3802],
        serialize: (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v)),
        parse: (v: string) => JSON.parse(v),
      },
      numeric: { to: 1700, from: [1700], serialize: (v: unknown) => String(v), parse: (v: string) => Number(v) },
    },
    connection: { application_name: 'svc' },
  });
  const wrap = (q: postgres.Sql | postgres.TransactionSql): Queryable => ({
    async query<T>(text: string, params: unknown[] = []) {
      return (await q.unsafe(text, params as postgres.ParameterOrJSON<never>[], { prepare: params.length > 0 })) as unknown as T[];
    },
    async exec(script: string) {
      await q.unsafe(script).simple();
    },
  });
  return {
    kind: 'postgres',
    ...wrap(sql),
    transaction: (fn) => sql.begin((tx) => fn(wrap(tx))) as Promise<never>,
    // postgres.js keeps one dedicated listen connection and re-listens (calling onListen) after
    // it reconnects.
    async listen(channel, onNotify, onListen) {
      const { unlisten } = await sql.listen(channel, onNotify, onListen);
      return async () => {
        await unlisten();
      };
    },
    close: () => sql.end({ timeout: 5 }),
  };
}
