/**
 * Streaming exports (issue #24) on the test backend (PGlite by default, PostgreSQL with
 * TEST_DATABASE_URL): the same objects as the list endpoints in NDJSON, CSV (csv-parse) and
 * Parquet (read back by hyparquet), the watermark and the incremental pull with tombstones, RLS
 * across tenants, bad input before any row, one export per key, gzip and zstd.
 */
import zlib from 'node:zlib';
import { parse } from 'csv-parse/sync';
import { parquetMetadata, parquetReadObjects } from 'hyparquet';
import { describe, expect, it } from 'vitest';
import { COLUMNS, EXPORTS } from '../../src/results/exports/columns.ts';
import { registry } from '../../src/telemetry/metrics.ts';
import { negotiateEncoding, negotiateFormat } from '../../src/results/exports/routes.ts';
import { startApp, testConfig, useApp, useFixture } from '../helpers/harness.ts';
import { arrayBufferOf, bulkResults, bytes, type HeldExport, holdExport, parquetCompressors, transferEnd } from './exports-fixtures.ts';
import { expectError, get, getJson, newResult, newUser, seedTenant } from './fixtures.ts';

const t = useApp();
const a = useFixture(() => seedTenant(t, 'alpha'));

/** Top alpha up to at least `n` results (an export of them outlasts a socket's buffers), whichever test runs first. */
async function atLeastBulk(n: number) {
  const [{ count }] = (await t.db.query<{ count: number }>('select count(*)::int as count from activity_results where tenant_id = $1', [a.id])) as [
    { count: number },
  ];
  if (count < n) await bulkResults(t.db, a.activityIds[2]!, n);
}
const b = useFixture(() => seedTenant(t, 'beta'));

/** Every item of a list endpoint (all pages). */
async function listAll(path: string, key: string): Promise<any[]> {
  const out: any[] = [];
  let url = `${path}${path.includes('?') ? '&' : '?'}limit=200`;
  for (;;) {
    const page = await getJson(t, url, key);
    out.push(...page.data);
    if (!page.next_cursor) return out;
    url = `${path}${path.includes('?') ? '&' : '?'}limit=200&cursor=${encodeURIComponent(page.next_cursor)}`;
  }
}

const idOf = (o: any) => o.id ?? `${o.svc_user_id}/${o.program_id ?? ''}`;
const byId = (rows: any[]) => [...rows].sort((x, y) => (idOf(x) < idOf(y) ? -1 : 1));

async function ndjson(path: string, key: string, headers: Record<string, string> = {}) {
  const res = await get(t, path, key, 'bearer', headers);
  const text = await res.text();
  expect(res.status, text).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^application\/x-ndjson/);
  const lines = text.split('\n');
  expect(lines.pop()).toBe(''); // every line ends with \n
  return { rows: lines.map((l) => JSON.parse(l)), watermark: res.headers.get('svc-consistent-through')!, res };
}

describe('GET /v1/exports/*', () => {
  it('NDJSON: exactly the list endpoints’ objects, for every export, with a watermark', async () => {
    await t.db.query(`delete from artifacts where id = $1`, [a.artifactIds[2]]); // one tombstone
    for (const name of EXPORTS) {
      const { rows, watermark } = await ndjson(`/v1/exports/${name}`, a.key);
      expect(watermark).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
      const listed = await listAll(name === 'deletions' ? '/v1/deletions' : `/v1/${name}`, a.key);
      expect(byId(rows), name).toEqual(byId(listed));
      expect(rows.length, name).toBeGreaterThan(0);
      for (const r of rows) expect(Object.keys(r).sort(), name).toEqual(COLUMNS[name].map((c) => c.name).sort());
    }
  });

  it('counts exports and, in every format, exactly the rows sent in the metrics', async () => {
    const counted = async (format: string) =>
      Number((await registry.metrics()).match(new RegExp(`svc_export_rows_total\\{export="activity-results",format="${format}"\\} (\\d+)`))?.[1] ?? 0);
    const rows = (await ndjson('/v1/exports/activity-results', a.key)).rows.length;
    expect(rows).toBeGreaterThan(1);
    for (const format of ['ndjson', 'csv', 'parquet']) {
      const before = await counted(format);
      const res = await get(t, `/v1/exports/activity-results?format=${format}`, a.key);
      expect(res.status).toBe(200);
      await res.arrayBuffer();
      await expect.poll(async () => (await counted(format)) - before, { message: format }).toBe(rows);
    }
    expect(await registry.metrics()).toMatch(/svc_exports_total\{export="activity-results",format="ndjson",outcome="completed"\} [1-9]/);
  });

  it('RLS: another tenant’s rows never appear', async () => {
    const mine = new Set((await ndjson('/v1/exports/activity-results', a.key)).rows.map((r) => r.id));
    const theirs = (await ndjson('/v1/exports/activity-results', b.key)).rows.map((r) => r.id);
    expect(theirs).toEqual(expect.arrayContaining(b.resultIds));
    for (const id of theirs) expect(mine.has(id)).toBe(false);
    expect([...mine].sort()).toEqual([...a.resultIds].sort());
  });

  it('CSV: a text cell holding a bare LF or CR is quoted, as PostgreSQL quotes it (one record)', async () => {
    const cells = ['https://example.test/lf\nend', 'https://example.test/cr\rend'];
    const ids = a.artifactIds.slice(0, 2);
    const before = await t.db.query<{ id: string; ref_url: string | null }>('select id, ref_url from artifacts where id = any($1::uuid[])', [ids]);
    for (const [i, refUrl] of cells.entries()) await t.db.query('update artifacts set ref_url = $2 where id = $1', [ids[i], refUrl]);
    try {
      const text = await (await get(t, '/v1/exports/artifacts?format=csv', a.key)).text();
      // Quoted (csv-parse would read a bare LF inside CRLF records either way; line-based readers would not).
      for (const cell of cells) expect(text).toContain(`"${cell}"`);
      const records = parse(text, { columns: true }) as Record<string, string>[];
      const byId = new Map(records.map((r) => [r.id, r.ref_url]));
      expect(ids.map((id) => byId.get(id!))).toEqual(cells);
    } finally {
      for (const row of before) await t.db.query('update artifacts set ref_url = $2 where id = $1', [row.id, row.ref_url]);
    }
  });

  it('CSV: RFC 4180 with a header, nested values as JSON, null empty (csv-parse)', async () => {
    const res = await get(t, '/v1/exports/activity-results?format=csv', a.key);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8; header=present'); // RFC 4180 §3: US-ASCII without charset
    const text = await res.text();
    // RFC 4180 §2: every record, the header too, ends with CRLF; no bare LF (no cell here holds one).
    expect(text.endsWith('\r\n')).toBe(true);
    expect(text.replaceAll('\r\n', '')).not.toMatch(/[\r\n]/);
    const records: Record<string, string>[] = parse(text, { columns: true, relax_quotes: false, record_delimiter: '\r\n' });
    expect(Object.keys(records[0]!)).toEqual(COLUMNS['activity-results'].map((c) => c.name));
    const json = (await ndjson('/v1/exports/activity-results', a.key)).rows;
    expect(records.length).toBe(json.length);
    expect(text.split('\r\n').length).toBe(json.length + 2); // the header, the records, '' after the last CRLF
    for (const r of json) {
      const rec = records.find((x) => x.id === r.id)!;
      expect(rec.status).toBe(r.status);
      expect(rec.score).toBe(r.score === null ? '' : String(r.score));
      expect(rec.completed_at).toBe(r.completed_at ?? '');
      expect(rec.updated_at).toBe(r.updated_at);
      expect(JSON.parse(rec.artifact_ids!)).toEqual(r.artifact_ids);
    }
    // Accept picks CSV too; artifacts' verification is JSON text.
    const art = await get(t, '/v1/exports/artifacts', a.key, 'bearer', { accept: 'text/csv' });
    const arts: Record<string, string>[] = parse(await art.text(), { columns: true });
    const withVerdict = arts.find((x) => x.id === a.artifactIds[0])!;
    expect(JSON.parse(withVerdict.verification!)).toEqual({ passed: true, score: 92.5 });
    expect(arts.find((x) => x.id === a.artifactIds[1])!.verification).toBe('');
  });

  it('Parquet: read back by hyparquet with the same values and types (µs UTC timestamps)', async () => {
    const res = await get(t, '/v1/exports/activity-results', a.key, 'bearer', { accept: 'application/vnd.apache.parquet' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/vnd.apache.parquet');
    const file = arrayBufferOf(await bytes(res));
    const meta = parquetMetadata(file);
    const updated = meta.schema.find((s) => s.name === 'updated_at')!;
    expect(updated.type).toBe('INT64');
    expect(updated.logical_type).toEqual({ type: 'TIMESTAMP', isAdjustedToUTC: true, unit: 'MICROS' });
    expect(meta.schema.find((s) => s.name === 'score')!.type).toBe('DOUBLE');
    // Nested values: their JSON text as a UTF8 string (arrow-rs in parquet-wasm writes no JSON annotation).
    expect(meta.schema.find((s) => s.name === 'artifact_ids')).toMatchObject({ type: 'BYTE_ARRAY', converted_type: 'UTF8' });
    expect(meta.schema.find((s) => s.name === 'id')).toMatchObject({ type: 'BYTE_ARRAY', converted_type: 'UTF8' });
    const raw = await parquetReadObjects({ file, compressors: parquetCompressors, utf8: true, utf8Timestamps: false } as any);
    const json = (await ndjson('/v1/exports/activity-results', a.key)).rows;
    expect(raw.length).toBe(json.length);
    for (const r of json) {
      const p = raw.find((x: any) => x.id === r.id)!;
      expect(p.status).toBe(r.status);
      expect(p.score).toBe(r.score);
      // The JSON text of the array, as the NDJSON's value.
      expect(JSON.parse(p.artifact_ids)).toEqual(r.artifact_ids);
      expect((p.updated_at as Date).toISOString().slice(0, 23)).toBe(r.updated_at.slice(0, 23));
    }
    // Microseconds survive: the raw INT64 values.
    const micros = await parquetReadObjects({
      file,
      compressors: parquetCompressors,
      columns: ['updated_at'],
      utf8: true,
      parsers: { timestampFromMicroseconds: (v: bigint) => v },
    } as any);
    const us = (s: string) => (BigInt(Date.parse(`${s.slice(0, 19)}Z`)) * 1000000n) / 1000n + BigInt(s.slice(20, 26));
    expect(micros.map((m: any) => m.updated_at).sort()).toEqual(json.map((r) => us(r.updated_at)).sort());
  });

  it('Parquet: every export holds its NDJSON rows, value for value (µs timestamps, JSON text, integers, strings)', async () => {
    const us = (s: string) => BigInt(Date.parse(`${s.slice(0, 19)}Z`)) * 1000n + BigInt(s.slice(20, 26));
    for (const name of EXPORTS) {
      const res = await get(t, `/v1/exports/${name}?format=parquet`, a.key, 'bearer');
      expect(res.status, name).toBe(200);
      const file = arrayBufferOf(await bytes(res));
      const rows = await parquetReadObjects({
        file,
        compressors: parquetCompressors,
        utf8: true,
        parsers: { timestampFromMicroseconds: (v: bigint) => v },
      } as any);
      const json = (await ndjson(`/v1/exports/${name}`, a.key)).rows;
      expect(rows.length, name).toBe(json.length);
      expect(rows.length, name).toBeGreaterThan(0);
      const expected = json.map((r) =>
        Object.fromEntries(COLUMNS[name].map((c) => [c.name, r[c.name] === null ? null : c.kind === 'timestamp' ? us(r[c.name]) : r[c.name]])),
      );
      const got = rows.map((r: any) =>
        Object.fromEntries(
          COLUMNS[name].map((c) => [c.name, r[c.name] === undefined || r[c.name] === null ? null : c.kind === 'json' ? JSON.parse(r[c.name]) : r[c.name]]),
        ),
      );
      expect(byId(got), name).toEqual(byId(expected));
    }
  });

  it('Parquet: a ±infinity timestamp is null, as in NDJSON (it failed the PGlite export)', async () => {
    const id = a.resultIds[0];
    const [{ completed_at: before }] = (await t.db.query<{ completed_at: string | null }>(`select completed_at::text from activity_results where id = $1`, [
      id,
    ])) as [{ completed_at: string | null }];
    await t.db.query(`update activity_results set completed_at = 'infinity' where id = $1`, [id]);
    try {
      const res = await get(t, '/v1/exports/activity-results?format=parquet', a.key, 'bearer');
      expect(res.status).toBe(200);
      const rows = await parquetReadObjects({ file: arrayBufferOf(await bytes(res)), compressors: parquetCompressors, utf8: true } as any);
      expect(rows.find((r: any) => r.id === id)).toMatchObject({ completed_at: null });
      expect((await ndjson('/v1/exports/activity-results', a.key)).rows.find((r) => r.id === id).completed_at).toBeNull();
    } finally {
      await t.db.query(`update activity_results set completed_at = $2::timestamptz where id = $1`, [id, before]);
    }
  });

  it('incremental: ?updated_since=<watermark> returns exactly the changes, and deletions the tombstones', async () => {
    const first = await ndjson('/v1/exports/activity-results', a.key);
    const deletions0 = await ndjson('/v1/exports/deletions', a.key);
    expect((await ndjson(`/v1/exports/activity-results?updated_since=${first.watermark}`, a.key)).rows).toEqual([]);
    await t.db.query(`update activity_results set score = 77 where id = $1`, [a.resultIds[1]]);
    const [{ result_id: holder }] = (await t.db.query<{ result_id: string }>(`select result_id from artifacts where id = $1`, [a.artifactIds[1]])) as [
      { result_id: string },
    ];
    await t.db.query(`delete from artifacts where id = $1`, [a.artifactIds[1]]);
    const next = await ndjson(`/v1/exports/activity-results?updated_since=${first.watermark}`, a.key);
    // The updated result, and the one whose artifact was deleted (its artifact_ids changed), only.
    expect(new Set(next.rows.map((r) => r.id))).toEqual(new Set([a.resultIds[1], holder]));
    expect(next.rows.find((r) => r.id === holder).artifact_ids).not.toContain(a.artifactIds[1]);
    expect(next.watermark > first.watermark).toBe(true);
    const gone = await ndjson(`/v1/exports/deletions?updated_since=${deletions0.watermark}`, a.key);
    expect(gone.rows).toEqual([expect.objectContaining({ resource: 'artifact', id: a.artifactIds[1] })]);
  });

  it('bad input: 4xx with the /v1 error body before any row', async () => {
    await expectError(await get(t, '/v1/exports/programs', a.key), 404, 'not_found');
    await expectError(await get(t, '/v1/exports/nope', a.key), 404, 'not_found');
    await expectError(await get(t, '/v1/exports/progress?format=xml', a.key), 400, 'invalid_request');
    await expectError(await get(t, '/v1/exports/progress?updated_since=yesterday', a.key), 400, 'invalid_request');
    await expectError(await get(t, '/v1/exports/progress?limit=5', a.key), 400, 'invalid_request');
    await expectError(await get(t, '/v1/exports/progress', a.key, 'bearer', { accept: 'application/json' }), 406, 'not_acceptable');
    await expectError(await get(t, '/v1/exports/progress?format=csv', a.key, 'bearer', { accept: 'image/png' }), 406, 'not_acceptable');
    // `format` picks among what Accept allows: a format Accept refuses is 406, one it allows is served.
    const refused = await get(t, '/v1/exports/progress?format=csv', a.key, 'bearer', { accept: 'application/x-ndjson' });
    expect(refused.headers.get('vary')).toBe('Accept, Accept-Encoding');
    await expectError(refused, 406, 'not_acceptable');
    const allowed = await get(t, '/v1/exports/progress?format=csv', a.key, 'bearer', { accept: 'application/x-ndjson, text/*;q=0.1' });
    expect([allowed.status, allowed.headers.get('content-type')]).toEqual([200, expect.stringMatching(/^text\/csv/)]);
    await allowed.arrayBuffer();
    // Identity refused and no coding we write accepted.
    await expectError(await get(t, '/v1/exports/progress', a.key, 'bearer', { 'accept-encoding': 'br, identity;q=0' }), 406, 'not_acceptable');
    await expectError(await get(t, '/v1/exports/progress'), 401, 'unauthorized');
    // HEAD runs no export (no watermark taken).
    const head = await fetch(`${t.url}/v1/exports/progress?format=csv`, { method: 'HEAD', headers: { authorization: `Bearer ${a.key}` } });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-type')).toMatch(/^text\/csv/);
    expect(head.headers.get('svc-consistent-through')).toBeNull();
    // The GET's headers but the watermark; no Content-Length (the GET's is unknown, not 0).
    expect([head.headers.get('content-length'), head.headers.get('content-disposition'), head.headers.get('vary')]).toEqual([
      null,
      'attachment; filename="progress.csv"',
      'Accept, Accept-Encoding',
    ]);
  });

  it('negotiation: Accept q-values and wildcards; Accept-Encoding zstd, gzip, q=0', () => {
    expect(negotiateFormat(undefined)).toBe('ndjson');
    expect(negotiateFormat('*/*')).toBe('ndjson');
    expect(negotiateFormat('text/*')).toBe('csv');
    expect(negotiateFormat('text/csv;q=0.5, application/vnd.apache.parquet')).toBe('parquet');
    expect(negotiateFormat('application/x-ndjson;q=0, text/csv;q=0.1')).toBe('csv');
    expect(negotiateFormat('application/json')).toBeUndefined();
    // The most specific range gives a format its q (RFC 9110 §12.5.1): a refusal beats a wildcard.
    expect(negotiateFormat('application/x-ndjson;q=0, */*')).toBe('csv');
    expect(negotiateFormat('application/x-ndjson;q=0, application/*')).toBe('parquet');
    expect(negotiateFormat('text/csv;q=0, text/*')).toBeUndefined();
    expect(negotiateFormat('application/x-ndjson;q=0.1, */*')).toBe('csv');
    expect(negotiateFormat('text/csv; charset=utf-8')).toBe('csv');
    // Equal q: the more specific range, then the client's order (docs/api.md "Format").
    expect(negotiateFormat('text/csv;q=0.5, application/*;q=0.5')).toBe('csv');
    expect(negotiateFormat('text/csv, application/x-ndjson')).toBe('csv');
    expect(negotiateFormat('application/x-ndjson, text/csv')).toBe('ndjson');
    expect(negotiateFormat('application/*')).toBe('ndjson');
    // With `format`: that format unless Accept refuses it.
    expect(negotiateFormat(undefined, 'parquet')).toBe('parquet');
    expect(negotiateFormat('*/*', 'csv')).toBe('csv');
    expect(negotiateFormat('application/x-ndjson', 'csv')).toBeUndefined();
    expect(negotiateEncoding(undefined)).toBe('identity');
    expect(negotiateEncoding('gzip, deflate, br, zstd')).toBe('zstd');
    expect(negotiateEncoding('gzip, zstd;q=0')).toBe('gzip');
    expect(negotiateEncoding('zstd;q=0, *')).toBe('gzip');
    expect(negotiateEncoding('gzip;q=1, zstd;q=0.1')).toBe('gzip');
    expect(negotiateEncoding('x-gzip')).toBe('gzip');
    expect(negotiateEncoding('gzip;q=0.5, identity')).toBe('identity');
    expect(negotiateEncoding('identity')).toBe('identity');
    expect(negotiateEncoding('br, identity;q=0')).toBeUndefined();
    expect(negotiateEncoding('*;q=0')).toBeUndefined();
  });

  it('gzip and zstd round-trip to the same bytes', async () => {
    const plain = await bytes(await get(t, '/v1/exports/artifacts?format=csv', a.key));
    for (const coding of ['gzip', 'zstd'] as const) {
      // undici's fetch decodes gzip itself; read the raw bytes through node:http instead.
      const { request } = await import('node:http');
      const raw = await new Promise<{ enc: string | undefined; body: Buffer }>((resolve, reject) => {
        const req = request(`${t.url}/v1/exports/artifacts?format=csv`, { headers: { authorization: `Bearer ${a.key}`, 'accept-encoding': coding } }, (res) => {
          const parts: Buffer[] = [];
          res.on('data', (c) => parts.push(c));
          res.on('end', () => resolve({ enc: res.headers['content-encoding'], body: Buffer.concat(parts) }));
          res.on('error', reject);
        });
        req.on('error', reject);
        req.end();
      });
      expect(raw.enc).toBe(coding);
      const decoded = coding === 'gzip' ? zlib.gunzipSync(raw.body) : zlib.zstdDecompressSync(raw.body);
      expect(decoded.equals(plain)).toBe(true);
    }
  });

  it("a key's next export right after its client left the previous one is not refused", async () => {
    await atLeastBulk(30_000);
    for (let i = 0; i < 3; i++) {
      const held = await holdExport(`${t.url}/v1/exports/activity-results`, a.key);
      held.destroy(); // a `break` out of the client's loop, then the next export at once
      const next = await get(t, '/v1/exports/progress', a.key);
      expect(next.status, await next.clone().text()).toBe(200);
      await next.text();
    }
  });

  it('one export at a time per key: a second is 429 with Retry-After, another key is not blocked', async () => {
    await bulkResults(t.db, a.activityIds[2]!, 30_000);
    const other = await t.op('key.create', { tenant: a.slug, name: 'warehouse' });
    // Hold the first one open: a raw request that reads one chunk, then pauses (backpressure).
    const held = await holdExport(`${t.url}/v1/exports/activity-results`, a.key);
    const second = await get(t, '/v1/exports/progress', a.key);
    expect(second.headers.get('retry-after')).toMatch(/^\d+$/);
    await expectError(second, 429, 'rate_limited');
    // Another key of the tenant is not refused (on PGlite it waits for the one connection).
    const byOther = get(t, '/v1/exports/progress', other.key);
    if (t.db.kind === 'postgres') expect((await byOther).status).toBe(200);
    held.destroy();
    const otherRes = await byOther;
    expect(otherRes.status).toBe(200);
    await otherRes.text();
    // Once the first is gone, the key may export again.
    let again: Response | undefined;
    for (let i = 0; i < 50; i++) {
      again = await get(t, '/v1/exports/progress', a.key);
      if (again.status === 200) break;
      await again.text();
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(again!.status).toBe(200);
    await again!.text();
    // And the big export is whole when read to the end.
    const all = await ndjson('/v1/exports/activity-results', a.key);
    const [{ n }] = await t.db.query<{ n: number }>('select count(*)::int as n from activity_results where tenant_id = $1', [a.id]);
    expect(all.rows.length).toBe(n);
    expect(new Set(all.rows.map((r) => r.id)).size).toBe(n);
  });

  it('at most SVC_EXPORTS_MAX exports at once in a process, all keys together: one more is 503 with Retry-After', async () => {
    await atLeastBulk(30_000);
    const capped = await startApp({ results: { ...testConfig().results, exportsMax: 1 } }, { db: t.db });
    const other = await t.op('key.create', { tenant: a.slug, name: 'capped' });
    let held: HeldExport | undefined;
    try {
      held = await holdExport(`${capped.url}/v1/exports/activity-results`, a.key);
      const refused = await get(capped, '/v1/exports/progress', other.key);
      expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
      await expectError(refused, 503, 'unavailable');
      held.destroy();
      await expect
        .poll(async () => {
          const res = await get(capped, '/v1/exports/progress', other.key);
          await res.arrayBuffer();
          return res.status;
        })
        .toBe(200);
    } finally {
      held?.destroy();
      await capped.close();
    }
  });

  it('an export whose key is revoked stops within seconds (the transfer fails), as the key’s other requests do', async () => {
    await atLeastBulk(30_000);
    const { key, prefix } = await t.op('key.create', { tenant: a.slug, name: 'revoked mid-export' });
    const { res } = await holdExport(`${t.url}/v1/exports/activity-results`, key);
    const ended = transferEnd(res);
    await t.op('key.revoke', { prefix });
    // Read slowly: a whole export would still arrive if nothing stopped it (the key is checked every
    // second; 5 s leaves room for a loaded machine).
    await new Promise((r) => setTimeout(r, 5_000));
    res.resume();
    expect(await ended).toBe('aborted');
    await expectError(await get(t, '/v1/exports/progress', key), 401, 'unauthorized');
  });

  it('writes during an export: each row at most once, none after the watermark, and the next pull has every change', async () => {
    // (Runs after the 30,000-row test.) Open an export and hold it after its first chunk.
    const { request } = await import('node:http');
    let text = '';
    let watermark = '';
    let resume: (() => void) | undefined;
    const done = new Promise<void>((resolve, reject) => {
      const req = request(`${t.url}/v1/exports/activity-results`, { headers: { authorization: `Bearer ${a.key}` } }, (res) => {
        watermark = String(res.headers['svc-consistent-through']);
        res.setEncoding('utf8');
        res.once('data', (c: string) => {
          text += c;
          res.pause();
          resume = () => {
            res.on('data', (more: string) => (text += more));
            res.on('end', resolve);
            res.on('aborted', () => reject(new Error('aborted')));
            res.resume();
          };
        });
      });
      req.on('error', reject);
      req.end();
    });
    await new Promise<void>((r) => {
      const wait = () => (resume ? r() : setTimeout(wait, 10));
      wait();
    });
    // Concurrent writes while the export is under way: updates, deletions, an insert.
    const victims = (
      await t.db.query<{ id: string }>(`select id from activity_results where tenant_id = $1 and status = 'in_progress' order by updated_at desc limit 20`, [
        a.id,
      ])
    ).map((r) => r.id);
    await t.db.query(`update activity_results set score = 1 where id = any($1::uuid[])`, [victims.slice(0, 10)]);
    await t.db.query(`delete from activity_results where id = any($1::uuid[])`, [victims.slice(10)]);
    const added = await newResult(t.db, { activityId: a.activityIds[1]!, userId: await newUser(t.db) });
    resume!();
    await done;
    const rows = text
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    const ids = rows.map((r) => r.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const r of rows) expect(r.updated_at < watermark).toBe(true);
    expect(ids).not.toContain(added);
    // Rows untouched since the watermark are all there.
    const untouched = (await t.db.query<{ id: string }>(`select id from activity_results where tenant_id = $1 and updated_at < $2`, [a.id, watermark])).map(
      (r) => r.id,
    );
    expect(new Set(ids)).toEqual(new Set([...untouched, ...ids.filter((id) => !untouched.includes(id))]));
    for (const id of untouched) expect(ids.includes(id)).toBe(true);
    // The next pull: every changed row, and the deletions' tombstones.
    const next = (await ndjson(`/v1/exports/activity-results?updated_since=${watermark}`, a.key)).rows.map((r) => r.id);
    expect(next).toEqual(expect.arrayContaining([...victims.slice(0, 10), added]));
    const gone = (await ndjson(`/v1/exports/deletions?updated_since=${watermark}`, a.key)).rows.map((r) => r.id);
    expect(gone).toEqual(expect.arrayContaining(victims.slice(10)));
    // Applied in order, the pulls give exactly the database's rows.
    const have = new Set(ids);
    for (const id of next) have.add(id);
    for (const id of gone) have.delete(id);
    const [{ n }] = await t.db.query<{ n: number }>('select count(*)::int as n from activity_results where tenant_id = $1', [a.id]);
    expect(have.size).toBe(n);
  });

  it('is in the OpenAPI document', async () => {
    const doc = await getJson(t, '/v1/openapi.json');
    for (const name of EXPORTS) {
      const op = doc.paths[`/v1/exports/${name}`]?.get;
      expect(op, name).toBeDefined();
      expect(Object.keys(op.responses[200].content).sort()).toEqual(['application/vnd.apache.parquet', 'application/x-ndjson', 'text/csv']);
    }
  });
});
