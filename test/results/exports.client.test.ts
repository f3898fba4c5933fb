/**
 * The typed client and the CLI on the exports (issue #24): `exportStream()` yields the list's
 * typed rows and the watermark; `sync()` without a checkpoint pulls through one export, then
 * follows the feed from its watermark (one request for the full pull, exactly the database's rows
 * after later changes); `svc-results export` writes ndjson, csv and parquet from the stream, the
 * tombstones too, and `--resume` does not write a finished export again; a failure mid-stream is
 * an error, not a short file (the CLI leaves no file at `--out`).
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { parse } from 'csv-parse/sync';
import { parquetReadObjects } from 'hyparquet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createResultsClient, ResultsApiError, type ResultsClient, type SyncCheckpoint } from '../../clients/js/src/index.ts';
import { useApp, useFixture } from '../helpers/harness.ts';
import { arrayBufferOf, parquetCompressors } from './exports-fixtures.ts';
import { newResult, newUser, seedTenant } from './fixtures.ts';

/** This checkout's CLI (`npx svc-results` may resolve to another checkout's workspace link). */
const CLI = fileURLToPath(new URL('../../clients/js/bin/svc-results.js', import.meta.url));
const t = useApp();
const a = useFixture(() => seedTenant(t, 'alpha'));
const b = useFixture(() => seedTenant(t, 'beta'));
let tmp: string;
let client: ResultsClient;
const requests: string[] = [];

beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'svc-exports-'));
  client = createResultsClient({
    baseUrl: t.url,
    apiKey: a.key,
    fetch: (req) => {
      requests.push(new URL(req.url).pathname);
      return fetch(req);
    },
  });
});
afterAll(() => rm(tmp, { recursive: true, force: true }));

const dbIds = async (tenantId: string) =>
  (await t.db.query<{ id: string }>('select id from activity_results where tenant_id = $1', [tenantId])).map((r) => r.id).sort();

describe('exportStream()', () => {
  it('yields the list’s rows (typed) and the watermark; updatedSince gives the changes', async () => {
    const stream = await client.exportStream('activity-results');
    const rows = [];
    for await (const row of stream) rows.push(row);
    expect(stream.watermark).toMatch(/Z$/);
    expect(rows.map((r) => r.id).sort()).toEqual(await dbIds(a.id));
    const listed = [];
    for await (const r of client.list('activity-results', { updated_since: '1970-01-01T00:00:00Z' })) listed.push(r);
    expect(rows).toEqual(listed); // same objects, same (updated_at, id) order
    await t.db.query('update activity_results set score = 55 where id = $1', [a.resultIds[2]]);
    const since = await client.exportStream('activity-results', { updatedSince: stream.watermark! });
    const changed = [];
    for await (const row of since) changed.push(row);
    expect(changed.map((r) => [r.id, r.score])).toEqual([[a.resultIds[2], 55]]);
  });

  it('errors are ResultsApiError before any row', async () => {
    const bad = await client.exportStream('progress', { updatedSince: 'yesterday' }).catch((e) => e);
    expect(bad).toBeInstanceOf(ResultsApiError);
    expect(bad.code).toBe('invalid_request');
  });
});

describe('export compression', () => {
  /** The Accept-Encoding an export request of a client on `baseUrl` carries (null: the fetch's own). */
  const acceptEncoding = async (baseUrl: string, compressExports?: boolean) => {
    let seen: string | null | undefined;
    const c = createResultsClient({
      baseUrl,
      apiKey: 'svc_test',
      compressExports,
      fetch: async (req) => {
        seen = req.headers.get('accept-encoding');
        return new Response('', { status: 200, headers: { 'svc-consistent-through': '2026-01-01T00:00:00.000000Z' } });
      },
    });
    await c.exportRaw('activity-results');
    return seen;
  };

  it('asks for identity on a loopback address (compressing there only costs CPU), else leaves it to fetch', async () => {
    expect(await acceptEncoding('http://127.0.0.1:3000')).toBe('identity');
    expect(await acceptEncoding('http://localhost:3000/')).toBe('identity');
    expect(await acceptEncoding('http://[::1]:3000')).toBe('identity');
    expect(await acceptEncoding('http://[::ffff:127.0.0.1]:3000')).toBe('identity');
    expect(await acceptEncoding('http://0.0.0.0:3000')).toBe('identity');
    expect(await acceptEncoding('http://[::ffff:10.0.0.1]:3000')).toBeNull();
    expect(await acceptEncoding('https://learn.example.com')).toBeNull();
    expect(await acceptEncoding('http://127.0.0.1:3000', true)).toBeNull();
    expect(await acceptEncoding('https://learn.example.com', false)).toBe('identity');
  });

  it('reads a compressed export when asked to', async () => {
    let coding: string | null = null;
    const c = createResultsClient({
      baseUrl: t.url,
      apiKey: a.key,
      compressExports: true,
      fetch: async (req) => {
        const res = await fetch(req);
        coding = res.headers.get('content-encoding');
        return res;
      },
    });
    const ids: string[] = [];
    for await (const r of await c.exportStream('activity-results')) ids.push(r.id);
    expect(coding).toMatch(/^(gzip|zstd)$/);
    const plain: string[] = [];
    for await (const r of await client.exportStream('activity-results')) plain.push(r.id);
    expect(ids.sort()).toEqual(plain.sort());
    expect(ids.length).toBeGreaterThan(0);
  });
});

describe('sync()', () => {
  it('pulls everything through one export, then follows the feed from its watermark', async () => {
    requests.length = 0;
    const rows = new Map<string, any>();
    let checkpoint: SyncCheckpoint | undefined;
    for await (const e of client.sync('activity-results')) {
      if (e.type === 'upsert') rows.set(e.row.id, e.row);
      if (e.type === 'checkpoint') checkpoint = e.checkpoint;
    }
    expect(requests.filter((p) => p === '/v1/exports/activity-results')).toHaveLength(1);
    expect(requests.filter((p) => p === '/v1/activity-results')).toHaveLength(1); // the feed's one (empty) page
    expect([...rows.keys()].sort()).toEqual(await dbIds(a.id));
    // Later changes come through the feed: a new result, a deleted one.
    const user = await newUser(t.db);
    const added = await newResult(t.db, { activityId: a.activityIds[2]!, userId: user });
    await t.db.query('delete from artifacts where result_id = $1', [a.resultIds[1]]);
    await t.db.query('delete from activity_results where id = $1', [a.resultIds[1]]);
    for await (const e of client.sync('activity-results', { checkpoint })) {
      if (e.type === 'upsert') rows.set(e.row.id, e.row);
      if (e.type === 'delete') rows.delete(e.tombstone.id);
    }
    expect(rows.has(added)).toBe(true);
    expect([...rows.keys()].sort()).toEqual(await dbIds(a.id));
    for (const id of await dbIds(b.id)) expect(rows.has(id)).toBe(false);
  });
});

describe('svc-results export (stream)', () => {
  const run = (args: string[], baseUrl = t.url) =>
    promisify(execFile)(process.execPath, [CLI, ...args], { env: { ...process.env, SVC_BASE_URL: baseUrl, SVC_API_KEY: a.key } });

  it('--resume after a finished stream writes nothing again and gives the next --updated-since', async () => {
    const out = join(tmp, 'again.ndjson');
    await run(['export', 'progress', '--format', 'ndjson', '--out', out]);
    const first = await readFile(out);
    const { stderr } = await run(['export', 'progress', '--format', 'ndjson', '--out', out, '--resume']);
    expect(stderr).toMatch(/already complete .* --updated-since \S+Z/);
    expect(await readFile(out)).toEqual(first);
    // The watermark it printed gives the tombstones since, from the stream.
    const since = stderr.match(/--updated-since (\S+Z)/)![1]!;
    const gone = join(tmp, 'deletions.ndjson');
    await run(['export', 'deletions', '--format', 'ndjson', '--updated-since', since, '--out', gone]);
    expect(await readFile(gone, 'utf8')).toBe('');
  });

  it('--resume refuses a file that holds another resource or format; counts CSV records, not line breaks', async () => {
    const out = join(tmp, 'held.csv');
    await run(['export', 'progress', '--format', 'csv', '--out', out]);
    for (const args of [
      ['export', 'learners', '--format', 'csv'],
      ['export', 'progress', '--format', 'ndjson'],
    ]) {
      const refused = await run([...args, '--out', out, '--resume']).catch((e: { code: number; stderr: string }) => e);
      expect(refused, args.join(' ')).toMatchObject({ code: 1, stderr: expect.stringMatching(/holds an export of progress as csv/) });
    }
    // A quoted cell holding a line break (an artifact's ref_url) is one record.
    await t.db.query(`update artifacts set ref_url = 'https://example.test/a\r\nb' where id = $1`, [a.artifactIds[0]]);
    const artifacts = join(tmp, 'artifacts.csv');
    const { stderr } = await run(['export', 'artifacts', '--format', 'csv', '--out', artifacts]);
    const records = parse(await readFile(artifacts, 'utf8'), { columns: true }).length;
    expect(stderr).toContain(`${records} rows exported`);
    expect((await readFile(artifacts, 'utf8')).split('\n').length - 2).toBeGreaterThan(records); // more line breaks than records
  });

  it('a stream cut mid-way exits 1 and leaves no file at --out (nor a .partial)', async () => {
    // A peer that answers like the service, then drops the connection mid-body (a network failure).
    const cutter = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/x-ndjson', 'svc-consistent-through': '2026-11-27T00:00:00.000000Z' });
      res.write('{"id" : "1"}\n{"id" : "2"}\n');
      setTimeout(() => res.socket?.destroy(), 50);
    });
    await new Promise<void>((resolve) => cutter.listen(0, '127.0.0.1', resolve));
    try {
      const out = join(tmp, 'cut.ndjson');
      const failed = await run(
        ['export', 'activity-results', '--format', 'ndjson', '--out', out],
        `http://127.0.0.1:${(cutter.address() as AddressInfo).port}`,
      ).catch((e: { code: number; stderr: string }) => e);
      expect((failed as { code: number }).code).toBe(1);
      expect([existsSync(out), existsSync(`${out}.partial`)]).toEqual([false, false]);
    } finally {
      cutter.closeAllConnections();
      await new Promise((resolve) => cutter.close(resolve));
    }
  });

  it('writes ndjson, csv and parquet from the stream', async () => {
    const ids = await dbIds(a.id);
    const nd = join(tmp, 'r.ndjson');
    const { stderr } = await run(['export', 'activity-results', '--format', 'ndjson', '--out', nd]);
    expect(stderr).toMatch(new RegExp(`activity-results: ${ids.length} rows exported, consistent through \\S+Z`));
    const lines = (await readFile(nd, 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines.map((l) => l.id).sort()).toEqual(ids);
    const csv = join(tmp, 'r.csv');
    await run(['export', 'activity-results', '--format', 'csv', '--out', csv]);
    const records = parse(await readFile(csv, 'utf8'), { columns: true }) as Record<string, string>[];
    expect(records.map((r) => r.id).sort()).toEqual(ids);
    const pq = join(tmp, 'r.parquet');
    await run(['export', 'activity-results', '--format', 'parquet', '--out', pq]);
    const objs = await parquetReadObjects({ file: arrayBufferOf(await readFile(pq)), compressors: parquetCompressors, utf8: true });
    expect(objs.map((o: any) => o.id).sort()).toEqual(ids);
  });
});
