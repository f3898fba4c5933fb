/**
 * Fixtures of the Results API tests: plain SQL as the database owner (the content tables'
 * insert trigger fills tenant_id/program_id from the parent), plus small HTTP helpers.
 *
 * `seedTenant` makes one tenant with an API key and a small, known data set; the suites seed
 * TWO tenants so that every read can be checked for leaks from the other one.
 */
import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import type { Db } from '../../src/db/index.ts';
import type { TestApp } from '../helpers/harness.ts';

/** A learner: auth.users row + the internal users row; returns svc_user_id. */
export async function newUser(db: Db): Promise<string> {
  const [auth] = await db.query<{ id: string }>(`insert into auth.users (email) values ($1) returning id`, [`learner-${randomUUID()}@example.test`]);
  const [user] = await db.query<{ id: string }>(`insert into users (auth_user_id) values ($1) returning id`, [auth!.id]);
  return user!.id;
}

/** program → unit → lesson → `activities` activities; returns their ids. */
export async function newProgram(db: Db, tenantId: string, activities: number) {
  const [program] = await db.query<{ id: string }>(`insert into programs (tenant_id, title) values ($1, 'Program') returning id`, [tenantId]);
  const [unit] = await db.query<{ id: string }>(`insert into units (program_id, title) values ($1, 'Unit') returning id`, [program!.id]);
  const [lesson] = await db.query<{ id: string }>(`insert into lessons (unit_id, title) values ($1, 'Lesson') returning id`, [unit!.id]);
  const activityIds: string[] = [];
  for (let i = 0; i < activities; i++) {
    const [a] = await db.query<{ id: string }>(`insert into activities (lesson_id, title, kind, spec) values ($1, $2, 'site', 'Build a site') returning id`, [
      lesson!.id,
      `Activity ${i + 1}`,
    ]);
    activityIds.push(a!.id);
  }
  return { programId: program!.id, lessonId: lesson!.id, activityIds };
}

export interface NewResult {
  activityId: string;
  userId: string;
  status?: 'completed' | 'in_progress' | 'failed';
  score?: number | null;
  completedAt?: string | null;
  createdAt?: string;
  id?: string;
}

/** An activity result; lesson, program and tenant come from the activity. Returns its id. */
export async function newResult(db: Db, r: NewResult): Promise<string> {
  const [row] = await db.query<{ id: string }>(
    `insert into activity_results (tenant_id, id, activity_id, lesson_id, program_id, user_id, status, score, completed_at, created_at)
     select a.tenant_id, coalesce($2::uuid, svc.uuid_v7()), a.id, a.lesson_id, a.program_id, $3, $4, $5, $6::timestamptz,
            coalesce($7::timestamptz, clock_timestamp())
     from activities a where a.id = $1
     returning id`,
    [r.activityId, r.id ?? null, r.userId, r.status ?? 'completed', r.score ?? null, r.completedAt ?? null, r.createdAt ?? null],
  );
  return row!.id;
}

export interface NewArtifact {
  resultId: string;
  kind?: 'diagram' | 'document' | 'site' | 'repo';
  refUrl?: string | null;
  repoUrl?: string | null;
  verification?: unknown;
  createdAt?: string;
  id?: string;
  /** Override the tenant (to try an inconsistent row, which the database refuses); default: the result's. */
  tenantId?: string;
}

/** An artifact of a result (activity and user copied from the result). Returns its id. */
export async function newArtifact(db: Db, a: NewArtifact): Promise<string> {
  const [row] = await db.query<{ id: string }>(
    `insert into artifacts (tenant_id, id, result_id, activity_id, user_id, kind, ref_url, repo_url, verification, created_at)
     select coalesce($8::uuid, r.tenant_id), coalesce($2::uuid, svc.uuid_v7()), r.id, r.activity_id, r.user_id, $3, $4, $5,
            $6::text::jsonb, coalesce($7::timestamptz, clock_timestamp())
     from activity_results r where r.id = $1
     returning id`,
    [
      a.resultId,
      a.id ?? null,
      a.kind ?? 'site',
      a.refUrl ?? null,
      a.repoUrl ?? null,
      a.verification === undefined ? null : JSON.stringify(a.verification),
      a.createdAt ?? null,
      a.tenantId ?? null,
    ],
  );
  return row!.id;
}

/** A progress row. Returns its id (internal: the API does not expose it). */
export async function newProgress(
  db: Db,
  p: { tenantId: string; userId: string; programId: string; completed: number; lastActivityAt?: string | null; createdAt?: string },
): Promise<string> {
  const [row] = await db.query<{ id: string }>(
    `insert into progress (tenant_id, user_id, program_id, completed_count, last_activity_at, created_at)
     values ($1, $2, $3, $4, $5::timestamptz, coalesce($6::timestamptz, clock_timestamp())) returning id`,
    [p.tenantId, p.userId, p.programId, p.completed, p.lastActivityAt ?? null, p.createdAt ?? null],
  );
  return row!.id;
}

let clock = 0;
/**
 * Distinct, increasing created_at values for seeded rows (PGlite's clock_timestamp() can
 * repeat within a millisecond, and rows with equal created_at are then ordered by id).
 */
export function nextCreatedAt(): string {
  clock += 1;
  return `${new Date(Date.UTC(2026, 1, 1) + clock * 1000).toISOString().replace('Z', '')}${String(clock % 1000).padStart(3, '0')}Z`;
}

export interface SeededTenant {
  id: string;
  slug: string;
  key: string;
  keyPrefix: string;
  programId: string;
  emptyProgramId: string;
  lessonId: string;
  activityIds: string[];
  userIds: string[];
  resultIds: string[];
  artifactIds: string[];
}

/**
 * One tenant with a key and: a program of 3 activities (plus an empty program), 2 learners (members),
 * 3 results (completed 92.5 / in_progress / failed), 3 artifacts, 3 progress rows.
 */
export async function seedTenant(t: TestApp, slug: string): Promise<SeededTenant> {
  const tenant = await t.op('tenant.create', { slug, name: `Tenant ${slug}` });
  const key = await t.op('key.create', { tenant: slug, name: 'dashboard' });
  const { programId, lessonId, activityIds } = await newProgram(t.db, tenant.id, 3);
  const empty = await newProgram(t.db, tenant.id, 0);
  const userIds = [await newUser(t.db), await newUser(t.db)];
  for (const userId of userIds) {
    await t.db.query(`insert into memberships (tenant_id, user_id, role) values ($1, $2, 'learner')`, [tenant.id, userId]);
  }
  const resultIds = [
    await newResult(t.db, {
      activityId: activityIds[0]!,
      userId: userIds[0]!,
      status: 'completed',
      score: 92.5,
      completedAt: '2026-03-01T10:00:00.123456Z',
      createdAt: nextCreatedAt(),
    }),
    await newResult(t.db, { activityId: activityIds[1]!, userId: userIds[0]!, status: 'in_progress', createdAt: nextCreatedAt() }),
    await newResult(t.db, { activityId: activityIds[0]!, userId: userIds[1]!, status: 'failed', score: 12, createdAt: nextCreatedAt() }),
  ];
  const artifactIds = [
    await newArtifact(t.db, {
      resultId: resultIds[0]!,
      kind: 'site',
      refUrl: 'https://example.test/site',
      verification: { passed: true, score: 92.5 },
      createdAt: nextCreatedAt(),
    }),
    await newArtifact(t.db, { resultId: resultIds[0]!, kind: 'repo', repoUrl: 'https://example.test/repo.git', createdAt: nextCreatedAt() }),
    await newArtifact(t.db, { resultId: resultIds[2]!, kind: 'document', refUrl: 'https://example.test/doc', createdAt: nextCreatedAt() }),
  ];
  await newProgress(t.db, {
    tenantId: tenant.id,
    userId: userIds[0]!,
    programId,
    completed: 1,
    lastActivityAt: '2026-03-01T10:00:00.123456Z',
    createdAt: nextCreatedAt(),
  });
  await newProgress(t.db, { tenantId: tenant.id, userId: userIds[1]!, programId, completed: 2, createdAt: nextCreatedAt() });
  await newProgress(t.db, { tenantId: tenant.id, userId: userIds[0]!, programId: empty.programId, completed: 0, createdAt: nextCreatedAt() });
  return {
    id: tenant.id,
    slug,
    key: key.key,
    keyPrefix: key.prefix,
    programId,
    emptyProgramId: empty.programId,
    lessonId,
    activityIds,
    userIds,
    resultIds,
    artifactIds,
  };
}

export type KeyStyle = 'bearer' | 'x-svc-api-key';

/** GET `path` with `key` in the chosen header (no key when undefined). */
export function get(t: TestApp, path: string, key?: string, style: KeyStyle = 'bearer', headers: Record<string, string> = {}) {
  const h: Record<string, string> = { ...headers };
  if (key !== undefined) {
    if (style === 'bearer') h.authorization = `Bearer ${key}`;
    else h['x-svc-api-key'] = key;
  }
  return fetch(`${t.url}${path}`, { headers: h });
}

/** GET and parse JSON, asserting the status. */
export async function getJson(t: TestApp, path: string, key?: string, status = 200, style: KeyStyle = 'bearer'): Promise<any> {
  const res = await get(t, path, key, style);
  const text = await res.text();
  expect(res.status, `${path} → ${text}`).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  return JSON.parse(text);
}

/**
 * Assert an error response: status, content type, and EXACTLY `{error: {code, message,
 * request_id}}` with `request_id` equal to the X-Request-Id header. Returns the message.
 */
export async function expectError(res: Response, status: number, code: string): Promise<string> {
  const text = await res.text();
  expect(res.status, text).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  const body = JSON.parse(text);
  expect(Object.keys(body)).toEqual(['error']);
  expect(Object.keys(body.error).sort()).toEqual(['code', 'message', 'request_id']);
  expect(body.error.request_id).toBe(res.headers.get('x-request-id'));
  expect(body.error.code).toBe(code);
  expect(typeof body.error.message).toBe('string');
  expect(body.error.message.length).toBeGreaterThan(0);
  return body.error.message;
}

/** Walk a list endpoint to the end with `limit`; returns every page's ids and the pages. */
export async function walk(t: TestApp, path: string, key: string, limit: number, idOf: (row: any) => string = (r) => r.id) {
  const ids: string[] = [];
  const pages: any[] = [];
  let cursor: string | null = null;
  const sep = path.includes('?') ? '&' : '?';
  for (let i = 0; i < 1000; i++) {
    const body = await getJson(t, `${path}${sep}limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`, key);
    pages.push(body);
    ids.push(...body.data.map(idOf));
    cursor = body.next_cursor;
    expect(body.has_more).toBe(cursor !== null);
    if (!cursor) return { ids, pages };
  }
  throw new Error('pagination did not end');
}

export const RFC3339_MICROS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
