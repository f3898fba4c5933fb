/**
 * Exports on PostgreSQL only (skipped on PGlite): one snapshot under concurrent inserts, updates
 * and deletions (exactly once, nothing after the watermark; NDJSON and Parquet); an export paused
 * longer than the lists' statement timeout ends whole; a client that disconnects ends the
 * server's query at once (pg_stat_activity); a failure after the first byte aborts the transfer
 * for every format (no clean truncated file).
 */
import http from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { parse } from 'csv-parse/sync';
import { parquetMetadata, parquetReadObjects } from 'hyparquet';
import { openDb } from '../../src/db/index.ts';
import { backend, startApp, testConfig, useApp, useFixture } from '../helpers/harness.ts';
import { arrayBufferOf, bulkResults, bytes, holdExport, parquetCompressors, transferEnd } from './exports-fixtures.ts';
import { expectError, get, seedTenant } from './fixtures.ts';

const t = useApp();
/** Tenant alpha with 40,000 results: an export of it outlasts a socket's buffers, so a test can act mid-export. */
const a = useFixture(async () => {
  const alpha = await seedTenant(t, 'alpha');
  await bulkResults(t.db, alpha.activityIds[1]!, 40_000);
  return alpha;
});

/** An RFC 3339 UTC time with microseconds, as µs since the epoch. */
const micros = (rfc3339: string) => Date.parse(rfc3339) * 1000 + Number(rfc3339.match(/\.\d{3}(\d{3})/)?.[1] ?? 0);

const exportBackends = () =>
  t.db.query<{ pid: number; state: string }>(`select pid, state from pg_stat_activity where application_name = 'svc-export' and datname = current_database()`);

/** The requests `holdExport` opened: a test that fails midway leaves none running (the key's next export would be refused). */
const opened: import('node:http').ClientRequest[] = [];
afterEach(() => {
  for (const req of opened.splice(0)) req.destroy();
});

/** `holdExport` of `path` on `base`, its requests remembered in `opened`. */
const hold = (path: string, key: string, base = t.url) => holdExport(`${base}${path}`, key, (req) => opened.push(req));

describe.skipIf(backend !== 'postgres')('exports on PostgreSQL', () => {
  it('one snapshot: exactly the rows changed before the watermark, under concurrent writes (NDJSON and Parquet)', async () => {
    const before = await t.db.query<{ id: string }>(`select id from activity_results where tenant_id = $1`, [a.id]);
    let writing = true;
    let writes = 0;
    // Three writers: their transactions overlap, so one that started later may commit before an
    // older one — the case a snapshot taken apart from its horizon gets wrong.
    const writer = async () => {
      while (writing) {
        await t.db.query(
          `update activity_results set score = random() * 100 where id = (select id from activity_results where tenant_id = $1 order by random() limit 1)`,
          [a.id],
        );
        await t.db.query(
          `delete from activity_results where id = (select id from activity_results where tenant_id = $1 and status = 'in_progress' order by random() limit 1)`,
          [a.id],
        );
        writes += 2;
      }
    };
    const writers = Promise.all([writer(), writer(), writer()]);
    const exported: { format: string; watermark: string; ids: string[]; updated: number[] }[] = [];
    for (const format of ['ndjson', 'parquet']) {
      const res = await get(t, `/v1/exports/activity-results?format=${format}`, a.key);
      expect(res.status).toBe(200);
      const watermark = res.headers.get('svc-consistent-through')!;
      if (format === 'ndjson') {
        const rows = (await res.text())
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l));
        exported.push({ format, watermark, ids: rows.map((r) => r.id), updated: rows.map((r) => micros(r.updated_at)) });
      } else {
        const rows = await parquetReadObjects({ file: arrayBufferOf(await bytes(res)), compressors: parquetCompressors, utf8: true } as any);
        exported.push({ format, watermark, ids: rows.map((r: any) => r.id), updated: rows.map((r: any) => Number(r.updated_at.getTime()) * 1000) });
      }
    }
    writing = false;
    await writers;
    expect(writes).toBeGreaterThan(0);
    for (const { format, watermark, ids, updated } of exported) {
      expect(new Set(ids).size, format).toBe(ids.length); // each once
      for (const u of updated) expect(u, format).toBeLessThan(micros(watermark)); // nothing after the watermark
      // What the database holds now, rewound to the watermark: rows updated before it, plus rows
      // that were deleted or updated after it (then they existed at the watermark).
      const now = await t.db.query<{ id: string }>(
        `select id from activity_results where tenant_id = $1 and updated_at < $2
         union select id from deletions where tenant_id = $1 and resource = 'activity_result' and deleted_at >= $2`,
        [a.id, watermark],
      );
      const changedAfter = new Set(
        (await t.db.query<{ id: string }>(`select id from activity_results where tenant_id = $1 and updated_at >= $2`, [a.id, watermark])).map((r) => r.id),
      );
      const expected = new Set([...now.map((r) => r.id), ...before.map((r) => r.id).filter((id) => changedAfter.has(id))]);
      // Rows updated after the watermark existed before it (they were in `before`) unless inserted after it.
      expect(new Set(ids), format).toEqual(expected);
    }
  });

  it('RLS holds in parallel workers: a parallel plan as the key’s tenant returns its rows and no other’s (migration 0163)', async () => {
    const b = await seedTenant(t, 'beta');
    await bulkResults(t.db, a.activityIds[1]!, 2_000);
    await bulkResults(t.db, b.activityIds[1]!, 3_000);
    const [{ n: mine }] = (await t.db.query<{ n: number }>(`select count(*)::int as n from activity_results where tenant_id = $1`, [a.id])) as [{ n: number }];
    const seen = await t.db.transaction(async (tx) => {
      await tx.query(`select svc.results_enter($1::uuid, false)`, [a.id]);
      // A parallel plan even for a small table (force_parallel_mode on PostgreSQL 15, renamed
      // debug_parallel_query in 16); a parallel-unsafe RLS function would keep it in the leader.
      await tx.query(`select set_config(name, 'on', true) from pg_settings where name in ('force_parallel_mode', 'debug_parallel_query')`);
      await tx.query(
        `select set_config('parallel_setup_cost', '0', true), set_config('parallel_tuple_cost', '0', true), set_config('min_parallel_table_scan_size', '0', true)`,
      );
      const sql = `select count(*)::int as n, count(*) filter (where tenant_id <> $1)::int as others from activity_results`;
      const plan = (await tx.query<{ 'QUERY PLAN': string }>(`explain ${sql.replace('$1', `'${a.id}'::uuid`)}`)).map((r) => r['QUERY PLAN']).join('\n');
      const [counts] = await tx.query<{ n: number; others: number }>(sql, [a.id]);
      return { plan, ...counts! };
    });
    expect(seen.plan).toMatch(/Gather/);
    expect(seen.n).toBe(mine);
    expect(seen.n).toBeGreaterThanOrEqual(2_000);
    expect(seen.others).toBe(0);
  });

  it('is not cut by the statement timeout of the lists: a paused export resumes and ends whole, in every format', async () => {
    // A second app on the same database whose pool cuts statements after 300 ms (its client reads
    // time out 1 s later; not less: the app's own start and key lookups run on that pool, and a
    // loaded runner stalls for tens of ms): an export paused 1.5 s on the pool's connections would fail.
    const db = await openDb({ databaseUrl: t.dbUrl!, dbStatementTimeoutMs: 300 });
    const strict = await startApp({}, { db });
    try {
      await expect(db.query('select pg_sleep(1)')).rejects.toThrow(); // the pool's statements are cut
      const [{ n }] = (await t.db.query<{ n: number }>('select count(*)::int as n from activity_results where tenant_id = $1', [a.id])) as [{ n: number }];
      for (const format of ['ndjson', 'csv', 'parquet']) {
        const held = await hold(`/v1/exports/activity-results?format=${format}`, a.key, strict.url);
        const { res } = held;
        await new Promise((r) => setTimeout(r, 1500)); // paused: the COPY waits on the socket
        const chunks: Buffer[] = [held.first];
        res.on('data', (c: Buffer) => chunks.push(c));
        await new Promise<void>((resolve, reject) => {
          res.on('end', resolve);
          res.on('aborted', () => reject(new Error(`${format}: aborted`)));
          res.resume();
        });
        const body = Buffer.concat(chunks);
        const rows =
          format === 'ndjson'
            ? body.toString().trimEnd().split('\n').length
            : format === 'csv'
              ? parse(body, { columns: true }).length
              : Number(parquetMetadata(arrayBufferOf(body)).num_rows);
        expect(rows, format).toBe(n);
      }
    } finally {
      await strict.close();
      await db.close();
    }
  });

  it('a client that stops reading is ended after the idle timeout: its snapshot, connection and key’s export are freed', async () => {
    const idle = await startApp({ results: { ...testConfig().results, exportIdleTimeoutMs: 1000 } }, { db: t.db });
    try {
      const held = await hold('/v1/exports/activity-results', a.key, idle.url);
      const ended = transferEnd(held.res);
      await expect.poll(async () => (await exportBackends()).length).toBe(1);
      // Not reading at all: the server's writes stall, and after 1 s without a byte sent it ends.
      await expect.poll(async () => (await exportBackends()).length).toBe(0);
      held.res.resume();
      expect(await ended).toBe('aborted');
      const again = await get(idle, '/v1/exports/progress', a.key);
      expect(again.status).toBe(200);
      await again.arrayBuffer();
    } finally {
      await idle.close();
    }
  });

  it('a client that disconnects ends the server’s query at once (pg_stat_activity)', async () => {
    for (const format of ['ndjson', 'csv', 'parquet']) {
      const held = await hold(`/v1/exports/activity-results?format=${format}`, a.key);
      expect((await exportBackends()).length, format).toBe(1);
      held.destroy();
      const started = Date.now();
      while ((await exportBackends()).length > 0) {
        expect(Date.now() - started, format).toBeLessThan(5000); // at once, with room for a loaded runner; a query left running stays blocked on its socket
        await new Promise((r) => setTimeout(r, 20));
      }
    }
  });

  it('a failure before the first byte is an error answer without the export’s headers (no gzip-marked JSON, no attachment)', async () => {
    // The COPY of activity results joins lessons: with lessons locked it waits after the snapshot
    // is taken (the export has started) and before its first row, and is then cancelled.
    const locker = await t.db.dedicatedClient!('svc-test-locker');
    try {
      await locker.query('begin; lock table lessons in access exclusive mode');
      const answer = get(t, '/v1/exports/activity-results?format=csv', a.key, 'bearer', { 'accept-encoding': 'gzip' });
      const waiting = `select count(*)::int as n from pg_stat_activity where application_name = 'svc-export' and wait_event_type = 'Lock' and query ilike 'copy%'`;
      await expect.poll(async () => (await t.db.query<{ n: number }>(waiting))[0]!.n).toBe(1);
      await t.db.query(`select pg_cancel_backend(pid) from pg_stat_activity where application_name = 'svc-export' and datname = current_database()`);
      const res = await answer;
      expect(res.status).toBeGreaterThanOrEqual(500);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect([res.headers.get('content-encoding'), res.headers.get('content-disposition'), res.headers.get('svc-consistent-through')]).toEqual([
        null,
        null,
        null,
      ]);
      expect(await res.json()).toMatchObject({ error: { code: expect.any(String), message: expect.any(String) } });
    } finally {
      await locker.query('rollback').catch(() => {});
      await locker.end();
    }
    await expect.poll(async () => (await exportBackends()).length).toBe(0);
  });

  it('a client that leaves while the export starts (its snapshot or COPY waiting on a lock) ends the query at once and frees the key', async () => {
    // The key's slot is free once the export's connection closed (a moment after its backend left pg_stat_activity).
    const keyFree = (key: string) =>
      expect
        .poll(
          async () => {
            const res = await get(t, '/v1/exports/deletions', key);
            await res.arrayBuffer();
            return res.status;
          },
          { timeout: 10_000 },
        )
        .toBe(200);
    const locker = await t.db.dedicatedClient!('svc-test-locker');
    try {
      // Parquet's COPY (before its first row group) waits on lessons; every format's snapshot reads activity_results first.
      for (const [format, table, statement] of [
        ['parquet', 'lessons', 'copy%'],
        ['csv', 'activity_results', 'select%'],
      ] as const) {
        const { key } = await t.op('key.create', { tenant: a.slug, name: `leaves while ${format} starts` });
        await locker.query(`begin; lock table ${table} in access exclusive mode`);
        const req = http.get(`${t.url}/v1/exports/activity-results?format=${format}`, { headers: { authorization: `Bearer ${key}` } });
        req.on('error', () => {});
        const waiting = `select count(*)::int as n from pg_stat_activity where application_name = 'svc-export' and wait_event_type = 'Lock' and query ilike '${statement}'`;
        await expect.poll(async () => (await t.db.query<{ n: number }>(waiting))[0]!.n, { timeout: 10_000 }).toBe(1);
        req.destroy();
        const left = Date.now();
        while ((await exportBackends()).length > 0) {
          expect(Date.now() - left, format).toBeLessThan(5000); // while the lock is still held
          await new Promise((r) => setTimeout(r, 20));
        }
        await locker.query('rollback');
        await keyFree(key);
      }
    } finally {
      await locker.query('rollback').catch(() => {});
      await locker.end();
    }
  });

  it('a query that fails on its first row is an error answer in every format (Parquet: not a 200 with the file magic)', async () => {
    const g = await seedTenant(t, 'gamma');
    // A verification that is not an object: `verification - 'held'` fails on it ("cannot delete from scalar").
    await t.db.query(`update artifacts set verification = '1'::jsonb where tenant_id = $1`, [g.id]);
    for (const format of ['ndjson', 'csv', 'parquet']) {
      for (const encoding of ['identity', 'gzip', 'zstd']) {
        const res = await get(t, `/v1/exports/artifacts?format=${format}`, g.key, 'bearer', { 'accept-encoding': encoding });
        expect(res.status, `${format} ${encoding}`).toBeGreaterThanOrEqual(500);
        expect([res.headers.get('content-encoding'), res.headers.get('svc-consistent-through')], `${format} ${encoding}`).toEqual([null, null]);
        expect(await res.json()).toMatchObject({ error: { code: expect.any(String) } });
      }
    }
  });

  it('a key revoked while its export waits for the first row is answered 401, and the export ends', async () => {
    const { key, prefix } = await t.op('key.create', { tenant: a.slug, name: 'revoked before the first row' });
    const locker = await t.db.dedicatedClient!('svc-test-locker');
    try {
      await locker.query('begin; lock table lessons in access exclusive mode');
      const answer = get(t, '/v1/exports/activity-results?format=csv', key, 'bearer', { 'accept-encoding': 'zstd' });
      const waiting = `select count(*)::int as n from pg_stat_activity where application_name = 'svc-export' and wait_event_type = 'Lock' and query ilike 'copy%'`;
      await expect.poll(async () => (await t.db.query<{ n: number }>(waiting))[0]!.n).toBe(1);
      await t.op('key.revoke', { prefix });
      const res = await answer;
      expect(res.headers.get('content-encoding')).toBeNull();
      await expectError(res, 401, 'unauthorized');
    } finally {
      await locker.query('rollback').catch(() => {});
      await locker.end();
    }
    await expect.poll(async () => (await exportBackends()).length).toBe(0);
  });

  it('a failure after the first byte aborts the transfer in every format (no clean truncated file)', async () => {
    for (const format of ['ndjson', 'csv', 'parquet']) {
      const held = await hold(`/v1/exports/activity-results?format=${format}`, a.key);
      const outcome = new Promise<string>((resolve) => {
        held.on('response', () => {});
        held.once('error', (e) => resolve(`error ${e.message}`));
        held.on('close', () => resolve('close'));
      });
      const { res } = held;
      const ended = transferEnd(res);
      await t.db.query(`select pg_terminate_backend(pid) from pg_stat_activity where application_name = 'svc-export' and datname = current_database()`);
      res.resume();
      expect(await ended, format).toBe('aborted');
      await outcome;
    }
  });
});
