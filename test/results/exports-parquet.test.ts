/**
 * src/results/exports/parquet.ts, the Parquet writer of the exports, read back by hyparquet (an
 * independent reader): from PostgreSQL's binary COPY (skipped on PGlite, whose exports feed it
 * rows) every type's values over their whole range — timestamps from 4713 BC to 294276 AD at µs,
 * ±infinity as null, int4's and float8's extremes, NaN and ±Infinity, text with every kind of
 * character — at any split of the bytes, across several row groups; and on both backends a source
 * that fails is an error, never a file that reads cleanly.
 */
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { parquetMetadata, parquetReadObjects } from 'hyparquet';
import pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Column } from '../../src/results/exports/columns.ts';
import { PARQUET_BATCH_ROWS } from '../../src/results/exports/formats.ts';
import { parquetFromBinaryCopy, parquetFromRows } from '../../src/results/exports/parquet.ts';
import { backend } from '../helpers/harness.ts';
import { arrayBufferOf, parquetCompressors } from './exports-fixtures.ts';

const COLUMNS: Column[] = [
  { name: 'id', kind: 'uuid' },
  { name: 'ts', kind: 'timestamp' },
  { name: 'n', kind: 'int' },
  { name: 'x', kind: 'float' },
  { name: 'note', kind: 'string' },
  { name: 'doc', kind: 'json' },
];

/** The rows of a Parquet file as hyparquet reads them, timestamps as their raw INT64 µs. */
async function read(file: Buffer): Promise<Record<string, unknown>[]> {
  return parquetReadObjects({
    file: arrayBufferOf(file),
    compressors: parquetCompressors,
    utf8: true,
    parsers: { timestampFromMicroseconds: (v: bigint) => v },
  } as never);
}

/** Bytes of `chunks` through `parquetFromRows`, or the error it threw (and the bytes so far). */
async function fromRows(batches: (readonly unknown[])[][] | (() => Promise<(readonly unknown[])[]>)): Promise<{ file: Buffer; error?: unknown }> {
  const queue = Array.isArray(batches) ? [...batches] : undefined;
  const fetch = queue ? async () => queue.shift() ?? [] : (batches as () => Promise<(readonly unknown[])[]>);
  const parts: Uint8Array[] = [];
  try {
    for await (const chunk of parquetFromRows(COLUMNS, fetch)) parts.push(chunk);
    return { file: Buffer.concat(parts) };
  } catch (error) {
    return { file: Buffer.concat(parts), error };
  }
}

const endsAsFile = (b: Buffer) => b.length >= 12 && b.subarray(-4).toString('latin1') === 'PAR1';

describe('Parquet from rows (PGlite)', () => {
  it('writes each type and null, across row groups, read back with the same values', async () => {
    const row = (i: number) => [
      `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
      i % 5 === 0 ? null : String(1_767_225_600_000_000 + i * 1_000_001),
      i % 7 === 0 ? null : i - 3,
      i % 11 === 0 ? null : i / 3,
      i % 13 === 0 ? null : `note ${i} ✓`,
      i % 17 === 0 ? null : `{"i": ${i}}`,
    ];
    const n = PARQUET_BATCH_ROWS + 10;
    const rows = Array.from({ length: n }, (_, i) => row(i));
    const { file, error } = await fromRows([rows.slice(0, PARQUET_BATCH_ROWS), rows.slice(PARQUET_BATCH_ROWS)]);
    expect(error).toBeUndefined();
    expect(parquetMetadata(arrayBufferOf(file)).row_groups.length).toBe(2);
    const got = await read(file);
    expect(got.length).toBe(n);
    expect(got.map((r) => [r.id, r.ts, r.n, r.x, r.note, r.doc])).toEqual(
      rows.map((r) => [r[0], r[1] === null ? null : BigInt(r[1] as string), r[2], r[3], r[4], r[5]]),
    );
  });

  it('wide rows: row groups close by bytes, not only at 4,096 rows (WebAssembly memory never shrinks)', async () => {
    const wide = Array.from({ length: 40 }, (_, i) => [null, null, i, null, randomBytes(1 << 19).toString('hex'), null]);
    const { file, error } = await fromRows([wide]);
    expect(error).toBeUndefined();
    const meta = parquetMetadata(arrayBufferOf(file));
    expect(meta.row_groups.length).toBeGreaterThanOrEqual(2); // 40 MiB of hex text (~20 MiB encoded), row groups of ~8 MiB encoded; one by rows alone
    for (const g of meta.row_groups) expect(Number(g.total_byte_size)).toBeLessThan(16 << 20);
    expect((await read(file)).map((r) => r.note)).toEqual(wide.map((r) => r[4]));
  });

  it('a timestamp beyond INT64 µs since 1970 is an error, not a wrapped value', async () => {
    const { error } = await fromRows([[[null, '9223372036854775808', 1, null, null, null]]]);
    expect(String(error)).toMatch(/beyond Parquet INT64/);
  });

  it('no rows: a file with the columns and no rows', async () => {
    const { file, error } = await fromRows([]);
    expect(error).toBeUndefined();
    const meta = parquetMetadata(arrayBufferOf(file));
    expect(meta.schema.slice(1).map((s) => s.name)).toEqual(COLUMNS.map((c) => c.name));
    expect(Number(meta.num_rows)).toBe(0);
  });

  it('a fetch that fails is an error, and what was written is not a file (no footer)', async () => {
    let calls = 0;
    const { file, error } = await fromRows(async () => {
      calls += 1;
      if (calls === 3) throw new Error('the batch failed');
      return Array.from({ length: PARQUET_BATCH_ROWS }, (_, i) => [null, null, i, null, 'x', null]);
    });
    expect(String(error)).toContain('the batch failed');
    expect(endsAsFile(file)).toBe(false);
  });
});

describe.skipIf(backend !== 'postgres')('Parquet from a binary COPY', () => {
  const client = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
  beforeAll(async () => {
    await client.connect();
    await client.query(`create temp table cells as
      select gen_random_uuid() as id, ts, n, x, note, doc from (
        select ts, (k * 104729 % 2147483647)::int4 - 1073741823 as n, k / 7.0::float8 as x, 'note ' || k || ' ✓ "q" \\ ,' as note, json_build_object('k', k)::text as doc
          from (select k, '1999-12-31 23:59:59.999999Z'::timestamptz + (k * interval '1 day 1 microsecond') as ts from generate_series(-6000, 6000) k) t
        union all
        select unnest(array['infinity', '-infinity', '4714-11-24 00:00:00Z BC', '1969-12-31 23:59:59.999999Z', '1970-01-01Z', '2000-01-01Z',
                 '2000-01-01 00:00:00.000001Z', '1999-12-31 23:59:59.999999Z', '294246-12-31 23:59:59.999999Z', null]::timestamptz[]),
               unnest(array[-2147483648, 2147483647, 0, -1, 1, null, 7, 8, 9, 10]::int4[]),
               unnest(array['NaN', 'Infinity', '-Infinity', '-0', '1.7976931348623157e308', '5e-324', null, '0.1', '1', '2']::float8[]),
               unnest(array['', 'ünïcödé', e'line\\nbreak', e'tab\\t', null, '😀', 'a', 'b', 'c', 'd']),
               unnest(array['[]', '{"a": [1, 2]}', 'null', null, '"s"', '1', '2', '3', '4', '5'])
      ) s`);
  });
  afterAll(() => client.end());

  const SELECT = `select id, ts, n, x, note, doc from cells order by ts nulls first, n nulls first, id`;

  /** Bytes of the binary COPY of SELECT, cut into `size`-byte chunks, through `parquetFromBinaryCopy`. */
  async function convert(size: number, cut = (b: Buffer) => b): Promise<Buffer> {
    const binary = cut(await buffer(client.query(copyTo(`copy (${SELECT}) to stdout with (format binary)`))));
    const chunks: Buffer[] = [];
    for (let i = 0; i < binary.length; i += size) chunks.push(binary.subarray(i, i + size));
    let rows = 0;
    const file = await buffer(Readable.from(chunks).pipe(parquetFromBinaryCopy(COLUMNS, (n) => (rows += n))));
    expect(rows).toBe((await read(file)).length);
    return file;
  }

  it('writes every value as PostgreSQL holds it (µs since the Unix epoch, ±infinity as null), at any split of the bytes', async () => {
    const expected = (
      await client.query<{ id: string; us: string | null; n: number | null; x: string | null; note: string | null; doc: string | null }>(
        `select id::text, case when isfinite(ts) then (extract(epoch from ts) * 1000000)::int8 end as us, n, x::text, note, doc from (${SELECT}) s`,
      )
    ).rows.map((r) => [r.id, r.us === null ? null : BigInt(r.us), r.n, r.x === null ? null : Number(r.x), r.note, r.doc]);
    expect(expected.length).toBeGreaterThan(2 * PARQUET_BATCH_ROWS);
    for (const size of [1 << 20, 65_536, 4_093, 97]) {
      const file = await convert(size);
      expect(parquetMetadata(arrayBufferOf(file)).row_groups.length, `${size}`).toBe(Math.ceil(expected.length / PARQUET_BATCH_ROWS));
      const got = (await read(file)).map((r) => [r.id, r.ts, r.n, r.x, r.note, r.doc]);
      expect(got, `${size}`).toEqual(expected);
    }
    const meta = parquetMetadata(arrayBufferOf(await convert(1 << 20)));
    expect(meta.schema.find((s) => s.name === 'ts')).toMatchObject({
      type: 'INT64',
      logical_type: { type: 'TIMESTAMP', isAdjustedToUTC: true, unit: 'MICROS' },
    });
    expect(meta.schema.find((s) => s.name === 'n')).toMatchObject({ type: 'INT32' });
    expect(meta.schema.find((s) => s.name === 'x')).toMatchObject({ type: 'DOUBLE' });
    expect(meta.schema.find((s) => s.name === 'id')).toMatchObject({ type: 'BYTE_ARRAY', converted_type: 'UTF8' });
  });

  it('a COPY cut before its trailer is an error, and the row groups written before it are not a file; another width is an error', async () => {
    const binary = await buffer(client.query(copyTo(`copy (${SELECT}) to stdout with (format binary)`)));
    for (const cut of [2, 40_000]) {
      const parts: Buffer[] = [];
      const out = Readable.from([binary.subarray(0, binary.length - cut)]).pipe(parquetFromBinaryCopy(COLUMNS));
      const error = await new Promise((resolve) => {
        out.on('data', (c: Buffer) => parts.push(c));
        out.on('error', resolve);
        out.on('end', () => resolve(undefined));
      });
      expect(String(error), `${cut}`).toMatch(/before its trailer/);
      expect(parts.length, `${cut}`).toBeGreaterThan(0); // row groups went out before the end
      expect(endsAsFile(Buffer.concat(parts)), `${cut}`).toBe(false);
    }
    const narrow = await buffer(client.query(copyTo(`copy (select id, ts from cells) to stdout with (format binary)`)));
    await expect(buffer(Readable.from([narrow]).pipe(parquetFromBinaryCopy(COLUMNS)))).rejects.toThrow(/a tuple of 2 fields, 6 expected/);
  });

  it('wide rows from a COPY: row groups close by bytes', async () => {
    const wide = await buffer(
      client.query(
        copyTo(`copy (select gen_random_uuid(), now(), k, k::float8, (select string_agg(md5(k::text || ':' || j::text), '') from generate_series(1, 32768) j), null::text
                      from generate_series(1, 40) k) to stdout with (format binary)`),
      ),
    );
    const file = await buffer(Readable.from([wide]).pipe(parquetFromBinaryCopy(COLUMNS)));
    const meta = parquetMetadata(arrayBufferOf(file));
    expect(meta.row_groups.length).toBeGreaterThanOrEqual(2); // one by rows alone
    expect((await read(file)).map((r) => (r.note as string).length)).toEqual(Array(40).fill(1 << 20));
  });

  it('a timestamp beyond INT64 µs since 1970 (PostgreSQL stores up to 294276 AD) is an error, not a wrapped value', async () => {
    const late = await buffer(
      client.query(copyTo(`copy (select id, '294276-12-31 23:59:59.999999Z'::timestamptz, n, x, note, doc from cells limit 1) to stdout with (format binary)`)),
    );
    await expect(buffer(Readable.from([late]).pipe(parquetFromBinaryCopy(COLUMNS)))).rejects.toThrow(/beyond Parquet INT64/);
  });
});
