/**
 * The small database interface both backends implement (DESIGN §2).
 *
 * - `query(text, params)` runs one statement with `$1…$n` parameters and returns its rows.
 * - `transaction(fn)` runs `fn` inside BEGIN … COMMIT on one connection; a throw rolls back.
 * - `exec(script)` runs a multi-statement script without parameters (migrations).
 * - `listen(channel, onNotify)` receives NOTIFY payloads (cache invalidation across processes).
 *
 * Both backends return `timestamptz` columns as PostgreSQL's text (microseconds kept):
 * a JS `Date` rounds to milliseconds and would break keyset cursors. Surfaces that answer
 * clients build their JSON in SQL (`json_build_object`), which formats timestamps as RFC 3339.
 */
export type Row = Record<string, unknown>;

export interface Queryable {
  query<T = Row>(text: string, params?: unknown[]): Promise<T[]>;
  /** Run a multi-statement script without parameters (migrations, fixtures). */
  exec(script: string): Promise<void>;
}

export interface Db extends Queryable {
  /** `pglite` (embedded, one connection) or `postgres` (a server, a pool). */
  readonly kind: 'pglite' | 'postgres';
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  /**
   * LISTEN on `channel`: `onNotify(payload)` runs for each NOTIFY committed on it (by any
   * process on the same database). `onListen` runs each time the listen is (re-)established —
   * PostgreSQL: first connect and every reconnect of the dedicated listen connection, after
   * which notices sent while it was down are lost (so a cache should start over there).
   * Resolves once listening, with a function that stops it.
   */
  listen(channel: string, onNotify: (payload: string) => void, onListen?: () => void): Promise<() => Promise<void>>;
  /**
   * PostgreSQL only: a new connection of its own, outside the pool and without the pool's
   * statement and read timeouts (long streaming reads: the exports of src/results/exports). The
   * caller ends it. Undefined on PGlite (one connection: use `transaction`).
   */
  dedicatedClient?(applicationName: string): Promise<import('pg').Client>;
  /** The connections right now (metrics): open ones, idle ones, requests waiting for one, the bound. */
  poolStats(): PoolStats;
  close(): Promise<void>;
}

/** A pool's counts at one moment. PGlite is one connection: `open` 1, `idle` 0 while it works. */
export interface PoolStats {
  max: number;
  open: number;
  idle: number;
  waiting: number;
}
