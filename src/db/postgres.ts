/**
 * Server backend: PostgreSQL through node-postgres (`pg`), a pool of `max` connections (by
 * default `DEFAULT_POOL_SIZE`; the server passes `SVC_DB_POOL_SIZE`). Why `pg` and not postgres.js
 * (issue #11, measured in docs/architecture.md): postgres.js 3.4.9 crashes the process when a
 * connection drops inside a transaction, and queues queries behind its reconnect backoff during
 * an outage; pg-pool bounds the wait for a connection and lets us drop a broken one.
 *
 * What callers can count on (the same as the embedded backend, src/db/types.ts):
 * - a parameterised query is a named prepared statement (name = a hash of its text, prepared
 *   once per connection): one round trip (Bind/Execute) and no re-parsing; query texts are fixed
 *   templates, so each connection's statement cache stays small. A query without parameters
 *   uses the simple protocol, so `exec` can run multi-statement scripts (migrations, pg-boss);
 * - `timestamptz` / `timestamp` (and their arrays) come back as PostgreSQL's text, microseconds
 *   kept; `numeric` as a JS number; `interval` as text; json/jsonb parsed;
 * - a string bound to a json/jsonb parameter is JSON text (parameters go as untyped text and the
 *   server parses them as the parameter's type); objects are JSON-encoded once.
 *
 * Bounds (issue #11 "Fail fast, recover alone"): a connection is waited for at most
 * `acquireTimeoutMs` (pool full or server not answering); each statement runs at most
 * `statementTimeoutMs` (the server's `statement_timeout`, and a client-side read timeout a
 * second longer for a server that stopped answering). Anything that says the database is
 * unavailable is thrown as `DbUnavailableError` (src/db/errors.ts); a connection that broke is
 * dropped from the pool, never reused, and the pool opens new ones when the server is back.
 * A connection's socket error while it is checked out is caught here (pg would otherwise
 * emit it to no listener and crash the process).
 */
import { createHash } from 'node:crypto';
import pg from 'pg';
import { DEFAULT_ACQUIRE_TIMEOUT_MS, DEFAULT_POOL_SIZE, DEFAULT_STATEMENT_TIMEOUT_MS } from '../config/db-defaults.ts';
import { asUnavailable, DbUnavailableError } from './errors.ts';
import { listen } from './listener.ts';
import type { Db, Queryable } from './types.ts';

export interface PostgresOptions {
  max?: number;
  acquireTimeoutMs?: number;
  /** 0 = no statement timeout. */
  statementTimeoutMs?: number;
}

const OID = {
  numeric: 1700,
  numericArray: 1231,
  timestamp: 1114,
  timestamptz: 1184,
  timestampArray: 1115,
  timestamptzArray: 1185,
  interval: 1186,
  intervalArray: 1187,
  textArray: 1009,
};
const asText = (v: string) => v;
const textArray = pg.types.getTypeParser(OID.textArray, 'text') as (v: string) => string[];
const OVERRIDES: Record<number, (v: string) => unknown> = {
  [OID.timestamptz]: asText,
  [OID.timestamp]: asText,
  [OID.interval]: asText,
  [OID.timestamptzArray]: textArray,
  [OID.timestampArray]: textArray,
  [OID.intervalArray]: textArray,
  [OID.numeric]: Number,
  [OID.numericArray]: (v) => textArray(v).map((x) => (x === null ? null : Number(x))),
};
/** Result parsers of this backend (per pool, not pg's global registry). */
const types = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    (format ?? 'text') === 'text' && OVERRIDES[oid] ? OVERRIDES[oid] : pg.types.getTypeParser(oid, format ?? 'text')) as typeof pg.types.getTypeParser,
};

/** The prepared statement's name of a query text (cached; bounded by the fixed templates). */
const names = new Map<string, string>();
function statementName(text: string): string {
  let name = names.get(text);
  if (!name) {
    name = `svc_${createHash('sha1').update(text).digest('hex')}`;
    if (names.size >= 10_000) names.clear();
    names.set(text, name);
  }
  return name;
}

/**
 * Rows of a query result (a simple-protocol script returns one result per statement: the last),
 * in a new array; pg's own array is emptied.
 *
 * Why the copy: pg's Query and Result objects live from the query's start to its end, so under
 * load a scavenge often catches them in flight and promotes them to V8's old generation; the rows
 * parsed afterwards are young, and the old (soon dead) result array pointing at them keeps them
 * alive through the next scavenge, which then promotes them too. A results page (~26 KiB of JSON
 * text) took that path on most requests: old space grew by ~1.5 MB per scavenge and a
 * mark-compact paused the server every ~0.1–0.4 s (bench/README.md, "Results API"). With pg's
 * array emptied the rows die young. Measured on a bare pg.Client loop of 26 KB rows, 4 at a time:
 * 51 → 3 mark-compacts in 3 s, promoted bytes per scavenge 1.5 MB → 30 KB.
 */
function rowsOf<T>(result: pg.QueryResult | pg.QueryResult[]): T[] {
  const last = Array.isArray(result) ? result[result.length - 1] : result;
  if (!last?.rows) return [];
  const rows = last.rows.slice() as T[];
  last.rows.length = 0;
  return rows;
}

async function run<T>(client: pg.PoolClient, text: string, params: unknown[] = []): Promise<T[]> {
  const result = params.length > 0 ? await client.query({ name: statementName(text), text, values: params }) : await client.query(text);
  return rowsOf<T>(result as pg.QueryResult | pg.QueryResult[]);
}

export function openPostgres(url: string, options: PostgresOptions = {}): Db {
  const statementTimeout = options.statementTimeoutMs ?? DEFAULT_STATEMENT_TIMEOUT_MS;
  const connection: pg.ClientConfig = {
    connectionString: url,
    application_name: 'svc',
    // TCP keepalive after 10 s idle, so a peer that vanished (no FIN: a partition, a frozen
    // host) is noticed on idle and LISTEN connections too, not after Linux's 2-hour default.
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
    types,
    ...(statementTimeout > 0 && { statement_timeout: statementTimeout, query_timeout: statementTimeout + 1000 }),
  };
  const pool = new pg.Pool({
    ...connection,
    max: options.max ?? DEFAULT_POOL_SIZE,
    connectionTimeoutMillis: options.acquireTimeoutMs ?? DEFAULT_ACQUIRE_TIMEOUT_MS,
    idleTimeoutMillis: 30_000,
  });
  // An idle connection that dies (server restart) is removed by the pool; nothing to do.
  pool.on('error', () => {});
  let closing: Promise<void> | undefined;

  /**
   * Run `fn` on a connection of the pool; the connection goes back to the pool, or is destroyed
   * when it broke (its socket failed, or the error says the database is unavailable).
   */
  async function withClient<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await pool.connect();
    } catch (err) {
      throw new DbUnavailableError(err);
    }
    let broken: unknown;
    const onError = (err: unknown) => {
      broken = err;
    };
    client.on('error', onError);
    try {
      return await fn(client);
    } catch (err) {
      const e = asUnavailable(err);
      if (e instanceof DbUnavailableError) broken ??= err;
      throw broken !== undefined && !(e instanceof DbUnavailableError) ? new DbUnavailableError(err) : e;
    } finally {
      client.off('error', onError);
      client.release(broken instanceof Error ? broken : broken === undefined ? undefined : new Error(String(broken)));
    }
  }

  const onClient = (client: pg.PoolClient): Queryable => ({
    query: <T>(text: string, params?: unknown[]) => run<T>(client, text, params),
    async exec(script: string) {
      await client.query(script);
    },
  });

  return {
    kind: 'postgres',
    query: <T>(text: string, params?: unknown[]) => withClient((client) => run<T>(client, text, params)),
    exec: (script) => withClient(async (client) => void (await client.query(script))),
    transaction: <T>(fn: (tx: Queryable) => Promise<T>) =>
      withClient(async (client) => {
        await client.query('begin');
        let result: T;
        try {
          result = await fn(onClient(client));
        } catch (err) {
          // A rollback on a broken connection fails too: the connection is dropped either way.
          await client.query('rollback').catch(() => {});
          throw err;
        }
        await client.query('commit');
        return result;
      }),
    listen: (channel, onNotify, onListen) => listen(connection, channel, onNotify, onListen),
    async dedicatedClient(applicationName: string) {
      const { statement_timeout: _s, query_timeout: _q, ...rest } = connection;
      // As the pool's: a server that does not answer fails the connect within the acquire bound.
      const client = new pg.Client({
        ...rest,
        application_name: applicationName,
        connectionTimeoutMillis: options.acquireTimeoutMs ?? DEFAULT_ACQUIRE_TIMEOUT_MS,
      });
      try {
        await client.connect();
      } catch (err) {
        throw new DbUnavailableError(err);
      }
      return client;
    },
    poolStats: () => ({ max: pool.options.max, open: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    // Idempotent, as the embedded backend's (pg-pool throws on a second end()).
    close: () => (closing ??= pool.end()),
  };
}
