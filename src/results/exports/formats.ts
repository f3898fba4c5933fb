/**
 * Formats of an export and the SQL that feeds them.
 *
 * - `ndjson` (`application/x-ndjson`, the default): one JSON object a line, the list endpoints'
 *   `data` items byte for byte (PostgreSQL writes them, set-based: `./rows.ts`).
 * - `csv` (`text/csv`, RFC 4180): a header row, then one record a row; nested values (arrays,
 *   objects) as JSON text; null as an empty unquoted cell, the empty string as `""`. Records end
 *   with LF (PostgreSQL's COPY; RFC 4180 parsers accept it).
 * - `parquet` (`application/vnd.apache.parquet`): one file, a row group per fetched batch;
 *   ids as UTF-8 strings, timestamps INT64 TIMESTAMP(MICROS, isAdjustedToUTC), nested values as
 *   JSON-annotated strings, integers INT32, score DOUBLE (hyparquet-writer, snappy pages).
 */
import { stringify } from 'csv-stringify/sync';
import { ByteWriter, ParquetWriter, type SchemaElement } from 'hyparquet-writer';
import { COLUMNS, type Column, type ExportName } from './columns.ts';
import { cellsSelect, lineSelect, type Slice } from './rows.ts';

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
  return format === 'csv' ? cellsSelect(name, slice, 'keyset') : lineSelect(name, slice, 'keyset');
}

/**
 * One text column `line`: the JSON object of each row (NDJSON lines; Parquet parses it), in the
 * feed's order (updated_at, id), as `/v1/…?updated_since=` lists them. COPY takes no parameters,
 * so the (validated) values are literals. The SQL is in `./rows.ts`.
 */
export const jsonSelect = (name: ExportName, slice: Slice) => lineSelect(name, slice);

/** The CSV columns of each row as text: scalars as their JSON value's text, nested values as JSON. */
export const csvSelect = (name: ExportName, slice: Slice) => cellsSelect(name, slice);

/**
 * `COPY … TO STDOUT` of the format (PostgreSQL). NDJSON rides CSV mode with delimiter and quote
 * characters JSON text never contains raw (0x02, 0x01): each line is the JSON unchanged (text mode
 * would double its backslashes).
 */
export function copyStatement(name: ExportName, format: 'ndjson' | 'csv', slice: Slice): string {
  if (format === 'ndjson') return `copy (${jsonSelect(name, slice)}) to stdout with (format csv, delimiter e'\\x02', quote e'\\x01')`;
  return `copy (${csvSelect(name, slice)}) to stdout with (format csv, header true)`;
}

/** The CSV header row of `name`. */
export const csvHeader = (name: ExportName) => `${COLUMNS[name].map((c) => c.name).join(',')}\n`;

/** CSV records of rows fetched by `csvSelect` (cells as text or null), as PostgreSQL's COPY writes them. */
export function csvRecords(name: ExportName, rows: Record<string, string | null>[]): string {
  const names = COLUMNS[name].map((c) => c.name);
  return stringify(
    rows.map((r) => names.map((n) => r[n])),
    { quoted_match: /^$/, record_delimiter: 'unix' },
  );
}

/** RFC 3339 UTC text with up to 6 fractional digits → microseconds since the epoch. */
function micros(text: string): bigint {
  const m = /^(.*?)(?:\.(\d{1,6}))?Z$/.exec(text);
  if (!m) throw new Error(`export: not a UTC timestamp: ${text}`);
  const ms = Date.parse(`${m[1]}Z`);
  return BigInt(ms) * 1000n + BigInt((m[2] ?? '').padEnd(6, '0'));
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
      return { ...base, type: 'BYTE_ARRAY', converted_type: 'JSON' };
    default:
      return { ...base, type: 'BYTE_ARRAY', converted_type: 'UTF8' };
  }
}

/**
 * A Parquet file written batch by batch: `header()` once, `rows(lines)` per batch of JSON lines
 * (one row group each), `footer()` at the end; each returns the bytes to send next.
 */
export class ParquetEncoder {
  private readonly columns: Column[];
  private readonly bytes = new ByteWriter(1 << 20);
  private readonly writer: ParquetWriter;

  constructor(name: ExportName) {
    this.columns = COLUMNS[name];
    const schema: SchemaElement[] = [{ name: 'root', num_children: this.columns.length }, ...this.columns.map(schemaElement)];
    this.writer = new ParquetWriter({ writer: this.bytes, schema, createdBy: 'svc results export' });
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

  /** One row group of the rows (each a JSON object as text). */
  rows(lines: string[]): Buffer {
    if (lines.length === 0) return Buffer.alloc(0);
    const objs = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    const columnData = this.columns.map((c) => {
      const data = objs.map((o) => {
        const v = o[c.name];
        if (v === null || v === undefined) return null;
        if (c.kind === 'timestamp') return micros(v as string);
        if (c.kind === 'json') return JSON.stringify(v);
        return v;
      });
      return { name: c.name, data };
    });
    void this.writer.write({ columnData, rowGroupSize: lines.length });
    return this.take();
  }

  footer(): Buffer {
    void this.writer.finish();
    return this.take();
  }
}
