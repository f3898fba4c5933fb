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
 * - `parquet` (`application/vnd.apache.parquet`): one file, a row group per 4,096 rows; ids and
 *   strings UTF8, timestamps INT64 TIMESTAMP(MICROS, isAdjustedToUTC), nested values as their
 *   JSON text (UTF8), integers INT32, score DOUBLE, ZSTD pages (`./parquet.ts`: arrow-rs through
 *   parquet-wasm). On PostgreSQL fed by a binary COPY of `parquetSelect(…, binary)`, on PGlite by
 *   its rows (`./rows.ts`).
 */
import { stringify } from 'csv-stringify/sync';
import type { Transform } from 'node:stream';
import { type BinaryKind, csvFromBinaryCopy, ndjsonFromBinaryCopy } from './binary-copy.ts';
import { COLUMNS, type ExportName } from './columns.ts';
import { cellsSelect, lineSelect, parquetSelect, type Slice } from './rows.ts';

export const FORMATS = {
  ndjson: 'application/x-ndjson',
  csv: 'text/csv',
  parquet: 'application/vnd.apache.parquet',
} as const;
export type Format = keyof typeof FORMATS;

export type { Slice } from './rows.ts';

/**
 * Rows per Parquet record batch and row group at most (`./parquet.ts`, which also closes them by
 * bytes for wide rows; PGlite's batches of Parquet rows). arrow-rs holds a row group until it is
 * full: ~11 MiB of WebAssembly memory at 4,096 rows of activity results; on 1M results 4,096 ran as
 * fast as 16,384 with a quarter of the memory (bench/README.md "Streaming exports").
 */
export const PARQUET_BATCH_ROWS = 4_096;

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
 * `binaryRecords`; for Parquet those of `parquetSelect(…, binary)`, for `./parquet.ts`. Learners' NDJSON: their JSON objects as PostgreSQL writes them
 * (`lineSelect`), riding CSV mode with delimiter and quote characters JSON text never contains
 * raw (0x02, 0x01): each line is the JSON unchanged (text mode would double its backslashes).
 * COPY takes no parameters, so the (validated) values are literals.
 */
export function copyStatement(name: ExportName, format: Format, slice: Slice): string {
  if (format === 'parquet') return `copy (${parquetSelect(name, slice, 'all', true)}) to stdout with (format binary)`;
  if (!usesBinaryCopy(name, format)) return `copy (${lineSelect(name, slice)}) to stdout with (format csv, delimiter e'\\x02', quote e'\\x01')`;
  return `copy (${cellsSelect(name, slice, 'all', true)}) to stdout with (format binary)`;
}

/** True when `copyStatement` is a binary COPY: every CSV and Parquet, and NDJSON but the learners' (their objects come whole from svc.results_learner_json). */
export const usesBinaryCopy = (name: ExportName, format: Format) => format !== 'ndjson' || name !== 'learners';

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

/**
 * CSV records of rows fetched by `cellsSelect` (cells as text or null), ending CRLF, quoted as
 * PostgreSQL's COPY quotes them: a cell holding a comma, a quote, a CR or an LF, and the empty
 * string (null is an empty cell, unquoted).
 */
export function csvRecords(name: ExportName, rows: Record<string, string | null>[]): string {
  const names = COLUMNS[name].map((c) => c.name);
  return stringify(
    rows.map((r) => names.map((n) => r[n])),
    { quoted_match: /^$/, record_delimiter: 'windows', quote_record_delimiter: true },
  );
}
