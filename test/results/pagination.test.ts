/**
 * Results API keyset pagination over (created_at, id): exact microseconds end to end, ties
 * broken by id, no gaps or repeats, stable while rows are inserted, limit default and bounds.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { useApp, useFixture } from '../helpers/harness.ts';
import { getJson, newArtifact, newProgram, newProgress, newResult, newUser, seedTenant, walk, type SeededTenant } from './fixtures.ts';

let a: SeededTenant;
let activityIds: string[];
let users: string[];
const t = useApp();
const other = useFixture(() => seedTenant(t, 'other')); // rows that must never show up in a's pages
beforeAll(async () => {
  const tenant = await t.op('tenant.create', { slug: 'paging' });
  const key = await t.op('key.create', { tenant: 'paging', name: 'k' });
  a = { id: tenant.id, key: key.key } as SeededTenant;
  ({ activityIds } = await newProgram(t.db, tenant.id, 3));
  users = [];
  for (let i = 0; i < 4; i++) users.push(await newUser(t.db));
});

/** Results keyed by a short name, created with explicit created_at (and some explicit ids). */
const ROWS: Array<{ name: string; createdAt: string; id?: string }> = [
  { name: 'same-ms-2', createdAt: '2026-01-01T00:00:00.000002Z' },
  { name: 'same-us-b', createdAt: '2026-01-01T00:00:00.000003Z', id: '01000000-0000-7000-8000-00000000000b' },
  { name: 'next-ms', createdAt: '2026-01-01T00:00:00.001Z' },
  { name: 'same-ms-1', createdAt: '2026-01-01T00:00:00.000001Z' },
  { name: 'same-us-a', createdAt: '2026-01-01T00:00:00.000003Z', id: '01000000-0000-7000-8000-00000000000a' },
  { name: 'offset-input', createdAt: '2026-01-01T01:00:00.000004+01:00' }, // = 00:00:00.000004Z
  { name: 'earliest', createdAt: '2025-12-31T23:59:59.999999Z' },
];
const EXPECTED_ORDER = ['earliest', 'same-ms-1', 'same-ms-2', 'same-us-a', 'same-us-b', 'offset-input', 'next-ms'];

describe('activity-results pages', () => {
  const idByName = new Map<string, string>();
  const nameById = new Map<string, string>();
  let pair = 0;
  const add = async (name: string, createdAt: string, id?: string) => {
    const i = pair++;
    const rid = await newResult(t.db, { activityId: activityIds[i % 3]!, userId: users[Math.floor(i / 3)]!, createdAt, id });
    idByName.set(name, rid);
    nameById.set(rid, name);
    return rid;
  };

  beforeAll(async () => {
    for (const row of ROWS) await add(row.name, row.createdAt, row.id);
  });

  it('walks every row with limit=1, in (created_at, id) order, microseconds kept exact', async () => {
    const { ids, pages } = await walk(t, '/v1/activity-results', a.key, 1);
    expect(ids.map((id) => nameById.get(id))).toEqual(EXPECTED_ORDER);
    expect(new Set(ids).size).toBe(ids.length);
    expect(pages).toHaveLength(EXPECTED_ORDER.length);
    const createdAt = pages.map((p) => p.data[0].created_at);
    expect(createdAt).toEqual([
      '2025-12-31T23:59:59.999999Z',
      '2026-01-01T00:00:00.000001Z',
      '2026-01-01T00:00:00.000002Z',
      '2026-01-01T00:00:00.000003Z',
      '2026-01-01T00:00:00.000003Z',
      '2026-01-01T00:00:00.000004Z',
      '2026-01-01T00:00:00.001000Z',
    ]);
    // The database agrees on the order.
    const db = await t.db.query<{ id: string }>('select id from activity_results where tenant_id = $1 order by created_at, id', [a.id]);
    expect(ids).toEqual(db.map((r) => r.id));
  });

  it('gives the same rows with any page size, with next_cursor null exactly on the last page', async () => {
    for (const limit of [2, 3, 6, 7, 8, 200]) {
      const { ids, pages } = await walk(t, '/v1/activity-results', a.key, limit);
      expect(
        ids.map((id) => nameById.get(id)),
        `limit=${limit}`,
      ).toEqual(EXPECTED_ORDER);
      expect(pages).toHaveLength(Math.max(1, Math.ceil(EXPECTED_ORDER.length / limit)));
      expect(pages.at(-1).next_cursor).toBeNull();
      expect(pages.at(-1).has_more).toBe(false);
    }
  });

  it('keeps a cursor valid while rows are inserted: later rows are not skipped, none repeat', async () => {
    let page = await getJson(t, '/v1/activity-results?limit=4', a.key);
    const seen: string[] = page.data.map((r: any) => nameById.get(r.id));
    expect(seen).toEqual(EXPECTED_ORDER.slice(0, 4)); // … same-us-a
    // Inserted after the cursor was issued: one that sorts later (same microsecond as the
    // cursor row, larger id), one at the very end, and one before the cursor.
    await add('tie-after-cursor', '2026-01-01T00:00:00.000003Z', '01000000-0000-7000-8000-00000000000c');
    await add('latest', '2026-06-01T12:00:00.654321Z');
    await add('before-cursor', '2026-01-01T00:00:00.000000Z');
    while (page.next_cursor) {
      page = await getJson(t, `/v1/activity-results?limit=4&cursor=${page.next_cursor}`, a.key);
      seen.push(...page.data.map((r: any) => nameById.get(r.id)));
    }
    expect(seen).toEqual([...EXPECTED_ORDER.slice(0, 4), 'same-us-b', 'tie-after-cursor', 'offset-input', 'next-ms', 'latest']);
    expect(new Set(seen).size).toBe(seen.length);
  });

  it('pages a filtered list and binds the cursor to that filter', async () => {
    const activity = activityIds[0]!;
    const expected = await t.db.query<{ id: string }>('select id from activity_results where tenant_id = $1 and activity_id = $2 order by created_at, id', [
      a.id,
      activity,
    ]);
    expect(expected.length).toBeGreaterThan(2);
    const { ids } = await walk(t, `/v1/activity-results?activity_id=${activity}`, a.key, 1);
    expect(ids).toEqual(expected.map((r) => r.id));
  });
});

describe('the Link header', () => {
  it('points at the next page with the same parameters, and is absent on the last page', async () => {
    const activity = activityIds[0]!;
    let url = `${t.url}/v1/activity-results?activity_id=${activity.toUpperCase()}&limit=1`;
    const viaLinks: string[] = [];
    for (let i = 0; i < 100; i++) {
      const res = await fetch(url, { headers: { authorization: `Bearer ${a.key}` } });
      expect(res.status).toBe(200);
      const body = await res.json();
      viaLinks.push(...body.data.map((r: any) => r.id));
      const link = res.headers.get('link');
      if (!body.has_more) {
        expect(link).toBeNull();
        break;
      }
      const m = /^<([^>]+)>; rel="next"$/.exec(link ?? '');
      expect(m, link ?? 'no Link').not.toBeNull();
      const next = new URL(m![1]!);
      expect(`${next.origin}${next.pathname}`).toBe(`${t.url}/v1/activity-results`);
      expect(next.searchParams.get('cursor')).toBe(body.next_cursor);
      expect(next.searchParams.get('limit')).toBe('1');
      expect(next.searchParams.get('activity_id')?.toLowerCase()).toBe(activity);
      url = next.toString();
    }
    expect(viaLinks).toEqual((await walk(t, `/v1/activity-results?activity_id=${activity}`, a.key, 1)).ids);
    expect(viaLinks.length).toBeGreaterThan(1);
  });
});

describe('artifacts and progress pages', () => {
  it('walks artifacts that share a millisecond, with limit=1', async () => {
    const result = await newResult(t.db, { activityId: activityIds[2]!, userId: users[3]!, createdAt: '2026-02-01T00:00:00Z' });
    const made: string[] = [];
    for (const us of ['000003', '000001', '000002', '000002']) {
      made.push(await newArtifact(t.db, { resultId: result, createdAt: `2026-02-01T00:00:00.${us}Z` }));
    }
    const { ids, pages } = await walk(t, '/v1/artifacts', a.key, 1);
    const db = await t.db.query<{ id: string }>('select id from artifacts where tenant_id = $1 order by created_at, id', [a.id]);
    expect(ids).toEqual(db.map((r) => r.id));
    expect(new Set(ids)).toEqual(new Set(made));
    expect(pages.map((p) => p.data[0].created_at)).toEqual(['1', '2', '2', '3'].map((d) => `2026-02-01T00:00:00.00000${d}Z`));
  });

  it('walks progress rows that share a millisecond, with limit=1', async () => {
    const { programId } = await newProgram(t.db, a.id, 1);
    for (const [i, us] of ['000002', '000001', '000003'].entries()) {
      await newProgress(t.db, { tenantId: a.id, userId: users[i]!, programId, completed: 0, createdAt: `2026-02-02T00:00:00.${us}Z` });
    }
    const db = await t.db.query<{ user_id: string }>('select user_id from progress where tenant_id = $1 order by created_at, id', [a.id]);
    const { ids } = await walk(t, '/v1/progress', a.key, 1, (p) => p.svc_user_id);
    expect(ids).toEqual(db.map((r) => r.user_id));
    expect(ids).toEqual([users[1], users[0], users[2]]);
  });
});

describe('limit', () => {
  beforeAll(async () => {
    // 205 artifacts one microsecond apart in the other tenant.
    await t.db.query(
      `insert into artifacts (tenant_id, result_id, activity_id, user_id, kind, created_at)
       select r.tenant_id, r.id, r.activity_id, r.user_id, 'document', '2026-04-01T00:00:00Z'::timestamptz + g * interval '1 microsecond'
       from activity_results r, generate_series(1, 205) g where r.id = $1`,
      [other.resultIds[1]],
    );
  });

  it('defaults to 50 and accepts up to 200', async () => {
    const first = await getJson(t, '/v1/artifacts', other.key);
    expect(first.data).toHaveLength(50);
    expect(first.has_more).toBe(true);
    expect(typeof first.next_cursor).toBe('string');
    const max = await getJson(t, '/v1/artifacts?limit=200', other.key);
    expect(max.data).toHaveLength(200);
    const rest = await getJson(t, `/v1/artifacts?limit=200&cursor=${max.next_cursor}`, other.key);
    expect(rest.data).toHaveLength(208 - 200);
    expect(rest.next_cursor).toBeNull();
    expect(rest.has_more).toBe(false);
  });

  it('accepts a different limit on later pages (the cursor binds endpoint and filters, not the page size)', async () => {
    const first = await getJson(t, '/v1/artifacts?limit=3', other.key);
    const second = await getJson(t, `/v1/artifacts?limit=5&cursor=${first.next_cursor}`, other.key);
    expect(second.data).toHaveLength(5);
    const all = await getJson(t, '/v1/artifacts?limit=8', other.key);
    expect([...first.data, ...second.data].map((x: any) => x.id)).toEqual(all.data.map((x: any) => x.id));
  });
});
