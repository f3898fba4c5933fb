/**
 * `svc-results export <resource>`: write every row of a results list changed since an instant
 * (default: all of them) to a file or stdout as CSV, JSON Lines or Parquet.
 *
 * By default the bytes come from one streamed export (`/v1/exports/{resource}`: the service's own
 * CSV, NDJSON or Parquet, one snapshot), written to `<out>.partial` and renamed to `--out` only
 * when the whole answer arrived: a failed export never leaves a file that looks complete. The
 * watermark is printed on stderr as the `--updated-since` of the next incremental export.
 *
 * With `--limit` the rows are read page by page from the `updated_since` feed (client `sync()`),
 * and written as the service writes them: CSV one column per field of the API object in its
 * order, arrays and objects as JSON text, null as an empty cell and the empty string as `""`,
 * records ending CRLF (RFC 4180); JSON Lines one object a line.
 *
 * Resuming (`--resume`, needs `--out`): `<out>.checkpoint.json` records how far the output got
 * and the output is truncated there when resumed (dropping what was half-written when it was
 * killed): no row is lost or written twice. A paged export records the sync checkpoint after each
 * page; a streamed CSV or NDJSON export, every second, the last whole record's place in the order
 * (`streamExport`); a streamed Parquet or progress export starts over. A finished export is not
 * written again (the command says so and gives the `--updated-since` for the rows changed since),
 * unless its file is gone or changed. `--out` is checked before the first request (a folder, or
 * a folder that is missing or read-only, is refused).
 */
import { parse } from 'csv-parse/sync';
import { stringify } from 'csv-stringify/sync';
import { constants } from 'node:fs';
import { access, open, readFile, rename, rm, stat, writeFile, type FileHandle } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { type ExportResource, ResultsApiError, type ResultsClient, type SyncCheckpoint, type SyncResource } from './index.ts';

/** `jsonl` is `ndjson` (the same bytes). */
export type ExportFormat = 'csv' | 'jsonl' | 'ndjson' | 'parquet';

export interface ExportOptions {
  /** `deletions` (the tombstones) comes from the stream only. */
  resource: ExportResource;
  format: ExportFormat;
  /** RFC 3339; rows changed at or after it (default: every row). */
  updatedSince?: string;
  /** Output file; stdout when undefined. */
  out?: string;
  resume?: boolean;
  /** Rows per request: reads the paged feed instead of the stream (default: the stream). */
  limit?: number;
  /** Progress lines (default: stderr). */
  progress?: (line: string) => void;
  /** Least time between two checkpoints of a streamed export into a file, ms (default 1000). */
  checkpointEveryMs?: number;
  /** Stops the export (Ctrl-C): it ends as a failed one does, with an AbortError. */
  signal?: AbortSignal;
}

interface ExportState {
  /** What the file holds (absent in state files of older versions): a resume of another is refused. */
  resource?: ExportResource;
  format?: 'csv' | 'ndjson' | 'parquet';
  /** True while a streamed export is under way (`position`: where `--resume` continues it). */
  stream?: boolean;
  /** True once a streamed export ended whole (`checkpoint` then holds its watermark). */
  done?: boolean;
  /** The `--updated-since` asked for (null: every row); absent in state files of older versions. */
  updatedSince?: string | null;
  /** A streamed export: the first answer's watermark, what the finished file is consistent through. */
  watermark?: string | null;
  /** A streamed export under way: the order key of the last whole record in `<out>.partial` (null: none yet). */
  position?: Position | null;
  /** A paged export's sync checkpoint, a finished stream's watermarks; null while a stream is under way. */
  checkpoint: SyncCheckpoint | null;
  bytes: number;
  rows: number;
  /** CSV: the header's columns (a paged export's; a stream's, which a resumed stream must send again). */
  columns: string[] | null;
}

/** Write `state` to `file` atomically (a temporary file renamed over it): an interruption leaves the old state or the new. */
async function writeState(file: string, state: ExportState): Promise<void> {
  await writeFile(`${file}.tmp`, JSON.stringify(state));
  await rename(`${file}.tmp`, file);
}

/** What an export wrote, in words: rows, or bytes for Parquet (its rows are not counted). */
const amount = (format: 'csv' | 'ndjson' | 'parquet', rows: number, bytes: number) => (format === 'parquet' ? `${bytes} bytes` : `${rows} rows`);

/** A CSV cell as the service writes it: null stays null (an empty cell), arrays and objects as JSON text. */
const cell = (value: unknown) => (value === null || value === undefined ? null : typeof value === 'object' ? JSON.stringify(value) : value);
/** csv-stringify as the service's CSV: the empty string quoted (null is an empty cell), a cell with CR or LF quoted, records ending CRLF. */
const csv = (rows: unknown[][]) => stringify(rows, { quoted_match: /^$/, record_delimiter: 'windows', quote_record_delimiter: true });

/** The size of `path` in bytes, or -1 when there is none. */
const sizeOf = (path: string) =>
  stat(path).then(
    (st) => st.size,
    () => -1,
  );

/** Throws, before any request, when `out` cannot be written: a folder, or in a folder that is missing or read-only. */
async function checkWritable(out: string): Promise<void> {
  const st = await stat(out).catch(() => undefined);
  if (st?.isDirectory()) throw new Error(`--out ${out} is a folder: give a file name`);
  const folder = dirname(resolve(out));
  try {
    await access(folder, constants.W_OK);
  } catch (err) {
    const why = (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'does not exist' : 'cannot be written';
    throw new Error(`--out ${out}: its folder ${folder} ${why}`);
  }
}

/** Run one export; resolves with the rows written and the watermark to start the next one at. */
export async function runExport(client: ResultsClient, options: ExportOptions): Promise<{ rows: number; consistentThrough: string | null }> {
  const progress = options.progress ?? ((line: string) => process.stderr.write(`${line}\n`));
  if (options.resume && !options.out) throw new Error('--resume needs --out (the file to continue)');
  const stateFile = options.out ? `${options.out}.checkpoint.json` : undefined;
  if (options.out) await checkWritable(options.out);

  let state: ExportState | undefined;
  if (options.resume && stateFile) {
    try {
      state = JSON.parse(await readFile(stateFile, 'utf8')) as ExportState;
    } catch {
      state = undefined; // nothing to resume: start afresh
    }
  }
  const format = options.format === 'jsonl' ? 'ndjson' : options.format;
  const held = state?.resource ?? state?.checkpoint?.resource;
  if (state && ((held !== undefined && held !== options.resource) || (state.format !== undefined && state.format !== format))) {
    throw new Error(
      `--resume: ${options.out} holds an export of ${held ?? options.resource} as ${state.format ?? 'another format'}, not ${options.resource} as ${format}: ` +
        'give another --out, or drop --resume to start afresh',
    );
  }
  if (state && state.updatedSince !== undefined && options.updatedSince !== undefined && options.updatedSince !== state.updatedSince) {
    throw new Error(
      `--resume: ${options.out} holds an export of the rows changed since ${state.updatedSince ?? 'the start'}, not since ${options.updatedSince}: ` +
        'give another --out, or drop --resume to start afresh',
    );
  }
  if (state?.done && (await sizeOf(options.out!)) !== state.bytes) {
    progress(`svc-results: ${options.resource}: ${options.out} is missing or has changed since it was written: exporting it again`);
    state = undefined;
  }
  if (state?.done) {
    const since = state.checkpoint?.rows.since ?? state.watermark ?? null;
    progress(
      `svc-results: ${options.resource}: ${options.out} is already complete (${amount(format, state.rows, state.bytes)}, consistent through ${since})` +
        ` — for the rows changed since: --updated-since ${since} into another file`,
    );
    return { rows: state.rows, consistentThrough: since };
  }
  // An interrupted stream continues from its last checkpoint when it has one and its partial file
  // is still there (see streamExport); else it starts over — as a stream, or page by page with --limit.
  let resumed: ExportState | undefined;
  if (state?.stream) {
    const partial = `${options.out}.partial`;
    const why =
      options.limit !== undefined
        ? 'it was streamed, and --limit asks for pages'
        : format === 'parquet' || !ORDER_KEY[options.resource]
          ? `an interrupted ${format === 'parquet' ? 'Parquet' : options.resource} stream cannot be continued`
          : !state.position
            ? 'it stopped before its first checkpoint'
            : (await sizeOf(partial)) < state.bytes
              ? `${partial} is missing or shorter than its checkpoint`
              : undefined;
    if (why === undefined) resumed = state;
    else {
      progress(`svc-results: ${options.resource}: starting over: ${why}`);
      await rm(partial, { force: true });
      // Over again, but of the rows it was asked for.
      if (options.updatedSince === undefined && state.updatedSince) options = { ...options, updatedSince: state.updatedSince };
    }
    state = undefined;
  }
  // A page-by-page export under way (or asked for with --limit) continues page by page; else the
  // stream of /v1/exports.
  if (!state && options.limit === undefined) {
    if (options.format === 'parquet' && !options.out) throw new Error('parquet needs --out (a binary file)');
    return streamExport(client, { ...options, format }, progress, stateFile, resumed);
  }
  if (options.format === 'parquet') throw new Error('parquet comes from the stream only: drop --limit');
  if (options.resource === 'deletions') throw new Error('deletions come from the stream only: drop --limit');
  const initial: SyncCheckpoint = {
    resource: options.resource as SyncResource,
    deletions: { since: null, cursor: null },
    rows: { since: options.updatedSince ?? null, cursor: null },
  };
  state ??= { resource: options.resource, format, checkpoint: initial, bytes: 0, rows: 0, columns: null };

  let file: FileHandle | undefined;
  if (options.out) {
    file = await open(options.out, state.bytes > 0 ? 'r+' : 'w');
    await file.truncate(state.bytes);
  }
  const write = async (text: string) => {
    if (file) {
      await file.write(text, state!.bytes);
    } else if (!process.stdout.write(text)) {
      await new Promise((r) => process.stdout.once('drain', r));
    }
    state!.bytes += Buffer.byteLength(text);
  };
  const save = async () => {
    if (!file || !stateFile) return;
    await file.sync();
    await writeState(stateFile, state!);
  };

  let lastReport = 0;
  try {
    let chunk = '';
    for await (const event of client.sync(options.resource as SyncResource, {
      checkpoint: state.checkpoint ?? initial,
      limit: options.limit,
      tombstones: false,
    })) {
      if (event.type === 'upsert') {
        const row = event.row as Record<string, unknown>;
        if (options.format !== 'csv') {
          chunk += `${JSON.stringify(row)}\n`;
        } else {
          if (!state.columns) {
            state.columns = Object.keys(row);
            chunk += csv([state.columns]);
          }
          chunk += csv([state.columns.map((c) => cell(row[c]))]);
        }
        state.rows += 1;
      } else if (event.type === 'checkpoint') {
        options.signal?.throwIfAborted(); // Ctrl-C, between pages: this one is neither written nor checkpointed (--resume reads it again)
        await write(chunk);
        chunk = '';
        state.checkpoint = event.checkpoint;
        await save();
        if (Date.now() - lastReport > 1000) {
          progress(`svc-results: ${options.resource}: ${state.rows} rows exported`);
          lastReport = Date.now();
        }
      }
    }
  } finally {
    await file?.close();
  }
  const consistentThrough = state.checkpoint?.rows.since ?? null;
  progress(
    `svc-results: ${options.resource}: ${state.rows} rows exported, consistent through ${consistentThrough ?? 'the start'}` +
      (consistentThrough ? ` (next export: --updated-since ${consistentThrough})` : ''),
  );
  return { rows: state.rows, consistentThrough };
}

/** Where a streamed export's rows are ordered: the instant's and the id's fields (the service sends rows in this order). */
export const ORDER_KEY: Partial<Record<ExportResource, { at: string; id: string }>> = {
  'activity-results': { at: 'updated_at', id: 'id' },
  artifacts: { at: 'updated_at', id: 'id' },
  learners: { at: 'updated_at', id: 'svc_user_id' },
  deletions: { at: 'deleted_at', id: 'id' },
  // progress rows are ordered by an id they do not carry: an interrupted stream of them starts over
};

/** A row's place in the order: RFC 3339 instants with microseconds (fixed width) and uuids compare as strings. */
interface Position {
  at: string;
  id: string;
}
/** True when `p` comes after `q` in the export's order. */
const isAfter = (p: Position, q: Position) => p.at > q.at || (p.at === q.at && p.id > q.id);

/**
 * The ends of the records of one file, chunk by chunk: offsets just past each LF that ends a record
 * — every LF in NDJSON; in CSV an LF outside a quoted cell (a quoted cell may hold line breaks, and
 * `""` inside one toggles the quoting twice: RFC 4180 §2).
 */
function recordEnds(format: 'csv' | 'ndjson'): (chunk: Buffer) => number[] {
  let quoted = false;
  return (bytes) => {
    const ends: number[] = [];
    if (format === 'ndjson') {
      for (let i = bytes.indexOf(10); i !== -1; i = bytes.indexOf(10, i + 1)) ends.push(i + 1);
      return ends;
    }
    let i = 0;
    let quote = bytes.indexOf(34, i);
    for (;;) {
      if (!quoted) {
        const lf = bytes.indexOf(10, i);
        if (lf !== -1 && (quote === -1 || lf < quote)) {
          ends.push(lf + 1);
          i = lf + 1;
          continue;
        }
      }
      if (quote === -1) return ends;
      quoted = !quoted;
      i = quote + 1;
      quote = bytes.indexOf(34, i);
    }
  };
}

/**
 * The records of a CSV or NDJSON byte stream: `push(chunk)` returns the records the chunk
 * completes (the first may have begun in earlier chunks), as views of the bytes.
 */
class Records {
  private readonly ends: (chunk: Buffer) => number[];
  private pending: Buffer[] = [];
  constructor(format: 'csv' | 'ndjson') {
    this.ends = recordEnds(format);
  }
  /** Bytes of the record under way (after the last whole one). */
  get pendingBytes(): number {
    return this.pending.reduce((n, b) => n + b.length, 0);
  }
  /** The whole records `chunk` ends, with the offset in `chunk` where each of them ends. */
  push(chunk: Buffer): { record: Buffer; end: number }[] {
    const out: { record: Buffer; end: number }[] = [];
    let from = 0;
    for (const end of this.ends(chunk)) {
      const part = chunk.subarray(from, end);
      out.push({ record: this.pending.length ? Buffer.concat([...this.pending, part]) : part, end });
      this.pending = [];
      from = end;
    }
    if (from < chunk.length) this.pending.push(chunk.subarray(from));
    return out;
  }
}

/**
 * The order key of one record (`header`: the CSV's column names; NDJSON: undefined). Throws when
 * the record lacks one of the key's fields (no position is better than a wrong one).
 */
function positionOf(record: Buffer, key: { at: string; id: string }, header: string[] | undefined): Position {
  let at: unknown;
  let id: unknown;
  if (header) {
    const [cells] = parse(record, { relax_column_count: true }) as string[][];
    at = cells?.[header.indexOf(key.at)];
    id = cells?.[header.indexOf(key.id)];
  } else {
    const row = JSON.parse(record.toString('utf8')) as Record<string, unknown>;
    at = row[key.at];
    id = row[key.id];
  }
  if (typeof at !== 'string' || typeof id !== 'string' || !at || !id)
    throw new Error(`a row without its ${key.at} and ${key.id}: cannot mark where the export is`);
  return { at, id };
}

/** Least time between two checkpoints (and progress lines) of a streamed export, ms. */
const CHECKPOINT_EVERY_MS = 1000;

/**
 * The streamed export: `/v1/exports/{resource}` in the format asked (`jsonl` = ndjson), its bytes
 * written as they come. Rows are counted by line (ndjson) or record (csv); Parquet reports bytes.
 *
 * Into a file, CSV and NDJSON record every second in `<out>.checkpoint.json` the bytes of
 * `<out>.partial` up to the last whole record and that record's place in the order (updated_at —
 * deletions: deleted_at — then id). `--resume` truncates the partial file there, asks for the rows
 * changed since that instant and skips those up to that place: no row is lost or written twice,
 * and a row changed meanwhile comes again, later (keep the last per id). The finished file is
 * consistent through the first answer's watermark (a deletion after it is not in the file: the
 * next `--updated-since` of deletions starts there). Parquet (no appending to a file) and progress
 * (ordered by an id its rows do not carry) start over.
 */
async function streamExport(
  client: ResultsClient,
  options: ExportOptions & { format: 'csv' | 'ndjson' | 'parquet' },
  progress: (line: string) => void,
  stateFile: string | undefined,
  resumed: ExportState | undefined,
): Promise<{ rows: number; consistentThrough: string | null }> {
  const { format } = options;
  const key = format === 'parquet' ? undefined : ORDER_KEY[options.resource];
  const from = resumed?.position && key ? resumed : undefined;
  const partial = options.out ? `${options.out}.partial` : undefined;
  // The file first: one that cannot be opened fails before the request (and the key's one export).
  const file = partial ? await open(partial, from ? 'r+' : 'w') : undefined;
  let bytes = from?.bytes ?? 0;
  let rows = from?.rows ?? 0;
  let position: Position | null = from?.position ?? null;
  const records = format === 'parquet' ? undefined : new Records(format);
  /** CSV: the columns (those of the file resumed until the answer's own header is read). */
  let header: string[] | undefined = from?.columns ?? undefined;
  let seenHeader = false;
  /** Resuming: records up to `from.position` are skipped (the CSV's header too). */
  let skipping = from !== undefined;
  let watermark: string | null = null;
  let about: Partial<ExportState> = {};
  const stateNow = (): ExportState => ({
    ...about,
    stream: true,
    checkpoint: null,
    bytes: bytes - (records?.pendingBytes ?? 0),
    rows,
    position,
    columns: header ?? null,
  });
  const out = async (chunk: Uint8Array) => {
    if (chunk.length === 0) return;
    if (file) await file.write(chunk, 0, chunk.length, bytes);
    else if (!process.stdout.write(chunk)) await new Promise((r) => process.stdout.once('drain', r));
    bytes += chunk.length;
  };
  const every = options.checkpointEveryMs ?? CHECKPOINT_EVERY_MS;
  let body: ReadableStream<Uint8Array> | undefined;
  let whole = false;
  try {
    if (file && from) await file.truncate(bytes);
    const answer = await client.exportRaw(options.resource, { format, updatedSince: from ? from.position!.at : options.updatedSince, signal: options.signal });
    body = answer.body;
    watermark = from ? (from.watermark ?? null) : answer.watermark;
    about = { resource: options.resource, format, updatedSince: from ? from.updatedSince : (options.updatedSince ?? null), watermark };
    if (stateFile) await writeState(stateFile, stateNow());
    let lastReport = Date.now();
    for await (const piece of body as unknown as AsyncIterable<Uint8Array>) {
      const chunk = Buffer.from(piece.buffer, piece.byteOffset, piece.byteLength);
      const done = records?.push(chunk) ?? [];
      let write = 0; // where in `chunk` the bytes to write begin
      for (const { record, end } of done) {
        if (format === 'csv' && !seenHeader) {
          seenHeader = true;
          header = (parse(record) as string[][])[0];
          if (from && JSON.stringify(header) !== JSON.stringify(from.columns)) {
            throw new Error(`the service's CSV columns are not those of ${partial} any more: drop --resume to start afresh`);
          }
          if (skipping) write = end; // the file already has it
          continue;
        }
        if (skipping) {
          if (!isAfter(positionOf(record, key!, header), from!.position!)) {
            write = end;
            continue;
          }
          skipping = false;
          await out(record); // whole, though it may have begun in a chunk not written
          write = end;
        }
        rows += 1;
      }
      if (skipping) continue; // still before the place resumed from (the record under way is in `records`)
      await out(chunk.subarray(write));
      if (Date.now() - lastReport >= every) {
        const last = done.at(-1);
        if (key && last && !(format === 'csv' && rows === 0)) position = positionOf(last.record, key, header);
        if (key && last && file && stateFile) {
          await file.datasync();
          await writeState(stateFile, stateNow());
        }
        progress(`svc-results: ${options.resource}: ${amount(format, rows, bytes)} exported`);
        lastReport = Date.now();
      }
    }
    // A body that ends cleanly in the middle of a record was cut where the transfer could not say
    // so (an HTTP/1.0 hop ends a body by closing the connection): not a whole export.
    if (records && records.pendingBytes > 0) {
      throw new ResultsApiError('network_error', `the export ended in the middle of a record, after ${bytes} bytes`, 0);
    }
    await file?.sync();
    whole = true;
  } catch (err) {
    await body?.cancel().catch(() => {});
    if (partial) {
      progress(
        key && position
          ? `svc-results: ${options.resource}: stopped after ${rows} rows; ${partial} is kept: run the same command with --resume to continue`
          : `svc-results: ${options.resource}: stopped after ${amount(format, rows, bytes)}; nothing written to ${options.out}`,
      );
    }
    throw err;
  } finally {
    await file?.close();
    // A file that can be resumed stays (with its checkpoint); others go.
    if (partial && !whole && !(key && position)) await rm(partial, { force: true });
  }
  if (partial) await rename(partial, options.out!);
  if (stateFile) {
    const checkpoint: SyncCheckpoint = {
      resource: options.resource as SyncResource,
      deletions: { since: watermark, cursor: null },
      rows: { since: watermark, cursor: null },
    };
    await writeState(stateFile, { ...about, stream: false, done: true, checkpoint, bytes, rows, columns: header ?? null });
  }
  progress(
    `svc-results: ${options.resource}: ${amount(format, rows, bytes)} exported, consistent through ${watermark ?? 'the start'}` +
      (watermark ? ` (next export: --updated-since ${watermark})` : ''),
  );
  return { rows, consistentThrough: watermark };
}
