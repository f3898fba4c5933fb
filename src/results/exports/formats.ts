/**
 * Formats of an export and the SQL that feeds them.
 *
 * - `ndjson` (`application/x-ndjson`, the default): one JSON object a line, the list endpoints'
 *   `data` items byte for byte (on PostgreSQL written from a binary COPY by `./binary-copy.ts`;
 *   on PGlite, and for learners, PostgreSQL writes them: `./rows.ts`).
 * - `csv` (`text/csv`, RFC 4180): a header row, then one record a row; nested values (arrays,
 *   objects) as JSON text; null as an empty unquoted cell, the empty string as `""`. Records end
 *   with CRLF (RFC 4180 §2). On PostgreSQL the cells come from a binary COPY and are written by
 *   `./binary-copy.ts`; on PGlite by csv-stringify (`csvRecords`).
 * - `parquet` (`application/vnd.apache.parquet`): one file, a row group per fetched batch;
 *   ids as UTF-8 strings, timestamps INT64 TIMESTAMP(MICROS, isAdjustedToUTC), nested values as
 *   JSON-annotated strings (their JSON text), integers INT32, score DOUBLE (hyparquet-writer;
 *   ZSTD pages where Node's zlib has zstd, else snappy: `PARQUET_CODEC`). Fed by
 *   `parquetSelect` (`./rows.ts`): typed cells, timestamps as µs, no JSON per row.
 */
import { stringify } from 'csv-stringify/sync';
import zlib from 'node:zlib';
import { ByteWriter, ParquetWriter, type SchemaElement } from 'hyparquet-writer';
import type { Transform } from 'node:stream';
import { type BinaryKind, csvFromBinaryCopy, ndjsonFromBinaryCopy } from './binary-copy.ts';
import { COLUMNS, type Column, type ExportName } from './columns.ts';
import { cellsSelect, lineSelect, parquetSelect, type Slice } from './rows.ts';

export const FORMATS = {
  ndjson: 'application/x-ndjson',
  csv: 'text/csv',
  parquet: 'application/vnd.apache.parquet',
} as const;
export type Format = keyof typeof FORMATS;

export type { Slice } from './rows.ts';

/**
 * One batch in keyset order (PGlite), the format's columns plus its position (`k_ts`, `k_id`) —
 * parameters: the position to start after, the batch size.
 */
export function keysetSelect(name: ExportName, format: Format, slice: Slice): string {
  if (format === 'parquet') return parquetSelect(name, slice, 'keyset');
  return format === 'csv' ? cellsSelect(name, slice, 'keyset') : lineSelect(name, slice, 'keyset');
}

/** The Parquet cells of each row, in the feed's order (the SQL is in `./rows.ts`). */
export { parquetSelect } from './rows.ts';

/**
 * `COPY … TO STDOUT` of the format (PostgreSQL), in the feed's order (updated_at, id), as
 * `/v1/…?updated_since=` lists them. Binary (`usesBinaryCopy`): the cells of `cellsSelect`
 * (SQL in `./rows.ts`), uuids and timestamps as their raw values, written as records by
 * `binaryRecords`. Learners' NDJSON: their JSON objects as PostgreSQL writes them
 * (`lineSelect`), riding CSV mode with delimiter and quote characters JSON text never contains
 * raw (0x02, 0x01): each line is the JSON unchanged (text mode would double its backslashes).
 * COPY takes no parameters, so the (validated) values are literals.
 */
export function copyStatement(name: ExportName, format: 'ndjson' | 'csv', slice: Slice): string {
  if (!usesBinaryCopy(name, format)) return `copy (${lineSelect(name, slice)}) to stdout with (format csv, delimiter e'\\x02', quote e'\\x01')`;
  return `copy (${cellsSelect(name, slice, 'all', true)}) to stdout with (format binary)`;
}

/** True when `copyStatement` is a binary COPY: every CSV, and NDJSON but the learners' (their objects come whole from svc.results_learner_json). */
export const usesBinaryCopy = (name: ExportName, format: 'ndjson' | 'csv') => format === 'csv' || name !== 'learners';

/**
 * The Transform from the binary COPY of `copyStatement` to the format's records (CSV with its
 * header row, or NDJSON lines), telling `onRecords` how many rows it wrote, chunk by chunk.
 * Columns arrive as `cellsSelect(…, binary)` sends them: uuids and timestamps raw, strings as text,
 * the rest as their text (numbers, JSON); learners all as text (read from their JSON object).
 */
export function binaryRecords(name: ExportName, format: 'ndjson' | 'csv', onRecords: (n: number) => void): Transform {
  const columns = COLUMNS[name].map((c) => ({
    name: c.name,
    kind: (c.kind === 'uuid' || c.kind === 'timestamp' || c.kind === 'string') && name !== 'learners' ? c.kind : ('raw' as BinaryKind),
  }));
  return format === 'csv'
    ? csvFromBinaryCopy(
        columns.map((c) => c.kind),
        csvHeader(name),
        onRecords,
      )
    : ndjsonFromBinaryCopy(columns, onRecords);
}

/** The CSV header row of `name`. */
export const csvHeader = (name: ExportName) => `${COLUMNS[name].map((c) => c.name).join(',')}\r\n`;

/** CSV records of rows fetched by `cellsSelect` (cells as text or null), quoted as PostgreSQL's COPY quotes them, ending CRLF. */
export function csvRecords(name: ExportName, rows: Record<string, string | null>[]): string {
  const names = COLUMNS[name].map((c) => c.name);
  return stringify(
    rows.map((r) => names.map((n) => r[n])),
    { quoted_match: /^$/, record_delimiter: 'windows' },
  );
}

function schemaElement(c: Column): SchemaElement {
  const base = { name: c.name, repetition_type: 'OPTIONAL' as const };
  switch (c.kind) {
    case 'int':
      return { ...base, type: 'INT32' };
    case 'float':
      return { ...base, type: 'DOUBLE' };
    case 'timestamp':
      return { ...base, type: 'INT64', converted_type: 'TIMESTAMP_MICROS', logical_type: { type: 'TIMESTAMP', isAdjustedToUTC: true, unit: 'MICROS' } };
    case 'json':
      // converted_type JSON is added at the footer (see ParquetEncoder): while rows are written
      // the writer would JSON.stringify each value, and the cells are JSON text already.
      return { ...base, type: 'BYTE_ARRAY', logical_type: { type: 'JSON' } };
    default:
      return { ...base, type: 'BYTE_ARRAY', converted_type: 'UTF8' };
  }
}

/**
 * The pages' compression: ZSTD level 1 by Node's zlib where it has zstd (Node ≥ 22.15; measured on
 * 1M results: ~40 % less encoder CPU than hyparquet-writer's JavaScript snappy, and a file ~half
 * the size), else snappy. DuckDB, pyarrow / pandas, Spark and hyparquet (with a ZSTD
 * decompressor) read both.
 */
export const PARQUET_CODEC: { codec: 'ZSTD' | 'SNAPPY'; compressors?: { ZSTD: (input: Uint8Array) => Uint8Array } } =
  typeof zlib.zstdCompressSync === 'function'
    ? { codec: 'ZSTD', compressors: { ZSTD: (input) => zlib.zstdCompressSync(input, { params: { [zlib.constants.ZSTD_c_compressionLevel]: 1 } }) } }
    : { codec: 'SNAPPY' };

/** One row of Parquet cells (`parquetSelect`), in COLUMNS order: strings, numbers, int8 µs as text or bigint, null. */
export type ParquetRow = readonly unknown[];

/**
 * A Parquet file written batch by batch: `header()` once, `rows(cells)` per batch of rows (one
 * row group each), `footer()` at the end; each returns the bytes to send next.
 *
 * Each batch is turned into column arrays straight from the cells `parquetSelect` gives (no
 * object or JSON per row): timestamps become bigint µs, JSON cells are written as their text.
 * hyparquet-writer would JSON.stringify a value of a JSON-converted column (a JSON text would
 * come out as a quoted string), so those columns carry only the JSON logical type while rows
 * are written, and the converted type JSON is set on the schema (which the footer writes) in
 * `footer()`: readers that know either annotation read the column as JSON.
 */
export class ParquetEncoder {
  private readonly columns: Column[];
  private readonly schema: SchemaElement[];
  private readonly bytes = new ByteWriter(1 << 20);
  private readonly writer: ParquetWriter;

  constructor(name: ExportName) {
    this.columns = COLUMNS[name];
    this.schema = [{ name: 'root', num_children: this.columns.length }, ...this.columns.map(schemaElement)];
    this.writer = new ParquetWriter({ writer: this.bytes, schema: this.schema, createdBy: 'svc results export', ...PARQUET_CODEC });
  }

  /** The bytes written since the last call (copied: the buffer is reused). */
  private take(): Buffer {
    const out = Buffer.from(this.bytes.getBytes());
    this.bytes.index = 0;
    return out;
  }

  header(): Buffer {
    return this.take();
  }

  /** One row group of `rows` (cells in COLUMNS order). */
  rows(rows: readonly ParquetRow[]): Buffer {
    const n = rows.length;
    if (n === 0) return Buffer.alloc(0);
    const columnData = this.columns.map((c, j) => {
      const data: unknown[] = new Array(n);
      const micros = c.kind === 'timestamp';
      for (let i = 0; i < n; i++) {
        const v = rows[i]![j];
        data[i] = v === null || v === undefined ? null : micros ? BigInt(v as string | bigint) : v;
      }
      return { name: c.name, data };
    });
    void this.writer.write({ columnData, rowGroupSize: n });
    return this.take();
  }

  footer(): Buffer {
    for (const e of this.schema) if (e.logical_type?.type === 'JSON') e.converted_type = 'JSON';
    void this.writer.finish();
    return this.take();
  }
}
