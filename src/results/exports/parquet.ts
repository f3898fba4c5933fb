/**
 * Parquet files of an export: Apache Arrow record batches built here from the rows, written as
 * one Parquet file by parquet-wasm (the Apache Arrow project's Rust Parquet writer, arrow-rs,
 * compiled to WebAssembly), in row groups of at most 4,096 rows or 8 MiB.
 *
 * Why not a JavaScript writer: hyparquet-writer took a JavaScript value per cell and encoded it in
 * JavaScript (~5 µs a row of activity results, the Node thread's bound), and its garbage was the
 * export's memory (bench/README.md "Streaming exports"). Here a batch's columns are typed arrays
 * filled straight from PostgreSQL's binary COPY (`parquetFromBinaryCopy`: uuids written as their
 * text, timestamps' int8 moved to the Unix epoch, numbers and text copied; no object per value),
 * handed to arrow-rs as one Arrow IPC message (apache-arrow's writer) and encoded in WebAssembly.
 * PGlite's rows (JavaScript values from its cursor-like keyset batches) go into the same arrays
 * (`parquetFromRows`).
 *
 * The file: ids and strings as UTF8 strings, timestamps INT64 TIMESTAMP(MICROS, isAdjustedToUTC),
 * `int` INT32, `float` DOUBLE, nested values as their JSON text in UTF8 strings (arrow-rs as
 * parquet-wasm builds it writes no JSON annotation), ZSTD pages, dictionary encoding where it pays,
 * statistics and page indexes as arrow-rs writes them by default; ±infinity timestamps as null (as
 * the NDJSON and CSV exports write them). DuckDB, pyarrow / pandas, Spark and hyparquet read it.
 *
 * An error of the source (the COPY failing, the client cancelling) must not end in a valid file:
 * parquet-wasm's stream writer ends its file cleanly when its input stream fails, so the input's
 * failure is remembered and rethrown in place of the footer (`parquetChunks`).
 *
 * Loaded by `import('./parquet.ts')` (stream.ts `loadParquet`): at start on PostgreSQL, with the
 * first Parquet export on the embedded service — apache-arrow and the WebAssembly module take
 * ~30 MiB of RSS that it need not spend before.
 */
import { Duplex } from 'node:stream';
import { ReadableStream } from 'node:stream/web';
import { Field, Float64, Int32, makeData, RecordBatch, RecordBatchStreamWriter, Schema, Struct, TimestampMicrosecond, Utf8, type DataType } from 'apache-arrow';
import { Compression, Table, transformParquetStream, WriterPropertiesBuilder, type RecordBatch as WasmRecordBatch } from 'parquet-wasm/node';
import { BinaryCopyTuples } from './binary-copy.ts';
import type { Column, ColumnKind } from './columns.ts';
import { PARQUET_BATCH_ROWS } from './formats.ts';

/**
 * Text bytes after which a batch is handed to the writer before PARQUET_BATCH_ROWS rows, and the
 * size at which the writer closes a row group. arrow-rs holds a row group (and the JavaScript side
 * a batch, and its Arrow IPC copy) until then, and WebAssembly memory never shrinks: 4,096 rows of
 * 1 MB texts kept ~850 MiB of it for the life of the process before these bounds (outside review,
 * 2026-11-27); 200 rows of 1 MiB random text now peak at ~46 MiB of WebAssembly memory.
 */
const PARQUET_BATCH_BYTES = 4 << 20;
const PARQUET_ROW_GROUP_BYTES = 8 << 20;

/** The writer's properties: ZSTD pages, row groups of PARQUET_BATCH_ROWS rows or PARQUET_ROW_GROUP_BYTES, our name as created_by. */
const PROPERTIES = () =>
  new WriterPropertiesBuilder()
    .setCompression(Compression.ZSTD)
    .setMaxRowGroupSize(PARQUET_BATCH_ROWS)
    .setMaxRowGroupBytes(PARQUET_ROW_GROUP_BYTES)
    .setCreatedBy('svc results export')
    .build();

/** The last µs since 1970 an INT64 holds (294247-01-10T04:00:54.775807Z); PostgreSQL stores up to 294276 AD. */
const INT64_MAX = 0x7fff_ffff_ffff_ffffn;
const BEYOND_INT64 = 'export: a timestamp after 294247-01-10, beyond Parquet INT64 microseconds since 1970';

/** µs from the Unix epoch to 2000-01-01 (PostgreSQL's timestamp epoch), as two 32-bit halves. */
const EPOCH_2000_US = 946_684_800_000_000;
const EPOCH_HI = Math.floor(EPOCH_2000_US / 0x1_0000_0000);
const EPOCH_LO = EPOCH_2000_US % 0x1_0000_0000;

const HEX_HI = Uint8Array.from({ length: 256 }, (_, b) => '0123456789abcdef'.charCodeAt(b >> 4));
const HEX_LO = Uint8Array.from({ length: 256 }, (_, b) => '0123456789abcdef'.charCodeAt(b & 15));
const utf8 = new TextEncoder();

const arrowType = (kind: ColumnKind): DataType =>
  kind === 'int' ? new Int32() : kind === 'float' ? new Float64() : kind === 'timestamp' ? new TimestampMicrosecond('UTC') : new Utf8();

/** The big-endian int32 at `p` of `b`. */
const int32 = (b: Buffer, p: number) => (b[p]! << 24) | (b[p + 1]! << 16) | (b[p + 2]! << 8) | b[p + 3]!;

/** One column of a batch: its validity bits (1: a value), and its values by kind. */
interface ColumnState {
  kind: ColumnKind;
  type: DataType;
  valid: Uint8Array;
  nulls: number;
  /** int, float, timestamp (8 bytes a value, little-endian as Arrow's buffers). */
  fixed?: DataView;
  fixedBytes?: Uint8Array;
  /** uuid, string, json: Arrow's offsets and UTF-8 bytes. */
  offsets?: Int32Array;
  bytes?: Uint8Array;
  used: number;
}

/**
 * The rows of one record batch, column by column (an export's COLUMNS): `addTuple` for a binary
 * COPY tuple, `addRow` for a row of JavaScript values, at most PARQUET_BATCH_ROWS; `take()`
 * returns the batch in WebAssembly memory and starts the next one (the buffers are reused).
 */
export class ColumnBatch {
  rows = 0;
  private readonly columns: ColumnState[];
  private readonly schema: Schema;

  constructor(columns: readonly Column[]) {
    const cap = PARQUET_BATCH_ROWS;
    this.columns = columns.map((c) => {
      const state: ColumnState = { kind: c.kind, type: arrowType(c.kind), valid: new Uint8Array((cap >> 3) + 1), nulls: 0, used: 0 };
      if (c.kind === 'int' || c.kind === 'float' || c.kind === 'timestamp') {
        state.fixedBytes = new Uint8Array(cap * 8);
        state.fixed = new DataView(state.fixedBytes.buffer);
      } else {
        state.offsets = new Int32Array(cap + 1);
        state.bytes = new Uint8Array(cap * (c.kind === 'uuid' ? 36 : 64));
      }
      return state;
    });
    this.schema = new Schema(columns.map((c, i) => new Field(c.name, this.columns[i]!.type, true)));
  }

  /** Text bytes in the batch (uuid, string and json columns). */
  private bytes = 0;
  /** Batches taken so far. */
  private taken = 0;

  /** PARQUET_BATCH_ROWS rows, or PARQUET_BATCH_BYTES of text: time to `take()`. */
  get full(): boolean {
    return this.rows === PARQUET_BATCH_ROWS || this.bytes >= PARQUET_BATCH_BYTES;
  }

  /** Room for `n` more bytes in a text column. */
  private room(c: ColumnState, n: number): Uint8Array {
    if (c.used + n > c.bytes!.length) {
      const grown = new Uint8Array(Math.max(c.bytes!.length * 2, c.used + n));
      grown.set(c.bytes!.subarray(0, c.used));
      c.bytes = grown;
    }
    return c.bytes!;
  }

  private setNull(c: ColumnState, i: number): void {
    c.nulls += 1;
    if (c.offsets) c.offsets[i + 1] = c.used;
  }

  /**
   * Add the tuple whose first field starts at `p` of `b` (a binary COPY of `parquetSelect(…,
   * binary)`: uuid 16 bytes, timestamptz int8 µs since 2000-01-01, int4, float8, text). Throws
   * on a field of the wrong width.
   */
  addTuple(b: Buffer, p: number): void {
    const i = this.rows;
    const bit = 1 << (i & 7);
    const byte = i >> 3;
    for (const c of this.columns) {
      const n = int32(b, p);
      p += 4;
      if (n < 0) {
        this.setNull(c, i);
        continue;
      }
      switch (c.kind) {
        case 'uuid': {
          if (n !== 16) throw new Error('export: a uuid not of 16 bytes');
          const out = this.room(c, 36);
          let o = c.used;
          for (let j = 0; j < 16; j++) {
            if (j === 4 || j === 6 || j === 8 || j === 10) out[o++] = 0x2d;
            const v = b[p + j]!;
            out[o++] = HEX_HI[v]!;
            out[o++] = HEX_LO[v]!;
          }
          c.used = o;
          c.offsets![i + 1] = o;
          this.bytes += 36;
          break;
        }
        case 'timestamp': {
          if (n !== 8) throw new Error('export: a timestamp not of 8 bytes');
          const hi = int32(b, p);
          const lo = int32(b, p + 4) >>> 0;
          if ((hi === 0x7fffffff && lo === 0xffffffff) || (hi === -0x80000000 && lo === 0)) {
            this.setNull(c, i); // ±infinity: null, as to_char gives the NDJSON and the CSV
            p += n;
            continue;
          }
          const sum = lo + EPOCH_LO;
          const high = hi + EPOCH_HI + (sum >= 0x1_0000_0000 ? 1 : 0);
          // INT64 µs since 1970 ends in 294247 AD; PostgreSQL stores up to 294276 AD.
          if (high > 0x7fffffff) throw new Error(BEYOND_INT64);
          c.fixed!.setUint32(i * 8, sum >>> 0, true);
          c.fixed!.setInt32(i * 8 + 4, high, true);
          break;
        }
        case 'int':
          if (n !== 4) throw new Error('export: an int4 not of 4 bytes');
          c.fixed!.setInt32(i * 4, int32(b, p), true);
          break;
        case 'float':
          if (n !== 8) throw new Error('export: a float8 not of 8 bytes');
          c.fixed!.setFloat64(i * 8, b.readDoubleBE(p), true);
          break;
        default: {
          const out = this.room(c, n);
          b.copy(out, c.used, p, p + n);
          c.used += n;
          c.offsets![i + 1] = c.used;
          this.bytes += n;
        }
      }
      c.valid[byte]! |= bit;
      p += n;
    }
    this.rows = i + 1;
  }

  /**
   * Add a row of JavaScript values (PGlite, `parquetSelect`): strings for uuid, string and json
   * (JSON text), numbers for int and float, µs since the Unix epoch (string, bigint or number) for
   * timestamps; null or undefined for null.
   */
  addRow(row: readonly unknown[]): void {
    const i = this.rows;
    for (let f = 0; f < this.columns.length; f++) {
      const c = this.columns[f]!;
      const v = row[f];
      if (v === null || v === undefined) {
        this.setNull(c, i);
        continue;
      }
      if (c.kind === 'timestamp') {
        const us = BigInt(v as string | bigint | number);
        if (us > INT64_MAX) throw new Error(BEYOND_INT64);
        c.fixed!.setBigInt64(i * 8, us, true);
      } else if (c.kind === 'int') c.fixed!.setInt32(i * 4, Number(v), true);
      else if (c.kind === 'float') c.fixed!.setFloat64(i * 8, Number(v), true);
      else {
        const s = String(v);
        const out = this.room(c, s.length * 3);
        const written = utf8.encodeInto(s, out.subarray(c.used)).written;
        c.used += written;
        c.offsets![i + 1] = c.used;
        this.bytes += written;
      }
      c.valid[i >> 3]! |= 1 << (i & 7);
    }
    this.rows = i + 1;
  }

  /** The batch so far as a record batch in WebAssembly memory (its schema even with no rows); the next batch starts empty. */
  take(): WasmRecordBatch {
    const n = this.rows;
    const children = this.columns.map((c) => {
      const nullBitmap = c.nulls > 0 ? c.valid.subarray(0, (n + 7) >> 3) : undefined;
      const base = { type: c.type, length: n, nullCount: c.nulls, nullBitmap } as const;
      if (c.offsets) return makeData({ ...base, type: c.type as Utf8, valueOffsets: c.offsets.subarray(0, n + 1), data: c.bytes!.subarray(0, c.used) });
      const width = c.kind === 'int' ? 4 : 8;
      const data = c.fixedBytes!.subarray(0, n * width);
      if (c.kind === 'int') return makeData({ ...base, type: c.type as Int32, data: new Int32Array(data.buffer, 0, n) });
      if (c.kind === 'float') return makeData({ ...base, type: c.type as Float64, data: new Float64Array(data.buffer, 0, n) });
      return makeData({ ...base, type: c.type as TimestampMicrosecond, data: new BigInt64Array(data.buffer, 0, n) });
    });
    const batch = new RecordBatch(this.schema, makeData({ type: new Struct(this.schema.fields), length: n, nullCount: 0, children }));
    const table = Table.fromIPCStream(RecordBatchStreamWriter.writeAll([batch]).toUint8Array(true));
    const taken = table.recordBatch(0)!;
    table.free();
    for (const c of this.columns) {
      c.valid.fill(0, 0, (n >> 3) + 1);
      c.nulls = 0;
      c.used = 0;
    }
    this.rows = 0;
    this.bytes = 0;
    this.taken += 1;
    return taken;
  }

  /** The last batch at the input's end: the rows left, or an empty one when none was taken (a file needs one: its schema). */
  takeLast(): WasmRecordBatch | undefined {
    return this.rows > 0 || this.taken === 0 ? this.take() : undefined;
  }
}

/**
 * The bytes of one Parquet file of `batches` (at least one: it carries the schema), as arrow-rs
 * writes them, a chunk per row group (the file's magic with the first, the footer with the last).
 * If `batches` throws, so does this, and the footer is never yielded: a cut export is not a file.
 */
export async function* parquetChunks(batches: AsyncIterable<WasmRecordBatch>): AsyncGenerator<Uint8Array> {
  let failure: { error: unknown } | undefined;
  async function* watched() {
    try {
      yield* batches;
    } catch (error) {
      failure = { error };
      throw error;
    }
  }
  try {
    // (It reads the first batch before it resolves: the schema.)
    const out: AsyncIterable<Uint8Array> = await transformParquetStream(ReadableStream.from(watched()) as unknown as globalThis.ReadableStream, PROPERTIES());
    for await (const chunk of out) {
      if (failure) throw failure.error;
      yield chunk;
    }
  } catch (err) {
    throw failure ? failure.error : err; // the input's own error, not the writer's reading of it
  }
  if (failure) throw failure.error;
}

/**
 * A Duplex from the bytes of a binary COPY of `columns` (`COPY (parquetSelect(name, …, binary)) TO
 * STDOUT (format binary)` for an export's COLUMNS) to a Parquet file; `onRecords(n)` is told how
 * many rows each row group holds. Malformed input (a wrong signature, a tuple of another width, a
 * value of the wrong width, a stream ending before its trailer) or a source error destroys it
 * with an Error before the footer.
 */
export function parquetFromBinaryCopy(columns: readonly Column[], onRecords: (n: number) => void = () => {}): Duplex {
  return Duplex.from(async function* (source: AsyncIterable<Buffer>) {
    yield* parquetChunks(batchesOfCopy(columns, source, onRecords));
  });
}

async function* batchesOfCopy(columns: readonly Column[], source: AsyncIterable<Buffer>, onRecords: (n: number) => void): AsyncGenerator<WasmRecordBatch> {
  const batch = new ColumnBatch(columns);
  const ready: WasmRecordBatch[] = [];
  const tuples = new BinaryCopyTuples(columns.length, (b, p) => {
    batch.addTuple(b, p + 2);
    if (!batch.full) return;
    onRecords(batch.rows);
    ready.push(batch.take());
  });
  for await (const chunk of source) {
    tuples.feed(chunk);
    while (ready.length > 0) yield ready.shift()!;
  }
  if (!tuples.ended) throw new Error('export: the binary COPY stream ended before its trailer');
  onRecords(batch.rows);
  const last = batch.takeLast();
  if (last) yield last;
}

/**
 * A Parquet file of `columns` from the row batches `fetch` reads (JavaScript values in their order),
 * until an empty one; `onRecords(n)` counts them. If `fetch` throws, so does this, before the footer.
 */
export function parquetFromRows(
  columns: readonly Column[],
  fetch: () => Promise<readonly (readonly unknown[])[]>,
  onRecords: (n: number) => void = () => {},
): AsyncGenerator<Uint8Array> {
  async function* batches(): AsyncGenerator<WasmRecordBatch> {
    const batch = new ColumnBatch(columns);
    for (;;) {
      const rows = await fetch();
      if (rows.length === 0) break;
      for (const row of rows) {
        batch.addRow(row);
        if (batch.full) yield batch.take();
      }
      onRecords(rows.length);
    }
    const last = batch.takeLast();
    if (last) yield last;
  }
  return parquetChunks(batches());
}
