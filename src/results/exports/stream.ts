/**
 * Running one export against the database, streamed with backpressure.
 *
 * The snapshot: the sync horizon H is taken first (svc.results_sync_horizon, migration 0020: no
 * transaction still writing started before it, so every row changed before H is committed), then
 * a REPEATABLE READ, READ ONLY transaction takes its snapshot — after H, so it holds every row
 * changed before H; one that also holds a change made after H is taken again (`openSnapshot`) —
 * then `svc.results_enter(tenant)` switches it to the read-only role `svc_results` with the key's
 * tenant set, so row-level security confines every row as in the list endpoints. The export is the rows changed before H (and at or after `updated_since`), H is
 * the watermark: `?updated_since=H` later returns exactly what changed since.
 *
 * PostgreSQL: a connection of its own (outside the pool, none of the pool's statement timeouts);
 * NDJSON and CSV are a binary `COPY … TO STDOUT` (pg-copy-streams) whose tuples binary-copy.ts
 * writes as records as they come (learners' NDJSON: a text COPY piped as it is); Parquet is a
 * binary COPY too, its tuples gathered into Arrow batches that parquet.ts writes. A client that
 * goes away cancels the backend's query (pg_cancel_backend from the pool) and closes the
 * connection at once. One export per API key
 * across processes: a session advisory lock on that connection (and, in a process, the `running`
 * slots, which let a key's next export wait for one whose client just left).
 * PGlite: batches in keyset order, each its own short transaction (see `startPglite`).
 */
import { PassThrough, Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { to as copyTo } from 'pg-copy-streams';
import type { Db } from '../../db/index.ts';
import { ApiError } from '../../http/api-errors.ts';
import { rfc3339 } from '../../db/sql.ts';
import { exportSource } from '../queries.ts';
import { COLUMNS, type ExportName } from './columns.ts';
import { binaryRecords, copyStatement, csvHeader, csvRecords, keysetSelect, PARQUET_BATCH_ROWS, type Format, type Slice, usesBinaryCopy } from './formats.ts';

/** Rows per PGlite keyset batch at most (NDJSON, CSV; Parquet: PARQUET_BATCH_ROWS). */
export const BATCH_ROWS = 10_000;

/** Rows of a PGlite export's first keyset batch, before any row's width is known. */
const FIRST_BATCH_ROWS = 64;

/** Text a PGlite keyset batch aims at, in bytes (UTF-16 code units of its values). */
const BATCH_TEXT_BYTES = 4 << 20;

/**
 * The rows of a PGlite export's next keyset batch: BATCH_TEXT_BYTES over the last batch's text per
 * row, at least 1, at most `max` and at most 8× the last batch (rows may widen as the export goes
 * on). PGlite materialises a batch in its WebAssembly memory, which never shrinks, and again in
 * JavaScript: counted in rows alone, 10,000 rows of megabyte texts would be gigabytes.
 */
export function nextBatchRows(last: number, textBytes: number, max: number): number {
  if (last === 0) return Math.min(FIRST_BATCH_ROWS, max);
  const perRow = Math.max(1, textBytes / last);
  return Math.max(1, Math.min(max, last * 8, Math.floor(BATCH_TEXT_BYTES / perRow)));
}

/** The text in a batch's values (string lengths: bytes for ASCII; PGlite's parsed JSON values as their JSON text). */
function textOf(rows: Batch): number {
  let n = 0;
  for (const row of rows) {
    for (const k in row) {
      const v: unknown = row[k];
      n += typeof v === 'string' ? v.length : v == null ? 0 : JSON.stringify(v).length;
    }
  }
  return n;
}

/** The Parquet writer (apache-arrow and parquet-wasm: ~30 MiB of RSS): loaded at start on PostgreSQL (routes.ts), with the first Parquet export on PGlite. */
export const loadParquet = () => import('./parquet.ts');

export interface ExportRequest {
  name: ExportName;
  format: Format;
  tenantId: string;
  keyId: string;
  since?: string;
  /** Exports running at once in this process, all keys together (`SVC_EXPORTS_MAX`). */
  max: number;
  /** Aborted when the client leaves while the export starts: the backend's statement is cancelled (PostgreSQL). */
  signal?: AbortSignal;
}

export interface RunningExport {
  /** The watermark (RFC 3339 UTC µs): continue with `?updated_since=` it. */
  watermark: string;
  /** The body. Errors after the start destroy it (the route then aborts the connection). */
  body: Readable;
  /** Rows sent so far. */
  rows(): number;
  /**
   * Resolves once the key's slot is free again (PostgreSQL: the export's connection, which holds
   * the key's advisory lock, is closed): an error answer waits for it, so a client that retries
   * at once is not refused as a second export of its key.
   */
  released: Promise<void>;
}

/** `svc.results_sync_horizon()` as RFC 3339, or null while a writer hides its start (-infinity). */
const HORIZON_SQL = `select case when isfinite(h) then ${rfc3339('h')} end as horizon
from (select svc.results_sync_horizon() as h) x`;

const noHorizon = () =>
  new ApiError('unavailable', 'a transaction that hides its start is writing: no consistent watermark can be given now; retry shortly', undefined, 1);

/** Snapshots taken, at most, to find one that is exact (see `openSnapshot`), a pause of up to 5 ms between. */
const SNAPSHOT_TRIES = 50;

/**
 * True when the snapshot holds a change of the tenant made at or after `horizon` (committed
 * between the horizon and the snapshot): its row shows in the new version, which the export
 * leaves out, and the version before the horizon is gone.
 */
function overlapSql(name: ExportName): string {
  const { table, updatedColumn } = exportSource(name);
  return `select exists (select 1 from ${table} where tenant_id = $1 and ${updatedColumn} >= $2::timestamptz)
    or exists (select 1 from deletions where tenant_id = $1 and deleted_at >= $2::timestamptz) as overlap`;
}

/**
 * Open the export's REPEATABLE READ, READ ONLY transaction on `client` as the key's tenant
 * (svc_results, RLS) and return its watermark H (RFC 3339 UTC µs). H is the sync horizon taken
 * just before (svc.results_sync_horizon, migration 0020: every row version written before it is
 * committed, so the snapshot holds them all; whatever the snapshot misses comes with the next
 * pull). A change of the tenant committed between H and the snapshot (`overlapSql`) would show
 * in its new version, left out, with the version before H gone: such a snapshot is taken again,
 * 1–5 ms later, up to SNAPSHOT_TRIES times, and the last one kept — that change then comes only
 * with the next pull (`updated_since=<watermark>`). Throws a 503 ApiError when no watermark can
 * be given (a writer hides its start).
 */
async function openSnapshot(client: import('pg').Client, req: ExportRequest): Promise<string> {
  for (let attempt = 1; ; attempt++) {
    const horizon = (await client.query<{ horizon: string | null }>(HORIZON_SQL)).rows[0]?.horizon;
    if (!horizon) throw noHorizon();
    await client.query('begin isolation level repeatable read, read only');
    // Neither the lists' statement timeout nor an operator's idle-in-transaction timeout applies:
    // a Parquet export is idle in its transaction between fetches while the client reads.
    await client.query('set local statement_timeout = 0; set local idle_in_transaction_session_timeout = 0');
    await client.query('select svc.results_enter($1::uuid, false)', [req.tenantId]);
    const [o] = (await client.query<{ overlap: boolean }>(overlapSql(req.name), [req.tenantId, horizon])).rows;
    if (!o?.overlap || attempt === SNAPSHOT_TRIES) return horizon;
    await client.query('rollback');
    await sleep(1 + Math.random() * 4); // out of step with writers that overlap at a steady rhythm
  }
}

/** An export's hold on its key: `released` resolves once it is free; `ending` once its client left or it failed. */
interface Slot {
  released: Promise<void>;
  ending: boolean;
}

/** Keys with an export running in this process. */
const running = new Map<string, Slot>();

/**
 * Longest wait, ms, of a key's new export for the key's previous one to finish ending (its client
 * left — a `break` out of the client's loop — and the connection is being closed): without it the
 * client's next export at once would be refused for the few milliseconds the old one takes to end.
 */
const ENDING_WAIT_MS = 2000;

/**
 * Wait, ms, of a key's second export for the server to notice that the first one's client left,
 * before it is refused: ms on an idle machine, but over 100 ms seen on a loaded one.
 */
const NOTICE_WAIT_MS = 500;

/** Seconds an export refused for either limit is told to wait. */
const BUSY_RETRY_AFTER_SECONDS = 5;

/** An export refused before it started, with Retry-After: a second of one key (429) or one over the process's limit (503). */
export class ExportRefused extends ApiError {}

/** Refuse a second export of one key. */
const busy = () =>
  new ExportRefused('rate_limited', 'an export is already running for this API key: one at a time per key', undefined, BUSY_RETRY_AFTER_SECONDS);

/**
 * A readable fed by `produce(write)`: `write(chunk)` resolves once the consumer wants more
 * (backpressure) and rejects once the stream was destroyed (the client left). When `produce`
 * returns the stream ends; when it throws the stream is destroyed with that error.
 */
function producer(produce: (write: (chunk: Buffer | string) => Promise<void>) => Promise<void>, onDestroy: () => void): Readable {
  let wake: (() => void) | undefined;
  let gone = false;
  const stream = new Readable({
    read() {
      const w = wake;
      wake = undefined;
      w?.();
    },
    destroy(err, cb) {
      gone = true;
      const w = wake;
      wake = undefined;
      w?.();
      onDestroy();
      cb(err);
    },
  });
  const write = async (chunk: Buffer | string) => {
    if (gone) throw new Error('export: the client went away');
    if (chunk.length === 0) return;
    if (!stream.push(chunk)) await new Promise<void>((resolve) => (wake = resolve));
    if (gone) throw new Error('export: the client went away');
  };
  produce(write).then(
    () => {
      if (!gone) stream.push(null);
    },
    (err: unknown) => {
      if (!gone) stream.destroy(err instanceof Error ? err : new Error(String(err)));
    },
  );
  return stream;
}

type Batch = Record<string, string | null>[];

/** Write the NDJSON lines or CSV records of the batches `fetch` reads, until an empty one (PGlite). Counts rows. */
async function writeRows(
  fetch: () => Promise<Batch>,
  req: ExportRequest,
  write: (chunk: Buffer | string) => Promise<void>,
  count: (n: number) => void,
): Promise<void> {
  if (req.format === 'csv') await write(csvHeader(req.name));
  for (;;) {
    const rows = await fetch();
    if (rows.length === 0) break;
    count(rows.length);
    if (req.format === 'csv') await write(csvRecords(req.name, rows));
    else await write(`${rows.map((r) => r.line).join('\n')}\n`);
  }
}

/**
 * Start an export: checks the one-per-key rule (429) and the process's limit (503), takes the
 * watermark and the snapshot, and returns once the first byte can be sent. Throws an ApiError
 * (429, 503, both with Retry-After) before any row.
 */
export async function startExport(db: Db, req: ExportRequest): Promise<RunningExport> {
  const previous = running.get(req.keyId);
  if (previous) {
    // The key's export may be one whose client just left (a `break` out of the client's loop, then
    // the next export at once): let the server notice, then let it end — ENDING_WAIT_MS at most.
    const wasEnding = previous.ending;
    await Promise.race([previous.released, sleep(wasEnding ? ENDING_WAIT_MS : NOTICE_WAIT_MS, undefined, { ref: false })]);
    if (!wasEnding && previous.ending && running.get(req.keyId) === previous) {
      await Promise.race([previous.released, sleep(ENDING_WAIT_MS, undefined, { ref: false })]);
    }
  }
  if (running.has(req.keyId)) throw busy();
  if (running.size >= req.max) {
    throw new ExportRefused('unavailable', `${running.size} exports are running on this server, its limit: retry shortly`, undefined, BUSY_RETRY_AFTER_SECONDS);
  }
  let onReleased!: () => void;
  const slot: Slot = { released: new Promise<void>((resolve) => (onReleased = resolve)), ending: false };
  running.set(req.keyId, slot);
  const release = () => {
    if (running.get(req.keyId) !== slot) return;
    running.delete(req.keyId);
    onReleased();
  };
  const { released } = slot;
  try {
    const started = db.dedicatedClient ? await startPostgres(db, req, release, () => (slot.ending = true)) : await startPglite(db, req, release);
    return { ...started, released };
  } catch (err) {
    release();
    throw err;
  }
}

async function startPostgres(db: Db, req: ExportRequest, release: () => void, ending: () => void): Promise<Omit<RunningExport, 'released'>> {
  const client = await db.dedicatedClient!('svc-export');
  client.on('error', () => {});
  let rows = 0;
  let ended = false;
  // The backend's own pid (behind a pooler, the protocol's BackendKeyData pid is the pooler's).
  let pid: number | undefined;
  /** Cancel the backend's query (from the pool) and drop the connection: the client left or failed. */
  // The key's slot (and a place under SVC_EXPORTS_MAX) is released only once the connection is
  // closed: until then it still counts against the database's connections.
  const close = () =>
    client
      .end()
      .catch(() => {})
      .finally(release);
  let aborted: Promise<void> | undefined;
  /** Resolves once the connection is closed (and the slot released). */
  const abort = (): Promise<void> => {
    if (ended) return aborted ?? Promise.resolve();
    ended = true;
    ending();
    aborted = (pid === undefined ? Promise.resolve() : db.query('select pg_cancel_backend($1)', [pid]))
      .then(
        () => {},
        () => {},
      )
      .finally(close);
    return aborted;
  };
  /** Close the connection after COMMIT and the advisory unlock; resolves once the slot is released. */
  const finish = async () => {
    if (ended) return;
    ended = true;
    await close();
  };
  // A client that leaves while the export starts (the snapshot, a DECLARE waiting on a lock) ends
  // it as one that leaves mid-stream does; once started, the body's destruction does (`producer`, 'close').
  const leave = () => void abort();
  req.signal?.addEventListener('abort', leave, { once: true });
  try {
    const [lock] = (
      await client.query<{ ok: boolean; pid: number }>(`select pg_try_advisory_lock(hashtextextended('svc-export:' || $1, 0)) as ok, pg_backend_pid() as pid`, [
        req.keyId,
      ])
    ).rows;
    pid = lock?.pid;
    if (req.signal?.aborted) void abort(); // before the pid was known: cancel now
    if (!lock?.ok) throw busy();
    const horizon = await openSnapshot(client, req);
    const slice: Slice = { tenantId: req.tenantId, horizon, since: req.since };
    const parquet = req.format === 'parquet' ? await loadParquet() : undefined;
    const copy = client.query(copyTo(copyStatement(req.name, req.format, slice)));
    // The body ends only after COMMIT and the advisory unlock: a client that saw the end may
    // start its next export at once.
    const out = new PassThrough();
    // A binary COPY's rows written as a Parquet file (parquet.ts), CSV records or NDJSON lines
    // (binary-copy.ts), counted as written; learners' NDJSON lines counted (JSON text holds no raw LF).
    const count = (n: number) => (rows += n);
    const binary = usesBinaryCopy(req.name, req.format);
    const source =
      req.format === 'parquet'
        ? copy.pipe(parquet!.parquetFromBinaryCopy(COLUMNS[req.name], count))
        : binary
          ? copy.pipe(binaryRecords(req.name, req.format, count))
          : copy;
    if (binary) source.on('error', (err) => out.destroy(err));
    else {
      source.on('data', (chunk: Buffer) => {
        for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) rows += 1;
      });
    }
    source.pipe(out, { end: false });
    source.on('end', () => {
      client
        .query('commit')
        .then(() => client.query('select pg_advisory_unlock_all()'))
        .then(finish)
        .then(
          () => out.end(),
          (err: Error) => out.destroy(err),
        );
    });
    copy.on('error', (err) => {
      if (source !== copy) source.destroy(err);
      out.destroy(err);
    });
    out.on('close', () => {
      if (!out.writableFinished) void abort();
    });
    return { watermark: horizon, body: out, rows: () => rows };
  } catch (err) {
    await abort(); // the slot is free when the error is answered
    throw err;
  } finally {
    req.signal?.removeEventListener('abort', leave);
  }
}

/**
 * PGlite: one connection, one transaction at a time — a transaction held while a slow client
 * reads would stop every other request of the embedded service. So each batch is its own short
 * transaction (as svc_results for the tenant), sized by the text of the one before
 * (`nextBatchRows`), in keyset order (updated_at, id) below the
 * horizon taken first. Every row unchanged during the export comes exactly once; a row changed
 * or deleted during it moves past the watermark (updated_at / deleted_at ≥ it), so the next pull
 * with `updated_since=<watermark>` carries the change. (PostgreSQL gives one snapshot.)
 */
async function startPglite(db: Db, req: ExportRequest, release: () => void): Promise<Omit<RunningExport, 'released'>> {
  const [h] = await db.query<{ horizon: string | null }>(HORIZON_SQL);
  if (!h?.horizon) throw noHorizon();
  const text = keysetSelect(req.name, req.format, { tenantId: req.tenantId, horizon: h.horizon, since: req.since });
  let after = { at: '-infinity', id: '00000000-0000-0000-0000-000000000000' };
  let rows = 0;
  const max = req.format === 'parquet' ? PARQUET_BATCH_ROWS : BATCH_ROWS;
  let size = nextBatchRows(0, 0, max);
  const batch = async (): Promise<Batch> => {
    const got = await db.transaction(async (tx) => {
      await tx.query('select svc.results_enter($1::uuid, false)', [req.tenantId]);
      return tx.query<Batch[number]>(text, [after.at, after.id, size]);
    });
    const last = got.at(-1);
    if (last) after = { at: last.k_ts!, id: last.k_id! };
    if (got.length > 0) size = nextBatchRows(got.length, textOf(got), max);
    return got;
  };
  const names = COLUMNS[req.name].map((c) => c.name);
  const cells = async () => (await batch()).map((r) => names.map((n) => r[n]));
  const parquet = req.format === 'parquet' ? await loadParquet() : undefined;
  const body = producer(async (write) => {
    try {
      const count = (n: number) => (rows += n);
      if (parquet) {
        for await (const chunk of parquet.parquetFromRows(COLUMNS[req.name], cells, count))
          await write(Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength));
      } else await writeRows(batch, req, write, count);
    } finally {
      release();
    }
  }, release);
  return { watermark: h.horizon, body, rows: () => rows };
}
