/**
 * Embedded backend: PGlite (PostgreSQL compiled to WASM) in a data folder, or in memory
 * when `dataDir` is undefined (tests). PGlite is one connection: its own mutex serialises
 * transactions, so `transaction()` is safe under concurrent requests.
 *
 * Memory (issue #24; measured in bench/embedded.ts, explained in docs/operations.md "Memory"). Two
 * things made an embedded server peak near 1 GiB and idle near 400 MiB:
 *
 * - V8's optimising compiler. V8 runs WebAssembly through its baseline compiler (Liftoff) and
 *   recompiles hot functions with TurboFan in the background. One of PostgreSQL's functions
 *   (~105 KB of WASM, function #2272 of PGlite 0.5's module, hot in every parse) takes TurboFan
 *   ~600 MB of compiler memory and ~4 s of a core (`node --trace-wasm-compilation-times`), which
 *   showed as a ~500 MiB spike a few seconds after every start. `wasmBaselineOnly()` turns the
 *   tier-up off (V8 flags `--no-wasm-tier-up --no-wasm-dynamic-tiering`, process-wide) before the
 *   first PGlite compiles its module: a start peaks ~500 MiB lower and costs ~1 s less CPU. The
 *   price: warm WASM-heavy work runs ~35 % more CPU on Liftoff (catalog-heavy transactions; the
 *   demo's whole tour, compile included, used less CPU than with TurboFan). An operator who wants
 *   the optimising tier back starts Node.js with a tiering flag of their own (`wasmBaselineOnly`).
 *   (Measured: bench/README.md, "The embedded service".)
 * - `shared_buffers`: initdb writes PostgreSQL's default 128MB, and PGlite's shared memory is
 *   WASM heap that is touched (zeroed) at start, so it is resident from the first second. The data
 *   folder's reads go through the OS page cache anyway (PGlite's NODEFS reads with pread), so
 *   16MB (`SHARED_BUFFERS`) costs a system call per page missed, not a disk read; ~110 MiB less.
 *
 * Checkpoints (issue #24: ready within 5 s of a restart after kill -9). PGlite runs PostgreSQL in
 * single-user mode, which has no checkpointer: nothing ever checkpoints between the start and a
 * clean close (`checkpoint_timeout` and `max_wal_size` are the checkpointer's), so the WAL grows
 * without bound and a restart after kill -9 replays everything written since the process started
 * (~2 s for 128 MB here). On a data folder, `openPglite` therefore checks every `everyMs` and runs
 * `CHECKPOINT` once the WAL since the last checkpoint's redo point reaches `walBytes`, or after
 * `maxAgeMs` with anything written: PostgreSQL's own defaults' job (5 min, and far less than
 * max_wal_size's 1 GB, to keep the replay to a second or so).
 */
import { PGlite, types } from '@electric-sql/pglite';
import { setFlagsFromString } from 'node:v8';
import type { Db, Queryable } from './types.ts';

const rawText = (value: string) => value;
const parsers = { [types.TIMESTAMPTZ]: rawText, [types.TIMESTAMP]: rawText, [types.NUMERIC]: Number };

/** PostgreSQL's shared buffer pool in the embedded database (PostgreSQL's own default: 128MB). */
export const SHARED_BUFFERS = '16MB';

/** PGlite's start parameters: its defaults (single-user mode, no parallel workers) and a smaller buffer pool. */
const START_PARAMS = [...PGlite.defaultStartParams, '-c', `shared_buffers=${SHARED_BUFFERS}`];

let baselineOnly = false;

/** A tiering flag given to Node.js on its command line or in NODE_OPTIONS: the operator's choice, kept. */
const TIERING_FLAG = /--(no-)?wasm[-_](tier[-_]up|dynamic[-_]tiering)\b|--liftoff[-_]only\b/;

/**
 * Keep WebAssembly on V8's baseline compiler for the rest of the process (see the header): the
 * flags are read when a module's functions are compiled, so this runs before PGlite's first
 * compile. Idempotent. Process-wide: it also applies to the few other WASM modules Node.js loads
 * (undici's HTTP parser), which run little code. A process started with a tiering flag of its own
 * (`node --wasm-dynamic-tiering dist/main.js`: the optimising tier back, for more throughput at
 * ~500 MiB more peak memory) is left as it was started.
 */
export function wasmBaselineOnly(): void {
  if (baselineOnly) return;
  baselineOnly = true;
  if (TIERING_FLAG.test(`${process.execArgv.join(' ')} ${process.env.NODE_OPTIONS ?? ''}`)) return;
  setFlagsFromString('--no-wasm-tier-up');
  setFlagsFromString('--no-wasm-dynamic-tiering');
}

/** The embedded database; `dumpDataDir` is PGlite's: the data directory as an uncompressed tarball. */
export interface PgliteDb extends Db {
  dumpDataDir(): Promise<Blob>;
}

/** When an embedded database on a data folder checkpoints (see the header); milliseconds and bytes. */
export interface CheckpointPolicy {
  /** How often the WAL written since the last checkpoint is looked at (default 10 s). */
  everyMs: number;
  /** Checkpoint once this much WAL was written since the last checkpoint's redo point (default 16 MiB). */
  walBytes: number;
  /** Checkpoint when this long has passed since the last one and anything was written (default 5 min). */
  maxAgeMs: number;
}

export const CHECKPOINTS: CheckpointPolicy = { everyMs: 10_000, walBytes: 16 * 2 ** 20, maxAgeMs: 5 * 60_000 };

/** WAL written since the last checkpoint's redo point, in bytes (a checkpoint itself leaves ~100). */
const WAL_SINCE_REDO = 'select pg_wal_lsn_diff(pg_current_wal_insert_lsn(), redo_lsn)::float8 as bytes from pg_control_checkpoint()';
/** Below this, the WAL since the redo point is the last checkpoint's own record: nothing was written. */
const CHECKPOINT_RECORD_BYTES = 4096;

/**
 * Open PGlite in `dataDir`, or in memory when it is undefined. `from`: a data directory dumped by
 * `dumpDataDir` to start from instead of an empty cluster (PGlite's `loadDataDir`; it skips
 * initdb — the tests start each in-memory database from one migrated dump, test/helpers).
 * `checkpoints`: when a database on a data folder checkpoints (an in-memory one never needs to).
 */
export async function openPglite(dataDir?: string, from?: Blob, checkpoints: CheckpointPolicy = CHECKPOINTS): Promise<PgliteDb> {
  wasmBaselineOnly();
  const pg = await PGlite.create({
    parsers,
    startParams: START_PARAMS,
    ...(dataDir ? { dataDir } : {}),
    ...(from ? { loadDataDir: from } : {}),
  });
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
  const stopCheckpoints = dataDir ? checkpointEvery(checkpoints, (text) => counted(() => top.query<{ bytes: number }>(text))) : async () => {};
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
    close: async () => {
      await stopCheckpoints();
      await pg.close();
    },
  };
}

/**
 * Run `policy` (see the header) with `query`; returns how to stop it (waits for a checkpoint under
 * way). A failed look or checkpoint is tried again at the next tick: the next clean close
 * checkpoints anyway.
 */
function checkpointEvery(policy: CheckpointPolicy, query: (text: string) => Promise<{ bytes: number }[]>): () => Promise<void> {
  let last = Date.now();
  let running: Promise<void> | undefined;
  const tick = async () => {
    const [{ bytes } = { bytes: 0 }] = await query(WAL_SINCE_REDO);
    if (bytes >= policy.walBytes || (bytes > CHECKPOINT_RECORD_BYTES && Date.now() - last >= policy.maxAgeMs)) {
      await query('checkpoint');
      last = Date.now();
    }
  };
  const timer = setInterval(() => {
    running ??= tick()
      .catch(() => {})
      .finally(() => {
        running = undefined;
      });
  }, policy.everyMs);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await running;
  };
}
