/**
 * The SQL of the Results API, one named statement per operation. PostgreSQL builds the JSON
 * (`json_build_object` / `json_agg`) and hands it back as text that the routes send untouched,
 * so each request is ONE query and rows are never re-serialised in JS (DESIGN §7).
 *
 * Every statement runs inside `asResultsTenant` (role `svc_results`, RLS on the tenant) AND
 * carries an explicit `tenant_id = $1`, so the (tenant_id, …, created_at, id) indexes serve
 * the keyset scan. Pages are ordered by (created_at, id) ascending; the position after which
 * a page starts is compared as `(created_at, id) > ($ts::timestamptz, $id::uuid)` in SQL.
 * Only the predicates of the filters actually set are emitted, so each filter combination
 * gets its own plan that can use an index (no `$n is null or …` generic plans).
 *
 * Timestamps leave PostgreSQL as RFC 3339 UTC text with exactly six fractional digits
 * (`2026-01-01T00:00:00.000001Z`), never as a JS Date; cursor positions use the same text.
 */
import type { Queryable } from '../db/index.ts';
import type { Endpoint, Position } from './cursor.ts';

/** RFC 3339 text in UTC with microseconds of a timestamptz expression (null stays null). */
const rfc3339 = (expr: string) => `to_char(${expr} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

/**
 * ActivityResult: id, activity_id, lesson_id, svc_user_id, status, score (0–100 or null),
 * completed_at, created_at, artifact_ids (the result's artifacts in (created_at, id) order).
 */
const activityResultJson = (t: string) => `json_build_object(
    'id', ${t}.id,
    'activity_id', ${t}.activity_id,
    'lesson_id', ${t}.lesson_id,
    'svc_user_id', ${t}.user_id,
    'status', ${t}.status,
    'score', ${t}.score::float8,
    'completed_at', ${rfc3339(`${t}.completed_at`)},
    'created_at', ${rfc3339(`${t}.created_at`)},
    'artifact_ids', coalesce(
      (select json_agg(a.id order by a.created_at, a.id) from artifacts a
        where a.tenant_id = ${t}.tenant_id and a.result_id = ${t}.id),
      '[]'::json))`;

/**
 * Progress: svc_user_id, program_id, completed_count, total_count (activities of the program
 * now), percent (floor(completed / total × 100), 0 when total is 0, at most 100), last_activity_at.
 */
const progressJson = (t: string) => `(select json_build_object(
    'svc_user_id', ${t}.user_id,
    'program_id', ${t}.program_id,
    'completed_count', ${t}.completed_count,
    'total_count', c.total,
    'percent', case when c.total = 0 then 0 else least(100, (${t}.completed_count::int8 * 100) / c.total) end,
    'last_activity_at', ${rfc3339(`${t}.last_activity_at`)})
  from (select count(*)::int as total from activities a
         where a.tenant_id = ${t}.tenant_id and a.program_id = ${t}.program_id) c)`;

/** Artifact: id, result_id, kind, ref_url, repo_url, verification (json or null), created_at. */
const artifactJson = (t: string) => `json_build_object(
    'id', ${t}.id,
    'result_id', ${t}.result_id,
    'kind', ${t}.kind,
    'ref_url', ${t}.ref_url,
    'repo_url', ${t}.repo_url,
    'verification', ${t}.verification,
    'created_at', ${rfc3339(`${t}.created_at`)})`;

interface ListStatement {
  /** Name for logs and EXPLAIN sessions. */
  name: string;
  table: string;
  json: (alias: string) => string;
  /** Filter parameter → `column::type` it compares with. */
  filters: Record<string, { column: string; type: 'uuid' | 'text' }>;
}

const LISTS: Record<Endpoint, ListStatement> = {
  'activity-results': {
    name: 'results_list_activity_results',
    table: 'activity_results',
    json: activityResultJson,
    filters: {
      activity_id: { column: 'activity_id', type: 'uuid' },
      user_id: { column: 'user_id', type: 'uuid' },
      status: { column: 'status', type: 'text' },
    },
  },
  progress: {
    name: 'results_list_progress',
    table: 'progress',
    json: progressJson,
    filters: {
      user_id: { column: 'user_id', type: 'uuid' },
      program_id: { column: 'program_id', type: 'uuid' },
    },
  },
  artifacts: {
    name: 'results_list_artifacts',
    table: 'artifacts',
    json: artifactJson,
    filters: {
      activity_id: { column: 'activity_id', type: 'uuid' },
      user_id: { column: 'user_id', type: 'uuid' },
    },
  },
};

/** One page as PostgreSQL built it. */
export interface Page {
  /** The JSON array of the page's objects, as text (`[]` when empty). */
  data: string;
  /** True when at least one row follows this page. */
  hasMore: boolean;
  /** Position of the page's last row when `hasMore`, else undefined. */
  last?: Position;
}

interface PageRow {
  data: string;
  has_more: boolean;
  last_created_at: string | null;
  last_id: string | null;
}

/**
 * The SQL text and parameters of one page: `limit` rows of `endpoint` for `tenantId` after
 * `after` (exclusive), narrowed by `filters`. Fetches limit + 1 rows to know whether more follow.
 */
export function listStatement(
  endpoint: Endpoint,
  tenantId: string,
  options: { limit: number; filters: Readonly<Record<string, string | undefined>>; after?: Position },
): { name: string; text: string; params: unknown[] } {
  const s = LISTS[endpoint];
  const params: unknown[] = [tenantId, options.limit];
  const where = ['t.tenant_id = $1::uuid'];
  for (const [name, { column, type }] of Object.entries(s.filters)) {
    const value = options.filters[name];
    if (value === undefined) continue;
    params.push(value);
    where.push(`t.${column} = $${params.length}::${type}`);
  }
  if (options.after) {
    params.push(options.after.createdAt, options.after.id);
    where.push(`(t.created_at, t.id) > ($${params.length - 1}::timestamptz, $${params.length}::uuid)`);
  }
  const text = `/* ${s.name} */
select coalesce(json_agg(p.obj order by p.n) filter (where p.n <= $2::int), '[]'::json)::text as data,
       count(*) > $2::int as has_more,
       max(p.position_ts) filter (where p.n = $2::int) as last_created_at,
       max(p.id::text) filter (where p.n = $2::int) as last_id
from (
  select ${s.json('t')} as obj,
         ${rfc3339('t.created_at')} as position_ts,
         t.id,
         row_number() over (order by t.created_at, t.id) as n
  from ${s.table} t
  where ${where.join('\n    and ')}
  order by t.created_at, t.id
  limit $2::int + 1
) p`;
  return { name: s.name, text, params };
}

/** Run `listStatement` on `tx` (a transaction of `asResultsTenant`). */
export async function listPage(
  tx: Queryable,
  endpoint: Endpoint,
  tenantId: string,
  options: { limit: number; filters: Readonly<Record<string, string | undefined>>; after?: Position },
): Promise<Page> {
  const { text, params } = listStatement(endpoint, tenantId, options);
  const [row] = await tx.query<PageRow>(text, params);
  const hasMore = row!.has_more === true;
  return {
    data: row!.data,
    hasMore,
    last: hasMore && row!.last_created_at && row!.last_id ? { createdAt: row!.last_created_at, id: row!.last_id } : undefined,
  };
}

const ONE = {
  'activity-results': `/* results_get_activity_result */
select ${activityResultJson('t')}::text as body from activity_results t where t.tenant_id = $1::uuid and t.id = $2::uuid`,
  artifacts: `/* results_get_artifact */
select ${artifactJson('t')}::text as body from artifacts t where t.tenant_id = $1::uuid and t.id = $2::uuid`,
} as const;

/**
 * One object of `endpoint` by id as JSON text, or undefined when the tenant has no such row
 * (whether it does not exist or belongs to another tenant: the caller answers 404 either way).
 */
export async function findOne(tx: Queryable, endpoint: keyof typeof ONE, tenantId: string, id: string): Promise<string | undefined> {
  const [row] = await tx.query<{ body: string }>(ONE[endpoint], [tenantId, id]);
  return row?.body;
}
