/**
 * Embedded backend: PGlite (PostgreSQL compiled to WASM) in a data folder, or in memory
 * when `dataDir` is undefined (tests). PGlite is one connection: its own mutex serialises
 * transactions, so `transaction()` is safe under concurrent requests.
 */
import { PGlite, types } from '@electric-sql/pglite';
import type { Db, Queryable } from './types.ts';

const rawText = (value: string) => value;
const parsers = { [types.TIMESTAMPTZ]: rawText, [types.TIMESTAMP]: rawText, [types.NUMERIC]: Number };

/** The embedded database; `dumpDataDir` is PGlite's: the data directory as an uncompressed tarball. */
export interface PgliteDb extends Db {
  dumpDataDir(): Promise<Blob>;
}

/**
 * Open PGlite in `dataDir`, or in memory when it is undefined. `from`: a data directory dumped by
 * `dumpDataDir` to start from instead of an empty cluster (PGlite's `loadDataDir`; it skips
 * initdb — the tests start each in-memory database from one migrated dump, test/helpers).
 */
export async function openPglite(dataDir?: string, from?: Blob): Promise<PgliteDb> {
  const pg = await PGlite.create({ parsers, ...(dataDir ? { dataDir } : {}), ...(from ? { loadDataDir: from } : {}) });
  // Operations started and not finished (PGlite runs one at a time; the rest wait): for poolStats.
  let inFlight = 0;
  const counted = async <T>(work: () => Promise<T>): Promise<T> => {
    inFlight++;
    try {
      return await work();
    } finally {
      inFlight--;
    }
  };
  const wrap = (q: Pick<PGlite, 'query' | 'exec'>): Queryable => ({
    async query<T>(text: string, params: unknown[] = []) {
      return (await q.query<T>(text, params)).rows;
    },
    async exec(script: string) {
      await q.exec(script);
    },
  });
  const top = wrap(pg);
  return {
    kind: 'pglite',
    query: (text, params) => counted(() => top.query(text, params)),
    exec: (script) => counted(() => top.exec(script)),
    transaction: (fn) => counted(() => pg.transaction((tx) => fn(wrap(tx)))),
    poolStats: () => ({ max: 1, open: 1, idle: inFlight > 0 ? 0 : 1, waiting: Math.max(0, inFlight - 1) }),
    // One in-process connection: it never drops, so onListen runs once.
    async listen(channel, onNotify, onListen) {
      const stop = await pg.listen(channel, onNotify);
      onListen?.();
      return () => stop();
    },
    dumpDataDir: () => pg.dumpDataDir('none'),
    close: () => pg.close(),
  };
}
