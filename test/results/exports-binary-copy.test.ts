/**
 * `csvFromBinaryCopy` (src/results/exports/binary-copy.ts) against PostgreSQL itself (skipped on
 * PGlite, whose exports do not use it): the CSV written from a binary COPY is byte for byte what
 * PostgreSQL's own CSV COPY of the text the lists use gives (`rfc3339` timestamps, uuid and text
 * output), records ending CRLF (RFC 4180 §2); text cells are quoted as COPY quotes them; any split
 * of the bytes into chunks gives the same output; malformed input is an error, not a short file.
 */
import { Readable } from 'node:stream';
import { buffer, text } from 'node:stream/consumers';
import { parse } from 'csv-parse/sync';
import pg from 'pg';
import { to as copyTo } from 'pg-copy-streams';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rfc3339 } from '../../src/db/sql.ts';
import { type BinaryKind, csvFromBinaryCopy, ndjsonFromBinaryCopy } from '../../src/results/exports/binary-copy.ts';
import { backend } from '../helpers/harness.ts';

const HEADER = 'a,b,c\r\n';

describe.skipIf(backend !== 'postgres')('CSV from a binary COPY', () => {
  const client = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
  beforeAll(async () => {
    await client.connect();
    // Timestamps across the whole range PostgreSQL stores (4713 BC to 294276 AD), uuids, texts.
    await client.query(`create temp table cells as
      select gen_random_uuid() as id, ts, ts::text as note
      from (select '1999-12-31 23:59:59.999999Z'::timestamptz + (n * interval '1 day 1 microsecond') as ts from generate_series(-3000, 3000) n
            union all select '2026-11-27Z'::timestamptz + (n * interval '1 second 999 microseconds') from generate_series(0, 2000) n
            union all select 'epoch'::timestamptz - (n ^ 2 * interval '37 days 3 hours 1 microsecond') from generate_series(0, 250) n
            union all select 'epoch'::timestamptz + (n ^ 2 * interval '53 days 5 hours 7 microseconds') from generate_series(0, 1400) n
            union all select unnest(array['infinity', '-infinity', '4714-11-24 00:00:00Z BC', '0001-01-01Z BC', '0001-01-01Z',
              '0283-06-01Z BC', '1900-03-01Z', '2000-02-29 12:00:00.000001Z', '9999-12-31 23:59:59.999999Z', '10000-01-01Z',
              '294276-12-31 23:59:59.999999Z']::timestamptz[])
            union all select null) x`);
  });
  afterAll(() => client.end());

  /** The bytes of `COPY (sql) TO STDOUT (options)`. */
  const copy = (sql: string, options: string) => buffer(client.query(copyTo(`copy (${sql}) to stdout with (${options})`)));
  const convert = (chunks: Buffer[], kinds: BinaryKind[], onRecords?: (n: number) => void) =>
    text(Readable.from(chunks).pipe(csvFromBinaryCopy(kinds, HEADER, onRecords)));

  it('writes uuids and timestamps as PostgreSQL writes their text (to_char RFC 3339, null for infinity), byte for byte', async () => {
    const order = 'order by ts nulls first, id';
    const binary = await copy(`select id, ts, note from cells ${order}`, 'format binary');
    const reference = await copy(`select id, ${rfc3339('ts')}, note from cells ${order}`, 'format csv, header true');
    const ours = await convert([binary], ['uuid', 'timestamp', 'string']);
    expect(ours.split('\r\n').length).toBeGreaterThan(8_000);
    expect(ours).toBe(reference.toString().replace('id,to_char,note', 'a,b,c').replaceAll('\n', '\r\n'));
  });

  it('quotes text cells as COPY does: empty, or holding a quote, comma, CR or LF; null stays an empty unquoted cell', async () => {
    const values = ['plain', '', null, 'a,b', 'say "hi"', 'line\nbreak', 'cr\rand crlf\r\n', 'ünïcödé ✓', '"', '\\.'];
    const list = values.map(
      (v, i) =>
        `(${i + 1}, ${v === null ? 'null' : `e'${v.replaceAll('\\', '\\\\').replaceAll("'", "\\'").replaceAll('\n', '\\n').replaceAll('\r', '\\r')}'`})`,
    );
    const rows = await copy(`select n::text, v, n::text from (values ${list.join(', ')}) x(n, v) order by x.n`, 'format binary');
    const ours = await convert([rows], ['string', 'string', 'string']);
    expect(ours).toBe(
      `${HEADER}1,plain,1\r\n2,"",2\r\n3,,3\r\n4,"a,b",4\r\n5,"say ""hi""",5\r\n6,"line\nbreak",6\r\n7,"cr\rand crlf\r\n",7\r\n8,ünïcödé ✓,8\r\n9,"""",9\r\n10,\\.,10\r\n`,
    );
    const parsed = parse(ours, { columns: true, record_delimiter: '\r\n' }) as { b: string }[];
    expect(parsed.map((r) => r.b)).toEqual(values.map((v) => v ?? ''));
  });

  /** json_build_object's text of `args` for each row of `from`, a line each: the lists' layout, as PostgreSQL writes it. */
  const objects = async (args: string, from: string) =>
    (await client.query<{ line: string }>(`select json_build_object(${args})::text as line from ${from}`)).rows.map((r) => `${r.line}\n`).join('');

  it('writes NDJSON lines byte for byte as json_build_object writes the same values (timestamps RFC 3339, null for infinity)', async () => {
    const order = 'order by ts nulls first, id';
    const binary = await copy(`select id, ts, note, (extract(epoch from ts) / 7)::float8::text from cells ${order}`, 'format binary');
    const ours = await text(
      Readable.from([binary]).pipe(
        ndjsonFromBinaryCopy([
          { name: 'id', kind: 'uuid' },
          { name: 'ts', kind: 'timestamp' },
          { name: 'note', kind: 'string' },
          { name: 'n', kind: 'raw' },
        ]),
      ),
    );
    const reference = await objects(`'id', id, 'ts', ${rfc3339('ts')}, 'note', note, 'n', (extract(epoch from ts) / 7)::float8`, `cells ${order}`);
    expect(reference.split('\n').length).toBeGreaterThan(8_000);
    expect(ours).toBe(reference);
  });

  it('escapes NDJSON strings as to_json does: quotes, backslashes, control characters; unicode as it is', async () => {
    const chars = Array.from({ length: 0x20 }, (_, c) => String.fromCharCode(c)).filter((c) => c !== '\0');
    const values = ['plain', '', null, 'say "hi" \\ back\\slash / slash', chars.join(''), 'ünïcödé ✓ 🎉', '{"json": "as text"}'];
    const list = values.map((v, i) => `(${i + 1}, ${v === null ? 'null' : `convert_from(decode('${Buffer.from(v).toString('hex')}', 'hex'), 'UTF8')`})`);
    const rows = `(values ${list.join(', ')}) x(n, v)`;
    const binary = await copy(`select n::text, v from ${rows} order by x.n`, 'format binary');
    const ours = await text(
      Readable.from([binary]).pipe(
        ndjsonFromBinaryCopy([
          { name: 'n', kind: 'raw' },
          { name: 'v', kind: 'string' },
        ]),
      ),
    );
    expect(ours).toBe(await objects(`'n', n, 'v', v`, `${rows} order by x.n`));
    expect(
      ours
        .split('\n')
        .slice(0, -1)
        .map((line) => JSON.parse(line).v),
    ).toEqual(values);
  });

  it('gives the same CSV and record count however the bytes are split', async () => {
    const where = `where ts is null or ts between '2000-01-01' and '2000-01-10'`;
    const binary = await copy(`select id, ts, note from cells ${where} order by ts, id`, 'format binary');
    let whole = 0;
    const expected = await convert([binary], ['uuid', 'timestamp', 'string'], (n) => (whole += n));
    expect(whole).toBe((await client.query<{ n: number }>(`select count(*)::int as n from cells ${where}`)).rows[0]!.n);
    expect(whole).toBeGreaterThan(5);
    for (let at = 0; at <= binary.length; at++) {
      expect(await convert([binary.subarray(0, at), binary.subarray(at)], ['uuid', 'timestamp', 'string']), `split at ${at}`).toBe(expected);
    }
    let records = 0;
    expect(
      await convert(
        [...binary].map((b) => Buffer.from([b])),
        ['uuid', 'timestamp', 'string'],
        (n) => (records += n),
      ),
    ).toBe(expected);
    expect(records).toBe(whole);
    // Tuples longer than the bytes joined from the next chunk (16 KiB), split anywhere.
    const long = await copy(`select id, ts, repeat('x", ', 9000) || note from cells ${where} order by ts, id`, 'format binary');
    const longExpected = await convert([long], ['uuid', 'timestamp', 'string']);
    expect(longExpected.length).toBeGreaterThan(whole * 40_000);
    for (let at = 0; at <= long.length; at += 997) {
      const chunks = [long.subarray(0, at), long.subarray(at, at + 20_000), long.subarray(at + 20_000)];
      expect(await convert(chunks, ['uuid', 'timestamp', 'string']), `split at ${at}`).toBe(longExpected);
    }
    // … and cut into many small chunks (a long tuple's chunks wait aside until it can be whole).
    for (const size of [7, 1_000, 16_385]) {
      const chunks: Buffer[] = [];
      for (let i = 0; i < long.length; i += size) chunks.push(long.subarray(i, i + size));
      expect(await convert(chunks, ['uuid', 'timestamp', 'string']), `chunks of ${size}`).toBe(longExpected);
    }
  });

  it('fails on malformed input instead of writing a short file', async () => {
    const binary = await copy('select id, ts, note from cells order by ts limit 10', 'format binary');
    await expect(convert([binary.subarray(0, binary.length - 2)], ['uuid', 'timestamp', 'string'])).rejects.toThrow(/before its trailer/);
    await expect(convert([binary.subarray(0, 40)], ['uuid', 'timestamp', 'string'])).rejects.toThrow(/before its trailer/);
    await expect(convert([Buffer.from('id,ts\n1,2\n3,4\n5,6\n7,8\n9,10\n')], ['uuid', 'timestamp'])).rejects.toThrow(/not a binary COPY/);
    await expect(convert([binary], ['uuid', 'timestamp'])).rejects.toThrow(/3 fields, 2 expected/);
    await expect(convert([binary], ['timestamp', 'timestamp', 'string'])).rejects.toThrow(/not of 8 bytes/);
  });
});
