/**
 * PGlite's export batches (src/results/exports/stream.ts `nextBatchRows`): the first is 64 rows,
 * each next one sized to ~4 MiB of text from the one before — PGlite holds a batch in its
 * WebAssembly memory, which never shrinks, so rows of hundreds of kilobytes come a few at a time
 * while narrow rows still come 10,000 at a time. Every row exactly once, in every format.
 * (PostgreSQL streams a COPY: no batches; skipped there.)
 */
import { parquetReadObjects } from 'hyparquet';
import { describe, expect, it, vi } from 'vitest';
import type { Db } from '../../src/db/index.ts';
import { BATCH_ROWS, nextBatchRows } from '../../src/results/exports/stream.ts';
import { backend, useApp, useFixture } from '../helpers/harness.ts';
import { arrayBufferOf, bytes, parquetCompressors } from './exports-fixtures.ts';
import { get, newArtifact, seedTenant } from './fixtures.ts';

describe('nextBatchRows', () => {
  it('starts at 64 rows, grows at most 8× a batch up to the maximum, and shrinks to the text of wide rows', () => {
    expect(nextBatchRows(0, 0, BATCH_ROWS)).toBe(64);
    expect(nextBatchRows(0, 0, 10)).toBe(10);
    expect(nextBatchRows(64, 64 * 400, BATCH_ROWS)).toBe(512); // 400-byte rows: 8× the last batch
    expect(nextBatchRows(4096, 4096 * 400, BATCH_ROWS)).toBe(BATCH_ROWS);
    expect(nextBatchRows(64, 64 * 300_000, BATCH_ROWS)).toBe(13); // 4 MiB of 300 kB rows
    expect(nextBatchRows(4, 4 * 50_000_000, BATCH_ROWS)).toBe(1); // never none
    expect(nextBatchRows(13, 13 * 400, 4_096)).toBe(104); // rows narrow again: grows back, 8× at a time
  });
});

describe.skipIf(backend !== 'pglite')('a PGlite export of wide rows', () => {
  const t = useApp();
  const a = useFixture(() => seedTenant(t, 'wide'));
  const WIDE = 400;
  const NARROW = 300;

  /** The row counts the export's keyset batches asked for (their `limit $3`), while `run` runs. */
  async function batchSizes(run: () => Promise<void>): Promise<number[]> {
    const sizes: number[] = [];
    const db = t.db as Db;
    const transaction = db.transaction.bind(db);
    const spy = vi.spyOn(db, 'transaction').mockImplementation((fn) =>
      transaction((tx) =>
        fn(
          new Proxy(tx, {
            get(target, prop, receiver) {
              if (prop !== 'query') return Reflect.get(target, prop, receiver);
              return (text: string, params?: unknown[]) => {
                if (/limit \$3/.test(text)) sizes.push(Number(params![2]));
                return target.query(text, params);
              };
            },
          }),
        ),
      ),
    );
    try {
      await run();
    } finally {
      spy.mockRestore();
    }
    return sizes;
  }

  it('reads them a few at a time, every row once, in NDJSON, CSV and Parquet', async () => {
    // 400 rows of 64 kB, then 300 narrow ones (keyset order is creation order here).
    const wideUrl = (i: number) => `https://example.test/${i}/${'w'.repeat(64_000)}`;
    for (let i = 0; i < WIDE; i++) await newArtifact(t.db, { resultId: a.resultIds[i % 3]!, kind: 'site', refUrl: wideUrl(i) });
    for (let i = 0; i < NARROW; i++) await newArtifact(t.db, { resultId: a.resultIds[i % 3]!, kind: 'site', refUrl: `https://example.test/narrow/${i}` });
    const ids = (await t.db.query<{ id: string }>('select id from artifacts where tenant_id = $1 order by id', [a.id])).map((r) => r.id);
    expect(ids.length).toBeGreaterThan(NARROW + WIDE);

    for (const format of ['ndjson', 'csv', 'parquet'] as const) {
      let got: string[] = [];
      const sizes = await batchSizes(async () => {
        const res = await get(t, `/v1/exports/artifacts?format=${format}`, a.key);
        expect(res.status).toBe(200);
        const body = await bytes(res);
        if (format === 'ndjson')
          got = body
            .toString()
            .trim()
            .split('\n')
            .map((l) => JSON.parse(l).id);
        else if (format === 'csv')
          got = body
            .toString()
            .trim()
            .split('\r\n')
            .slice(1)
            .map((l) => l.split(',')[0]!);
        else got = (await parquetReadObjects({ file: arrayBufferOf(body), compressors: parquetCompressors })).map((r) => r.id as string);
      });
      expect([...got].sort(), format).toEqual(ids);
      // 64 rows first (~4 MB of wide ones); then what fits in ~4 MiB of them (~65 rows); then, on
      // the narrow rows, larger batches again.
      expect(sizes[0], format).toBe(64);
      expect(Math.max(...sizes.slice(0, 6)), format).toBeLessThanOrEqual(70);
      expect(Math.max(...sizes), format).toBeGreaterThan(70);
    }
  });
});
