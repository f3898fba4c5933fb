/**
 * Results API incremental sync: `updated_since` on every list, ordered by (updated_at, id) with
 * its own cursor; rows updated after a consumer saw them come again; the database owns
 * updated_at; content changes move progress; and a transaction that commits late is never
 * skipped by a consumer tailing the feed (two overlapping transactions, PostgreSQL only).
 */
import { describe, expect, it } from 'vitest';
import { backend, useApp, useFixture } from '../helpers/harness.ts';
import { expectError, get, getJson, newArtifact, newProgram, newProgress, newResult, RFC3339_MICROS, seedTenant, walk } from './fixtures.ts';

const t = useApp();
const a = useFixture(() => seedTenant(t, 'alpha'));
const b = useFixture(() => seedTenant(t, 'beta'));

const EPOCH = '2000-01-01T00:00:00Z';
const LISTS = [
  { path: '/v1/activity-results', table: 'activity_results', id: (r: any) => r.id, dbId: 'id' },
  { path: '/v1/artifacts', table: 'artifacts', id: (r: any) => r.id, dbId: 'id' },
  { path: '/v1/progress', table: 'progress', id: (r: any) => `${r.svc_user_id}/${r.program_id}`, dbId: `user_id || '/' || program_id` },
] as const;

/** `updated_since` values that are not RFC 3339 timestamps (or not real instants). */
const NOT_RFC3339 = [
  '',
  'yesterday',
  '2026-01-01',
  '2026-01-01 00:00:00Z',
  '2026-01-01T00:00:00',
  '2026-02-30T00:00:00Z',
  '2026-13-01T00:00:00Z',
  '2026-01-01T24:00:00Z',
  '2026-12-31T23:59:60Z',
  '2026-01-01T00:00:00.1234567Z',
  '2026-01-01T00:00:00+24:00',
  '0001-01-01T00:00:00+01:00',
  '1e9',
  '２０２６-01-01T00:00:00Z',
];

/** The tenant's rows of `table` in feed order, as the database sees them. */
const feedOrder = (table: string, dbId: string, tenantId: string, since = EPOCH) =>
  t.db
    // `t.id`, not `id`: the output alias would shadow the row id and order ties differently.
    .query<{ id: string }>(`select ${dbId} as id from ${table} t where tenant_id = $1 and updated_at >= $2 order by t.updated_at, t.id`, [tenantId, since])
    .then((rows) => rows.map((r) => r.id));

describe('the updated_since feed', () => {
  it('lists every row changed since the instant, in (updated_at, id) order, on every list', async () => {
    for (const list of LISTS) {
      const { ids, pages } = await walk(t, `${list.path}?updated_since=${EPOCH}`, a.key, 1, list.id);
      expect(ids, list.path).toEqual(await feedOrder(list.table, list.dbId, a.id));
      expect(ids.length).toBeGreaterThan(0);
      for (const page of pages) for (const row of page.data) expect(row.updated_at).toMatch(RFC3339_MICROS);
    }
  });

  it('brings back a row updated after the consumer saw it, and only what changed', async () => {
    const first = await walk(t, `/v1/activity-results?updated_since=${EPOCH}`, a.key, 2);
    const lastSeen = first.pages.at(-1).data.at(-1).updated_at as string;
    // Nothing changed: resuming at the last instant seen repeats only rows of that instant.
    const again = await getJson(t, `/v1/activity-results?updated_since=${lastSeen}`, a.key);
    expect(again.data.every((r: any) => r.updated_at === lastSeen)).toBe(true);

    // A verdict on the first result (as the embed judge writes it): it moves to the end of the feed.
    const [changed] = await t.db.query<{ id: string }>(`update activity_results set status = 'completed', score = 99 where id = $1 returning id`, [
      a.resultIds[1],
    ]);
    const { ids, pages } = await walk(t, `/v1/activity-results?updated_since=${lastSeen}`, a.key, 1);
    expect(ids.at(-1)).toBe(changed!.id);
    expect(pages.at(-1).data[0]).toMatchObject({ id: a.resultIds[1], status: 'completed', score: 99 });
    expect(pages.at(-1).data[0].updated_at > lastSeen).toBe(true);
  });

  it('walks rows that share one transaction (and possibly one timestamp) without gaps or repeats', async () => {
    await t.db.query(`update artifacts set verification = '{"status":"passed"}' where tenant_id = $1`, [b.id]);
    for (const limit of [1, 2, 200]) {
      const { ids } = await walk(t, `/v1/artifacts?updated_since=${EPOCH}`, b.key, limit);
      expect(ids, `limit=${limit}`).toEqual(await feedOrder('artifacts', 'id', b.id));
      expect(new Set(ids).size).toBe(ids.length);
    }
  });

  it('combines with the filters, and never shows another tenant’s rows', async () => {
    const byUser = await walk(t, `/v1/activity-results?updated_since=${EPOCH}&user_id=${a.userIds[0]}`, a.key, 1);
    const expected = await t.db.query<{ id: string }>('select id from activity_results where tenant_id = $1 and user_id = $2 order by updated_at, id', [
      a.id,
      a.userIds[0],
    ]);
    expect(byUser.ids).toEqual(expected.map((r) => r.id));
    const foreign = new Set([...b.resultIds, ...b.artifactIds]);
    for (const list of LISTS) {
      const { ids } = await walk(t, `${list.path}?updated_since=${EPOCH}`, a.key, 200, (r) => r.id ?? r.program_id);
      for (const id of ids) expect(foreign.has(id)).toBe(false);
    }
    const completed = await getJson(t, `/v1/activity-results?updated_since=${EPOCH}&status=completed`, a.key);
    expect(completed.data.every((r: any) => r.status === 'completed')).toBe(true);
  });

  it('takes any RFC 3339 spelling of the same instant, and keeps microseconds exact', async () => {
    const [row] = await t.db.query<{ at: string; id: string }>(
      `select to_char(updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as at, id from artifacts
        where tenant_id = $1 order by updated_at desc, id desc limit 1`,
      [a.id],
    );
    const at = row!.at; // e.g. 2026-11-22T07:06:57.842123Z
    const [date, time] = at.slice(0, -1).split('T') as [string, string];
    const seconds = Date.parse(`${at.slice(0, 19)}Z`);
    const micros = time.slice(8); // ".ffffff"
    const spellings = [
      at,
      `${date}t${time}z`,
      // the same instant written at +01:00 and at -00:30
      `${new Date(seconds + 3_600_000).toISOString().slice(0, 19)}${micros}+01:00`,
      `${new Date(seconds - 1_800_000).toISOString().slice(0, 19)}${micros}-00:30`,
    ];
    // Rows at exactly that instant or later (PGlite's clock has millisecond steps: there may be ties).
    const expected = await feedOrder('artifacts', 'id', a.id, at);
    expect(expected).toContain(row!.id);
    for (const since of spellings) {
      const body = await getJson(t, `/v1/artifacts?updated_since=${encodeURIComponent(since)}`, a.key);
      expect(
        body.data.map((r: any) => r.id),
        since,
      ).toEqual(expected);
    }
    // One microsecond later excludes it.
    const later = at.replace(/(\d{6})Z$/, (_m, us: string) => `${String(Number(us) + 1).padStart(6, '0')}Z`);
    if (!later.endsWith('1000000Z')) expect((await getJson(t, `/v1/artifacts?updated_since=${later}`, a.key)).data).toEqual([]);
  });

  it('refuses a timestamp that is not RFC 3339, naming updated_since', async () => {
    for (const bad of NOT_RFC3339) {
      const message = await expectError(await get(t, `/v1/progress?updated_since=${encodeURIComponent(bad)}`, a.key), 400, 'invalid_request');
      expect(message, bad).toMatch(/^updated_since:/);
    }
    const message = await expectError(await get(t, `/v1/progress?updated_since=${EPOCH}&updated_since=${EPOCH}`, a.key), 400, 'invalid_request');
    expect(message).toMatch(/^updated_since: is given more than once/);
  });

  it('binds its cursor to the feed and its instant', async () => {
    const feed = (await getJson(t, `/v1/activity-results?updated_since=${EPOCH}&limit=1`, a.key)).next_cursor;
    const created = (await getJson(t, '/v1/activity-results?limit=1', a.key)).next_cursor;
    expect(feed).toEqual(expect.any(String));
    const m1 = await expectError(await get(t, `/v1/activity-results?cursor=${feed}`, a.key), 400, 'invalid_request');
    expect(m1).toMatch(/^cursor: .*updated_since/);
    const m2 = await expectError(await get(t, `/v1/activity-results?updated_since=${EPOCH}&cursor=${created}`, a.key), 400, 'invalid_request');
    expect(m2).toMatch(/^cursor: .*created_at order/);
    const m3 = await expectError(await get(t, `/v1/activity-results?updated_since=2001-01-01T00:00:00Z&cursor=${feed}`, a.key), 400, 'invalid_request');
    expect(m3).toMatch(/^cursor: .*filters/);
    await expectError(await get(t, `/v1/artifacts?updated_since=${EPOCH}&cursor=${feed}`, a.key), 400, 'invalid_request');
    // The same instant spelled differently is the same feed.
    await getJson(t, `/v1/activity-results?updated_since=2000-01-01T01:00:00%2B01:00&cursor=${feed}`, a.key);
  });
});

describe('updated_at belongs to the database', () => {
  it('is set on insert and on every update, whatever the writer sends', async () => {
    const before = await t.db.query<{ now: string }>(`select to_char(clock_timestamp() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as now`);
    const id = await newResult(t.db, { activityId: a.activityIds[2]!, userId: a.userIds[1]!, createdAt: '2020-01-01T00:00:00Z' });
    await t.db.query(`update activity_results set updated_at = '2001-01-01' where id = $1`, [id]);
    const body = await getJson(t, `/v1/activity-results/${id}`, a.key);
    expect(body.created_at).toBe('2020-01-01T00:00:00.000000Z');
    expect(body.updated_at >= before[0]!.now).toBe(true);
    const art = await newArtifact(t.db, { resultId: id, createdAt: '2020-01-01T00:00:00Z' });
    expect((await getJson(t, `/v1/artifacts/${art}`, a.key)).updated_at >= before[0]!.now).toBe(true);
    await t.db.query('delete from activity_results where id = $1', [id]);
  });

  it('moves progress when activities are added to or removed from its program (total_count changes)', async () => {
    const { programId, lessonId } = await newProgram(t.db, a.id, 2);
    await newProgress(t.db, { tenantId: a.id, userId: a.userIds[1]!, programId, completed: 1 });
    const path = `/v1/progress?program_id=${programId}`;
    const [start] = (await getJson(t, path, a.key)).data;
    expect(start).toMatchObject({ completed_count: 1, total_count: 2, percent: 50 });

    const [added] = await t.db.query<{ id: string }>(
      `insert into activities (lesson_id, title, kind, spec) values ($1, 'Added', 'site', 'More') returning id`,
      [lessonId],
    );
    const [grown] = (await getJson(t, `${path}&updated_since=${start.updated_at}`, a.key)).data;
    expect(grown).toMatchObject({ total_count: 3, percent: 33 });
    expect(grown.updated_at > start.updated_at).toBe(true);

    await t.db.query('delete from activities where id = $1', [added!.id]);
    const [shrunk] = (await getJson(t, `${path}&updated_since=${grown.updated_at}`, a.key)).data;
    expect(shrunk).toMatchObject({ total_count: 2, percent: 50 });
    expect(shrunk.updated_at > grown.updated_at).toBe(true);
    // Other programs' progress did not move.
    const others = await getJson(t, `/v1/progress?updated_since=${grown.updated_at}`, a.key);
    expect(others.data.map((p: any) => p.program_id)).toEqual([programId]);
  });
});

describe.skipIf(backend !== 'postgres')('a transaction that commits late (PostgreSQL; PGlite runs one transaction at a time)', () => {
  it('is not skipped by a consumer tailing the feed', async () => {
    const [x, y] = [a.resultIds[0]!, a.resultIds[2]!];
    const since = (await t.db.query<{ at: string }>(`select to_char(clock_timestamp() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as at`))[0]!.at;

    // Writer 1 starts first and updates X, then stays open (a slow grader, a long import…).
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let wrote!: () => void;
    const written = new Promise<void>((r) => (wrote = r));
    const slow = t.db.transaction(async (tx) => {
      await tx.query(`update activity_results set score = 11 where id = $1`, [x]);
      wrote();
      await gate;
    });
    await written;
    // Writer 2 updates Y after X and commits at once: Y's updated_at is later than X's.
    await t.db.query(`update activity_results set score = 22 where id = $1`, [y]);

    // The consumer tails the feed now. A naive feed would hand out Y and move past X's instant.
    const seen: any[] = [];
    let page = await getJson(t, `/v1/activity-results?updated_since=${since}`, a.key);
    seen.push(...page.data);
    const heldBack = !seen.some((r) => r.id === y);

    release();
    await slow;
    const [order] = await t.db.query<{ x_first: boolean }>(
      'select (select updated_at from activity_results where id = $1) < (select updated_at from activity_results where id = $2) as x_first',
      [x, y],
    );
    expect(order!.x_first).toBe(true); // the hazard was real: X committed last but sorts first

    // Resume from the last instant seen (or from `since` if nothing was seen).
    const resume = seen.length ? seen.at(-1).updated_at : since;
    page = await getJson(t, `/v1/activity-results?updated_since=${resume}`, a.key);
    seen.push(...page.data);
    const ids = seen.map((r) => r.id);
    expect(ids).toContain(x);
    expect(ids).toContain(y);
    expect(ids.indexOf(x)).toBeLessThan(ids.lastIndexOf(y));
    expect(heldBack).toBe(true); // how: Y waited while the older writer was still running
  });

  it('never moves its watermark past an uncommitted change, and moves on when it commits', async () => {
    const since = (await getJson(t, `/v1/activity-results?updated_since=${EPOCH}`, a.key)).consistent_through as string;
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let wrote!: (at: string) => void;
    const written = new Promise<string>((r) => (wrote = r));
    const slow = t.db.transaction(async (tx) => {
      const [row] = await tx.query<{ at: string }>(
        `update activity_results set score = 33 where id = $1
         returning to_char(updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as at`,
        [a.resultIds[1]],
      );
      wrote(row!.at);
      await gate;
    });
    const changedAt = await written;
    // Other writers commit meanwhile; the watermark stays before the open change on every list.
    await t.db.query(`update artifacts set verification = '{"n":2}' where id = $1`, [a.artifactIds[1]]);
    for (const path of ['/v1/activity-results', '/v1/artifacts', '/v1/progress', '/v1/learners', '/v1/deletions']) {
      const res = await get(t, `${path}?updated_since=${since}`, a.key);
      const body = await res.json();
      expect(body.consistent_through < changedAt, path).toBe(true);
      expect(res.headers.get('svc-consistent-through')).toBe(body.consistent_through);
    }
    const held = await getJson(t, `/v1/activity-results?updated_since=${since}`, a.key);
    expect(held.data.map((r: any) => r.id)).not.toContain(a.resultIds[1]);
    release();
    await slow;
    // Committed: the watermark passes it and the next sync from the old watermark brings it.
    const after = await getJson(t, `/v1/activity-results?updated_since=${held.consistent_through}`, a.key);
    expect(after.consistent_through > changedAt).toBe(true);
    expect(after.data.map((r: any) => r.id)).toContain(a.resultIds[1]);
  });

  it('holds the feed only while a writer is open, not for readers', async () => {
    const since = (await t.db.query<{ at: string }>(`select to_char(clock_timestamp() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as at`))[0]!.at;
    await t.db.query(`update artifacts set verification = '{"n":1}' where id = $1`, [a.artifactIds[0]]);
    // A reader that stays open does not hold the feed back.
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let opened!: () => void;
    const open = new Promise<void>((r) => (opened = r));
    const reader = t.db.transaction(async (tx) => {
      await tx.query('select count(*) from artifacts');
      opened();
      await gate;
    });
    await open;
    const body = await getJson(t, `/v1/artifacts?updated_since=${since}`, a.key);
    release();
    await reader;
    expect(body.data.map((r: any) => r.id)).toEqual([a.artifactIds[0]]);
  });
});
