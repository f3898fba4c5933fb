/**
 * `svc-results export <resource>`: write every row of a results list changed since an instant
 * (default: all of them) to a file or stdout as CSV or JSON Lines, through the client's `sync()`.
 *
 * Rows are taken from the `updated_since` feed, so an export ends at the service's watermark,
 * printed on stderr as the `--updated-since` of the next incremental export. CSV: one column per
 * field of the API object in its order, arrays and objects as JSON text, null as an empty cell
 * (csv-stringify quotes as RFC 4180 wants).
 *
 * Resuming (`--resume`, needs `--out`): after each page the output is flushed and
 * `<out>.checkpoint.json` records the sync checkpoint and the output's byte length. A resumed
 * export truncates the output to that length (dropping a page half-written when it was killed),
 * then continues from the checkpoint: no row is lost or written twice.
 */
import { stringify } from 'csv-stringify/sync';
import { open, readFile, rename, writeFile, type FileHandle } from 'node:fs/promises';
import type { ResultsClient, SyncCheckpoint, SyncResource } from './index.ts';

export type ExportFormat = 'csv' | 'jsonl';

export interface ExportOptions {
  resource: SyncResource;
  format: ExportFormat;
  /** RFC 3339; rows changed at or after it (default: every row). */
  updatedSince?: string;
  /** Output file; stdout when undefined. */
  out?: string;
  resume?: boolean;
  /** Rows per request (default 200). */
  limit?: number;
  /** Progress lines (default: stderr). */
  progress?: (line: string) => void;
}

interface ExportState {
  checkpoint: SyncCheckpoint;
  bytes: number;
  rows: number;
  columns: string[] | null;
}

const cell = (value: unknown) => (value === null || value === undefined ? '' : typeof value === 'object' ? JSON.stringify(value) : value);

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
  const initial: SyncCheckpoint = {
    resource: options.resource,
    deletions: { since: null, cursor: null },
    rows: { since: options.updatedSince ?? null, cursor: null },
  };
  state ??= { checkpoint: initial, bytes: 0, rows: 0, columns: null };

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
    for await (const event of client.sync(options.resource, { checkpoint: state.checkpoint, limit: options.limit, tombstones: false })) {
      if (event.type === 'upsert') {
        const row = event.row as Record<string, unknown>;
        if (options.format === 'jsonl') {
          chunk += `${JSON.stringify(row)}\n`;
        } else {
          if (!state.columns) {
            state.columns = Object.keys(row);
            chunk += stringify([state.columns]);
          }
          chunk += stringify([state.columns.map((c) => cell(row[c]))]);
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
