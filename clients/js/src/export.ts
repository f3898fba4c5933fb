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
 * Resuming (`--resume`, needs `--out`): a paged export is continued — after each page the output
 * is flushed and `<out>.checkpoint.json` records the sync checkpoint and the output's byte length;
 * a resumed export truncates the output to that length (dropping a page half-written when it was
 * killed), then continues from the checkpoint: no row is lost or written twice. A streamed export
 * has no positions: an interrupted one starts over; a finished one is not written again (the
 * command says so and gives the `--updated-since` for the rows changed since).
 */
import { stringify } from 'csv-stringify/sync';
import { open, readFile, rename, rm, writeFile, type FileHandle } from 'node:fs/promises';
import type { ExportResource, ResultsClient, SyncCheckpoint, SyncResource } from './index.ts';

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
}

interface ExportState {
  /** What the file holds (absent in state files of older versions): a resume of another is refused. */
  resource?: ExportResource;
  format?: 'csv' | 'ndjson' | 'parquet';
  /** True while a streamed export is under way (it restarts on --resume). */
  stream?: boolean;
  /** True once a streamed export ended whole (`checkpoint` then holds its watermark). */
  done?: boolean;
  checkpoint: SyncCheckpoint;
  bytes: number;
  rows: number;
  columns: string[] | null;
}

/** A CSV cell as the service writes it: null stays null (an empty cell), arrays and objects as JSON text. */
const cell = (value: unknown) => (value === null || value === undefined ? null : typeof value === 'object' ? JSON.stringify(value) : value);
/** csv-stringify as the service's CSV: the empty string quoted (null is an empty cell), records ending CRLF. */
const csv = (rows: unknown[][]) => stringify(rows, { quoted_match: /^$/, record_delimiter: 'windows' });

/** Run one export; resolves with the rows written and the watermark to start the next one at. */
export async function runExport(client: ResultsClient, options: ExportOptions): Promise<{ rows: number; consistentThrough: string | null }> {
  const progress = options.progress ?? ((line: string) => process.stderr.write(`${line}\n`));
  if (options.resume && !options.out) throw new Error('--resume needs --out (the file to continue)');
  const stateFile = options.out ? `${options.out}.checkpoint.json` : undefined;

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
  if (state?.done) {
    const since = state.checkpoint.rows.since;
    progress(
      `svc-results: ${options.resource}: ${options.out} is already complete (${state.rows} rows, consistent through ${since})` +
        ` — for the rows changed since: --updated-since ${since} into another file`,
    );
    return { rows: state.rows, consistentThrough: since };
  }
  // An interrupted stream has no positions: it starts over (as a stream, or page by page with --limit).
  if (state?.stream) state = undefined;
  // A page-by-page export under way (or asked for with --limit) continues page by page; else the
  // stream of /v1/exports.
  if (!state && options.limit === undefined) {
    if (options.format === 'parquet' && !options.out) throw new Error('parquet needs --out (a binary file)');
    return streamExport(client, options, progress, stateFile);
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
    } else {
      process.stdout.write(text);
    }
    state!.bytes += Buffer.byteLength(text);
  };
  const save = async () => {
    if (!file || !stateFile) return;
    await file.sync();
    await writeFile(`${stateFile}.tmp`, JSON.stringify(state));
    await rename(`${stateFile}.tmp`, stateFile);
  };

  let lastReport = 0;
  try {
    let chunk = '';
    for await (const event of client.sync(options.resource as SyncResource, { checkpoint: state.checkpoint, limit: options.limit, tombstones: false })) {
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
  const consistentThrough = state.checkpoint.rows.since;
  progress(
    `svc-results: ${options.resource}: ${state.rows} rows exported, consistent through ${consistentThrough ?? 'the start'}` +
      (consistentThrough ? ` (next export: --updated-since ${consistentThrough})` : ''),
  );
  return { rows: state.rows, consistentThrough };
}

/**
 * A counter of CSV record ends (LF outside a quoted cell) across the chunks of one file: a quoted
 * cell may hold line breaks, and `""` inside one toggles the quoting twice (RFC 4180 §2). Returns
 * the record ends in each chunk given, in order.
 */
function csvRecordEnds(): (chunk: Uint8Array) => number {
  let quoted = false;
  return (chunk) => {
    const bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    let n = 0;
    let i = 0;
    let quote = bytes.indexOf(34, i);
    for (;;) {
      if (!quoted) {
        const lf = bytes.indexOf(10, i);
        if (lf !== -1 && (quote === -1 || lf < quote)) {
          n += 1;
          i = lf + 1;
          continue;
        }
      }
      if (quote === -1) return n;
      quoted = !quoted;
      i = quote + 1;
      quote = bytes.indexOf(34, i);
    }
  };
}

/**
 * The streamed export: `/v1/exports/{resource}` in the format asked (`jsonl` = ndjson), its bytes
 * written as they come. Rows are counted by line (ndjson) or record (csv); Parquet reports bytes.
 */
async function streamExport(
  client: ResultsClient,
  options: ExportOptions,
  progress: (line: string) => void,
  stateFile: string | undefined,
): Promise<{ rows: number; consistentThrough: string | null }> {
  const format = options.format === 'jsonl' ? 'ndjson' : options.format;
  const { watermark, body } = await client.exportRaw(options.resource, { format, updatedSince: options.updatedSince });
  const about = { resource: options.resource, format };
  if (stateFile) await writeFile(stateFile, JSON.stringify({ ...about, stream: true, checkpoint: null, bytes: 0, rows: 0, columns: null }));
  const partial = options.out ? `${options.out}.partial` : undefined;
  const file = partial ? await open(partial, 'w') : undefined;
  let lines = 0;
  const records = format === 'csv' ? csvRecordEnds() : undefined;
  let bytes = 0;
  let lastReport = Date.now();
  let whole = false;
  try {
    for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
      if (file) await file.write(chunk);
      else if (!process.stdout.write(chunk)) await new Promise((r) => process.stdout.once('drain', r));
      bytes += chunk.length;
      if (records) lines += records(chunk);
      else for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines += 1;
      if (Date.now() - lastReport > 1000) {
        progress(`svc-results: ${options.resource}: ${format === 'parquet' ? `${bytes} bytes` : `${lines} lines`} exported`);
        lastReport = Date.now();
      }
    }
    await file?.sync();
    whole = true;
  } finally {
    await file?.close();
    if (partial && !whole) await rm(partial, { force: true });
  }
  if (partial) await rename(partial, options.out!);
  const rows = format === 'csv' ? Math.max(0, lines - 1) : format === 'ndjson' ? lines : 0;
  if (stateFile) {
    const rowsState: SyncCheckpoint = {
      resource: options.resource as SyncResource,
      deletions: { since: watermark, cursor: null },
      rows: { since: watermark, cursor: null },
    };
    await writeFile(`${stateFile}.tmp`, JSON.stringify({ ...about, stream: false, done: true, checkpoint: rowsState, bytes, rows, columns: null }));
    await rename(`${stateFile}.tmp`, stateFile);
  }
  progress(
    `svc-results: ${options.resource}: ${format === 'parquet' ? `${bytes} bytes` : `${rows} rows`} exported, consistent through ${watermark ?? 'the start'}` +
      (watermark ? ` (next export: --updated-since ${watermark})` : ''),
  );
  return { rows, consistentThrough: watermark };
}
