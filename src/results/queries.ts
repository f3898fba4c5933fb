/**
 * The SQL of the Results API. Each request is ONE database statement, one round trip:
 *
 *   select data, has_more, last_ts, last_id from svc.results_q_<hash>($1::text[])
 *
 * where `svc.results_q_<hash>` is a statement function for the request's shape (endpoint, order,
 * which filters are set): a plpgsql function this module generates and installs at startup
 * (`installStatements`), so every connection caches the page query's plan instead of planning it
 * per request. The function forces that generic plan (`plan_cache_mode = force_generic_plan`):
 * left to choose, PostgreSQL compares the generic plan's estimate (a tenant of unknown size, an
 * unknown limit) with the custom plans' (the literal limit of 51 rows) and re-plans on every
 * call — ~0.9 ms of planning for ~0.5 ms of execution. Every shape's generic plan is a keyset
 * scan of its index; test/results/plans.test.ts checks it. Its body calls `svc.results_enter` (migration 0020) — caller check, sync horizon,
 * switch to the read-only role `svc_results` with the request's tenant set for row-level
 * security — then runs the page query, then restores the caller's role. PostgreSQL builds the
 * JSON (`json_build_object`, `json_agg`) and hands it back as text that the routes send untouched
 * (DESIGN §7). Function names are a hash of their text: a changed query is a new function, so
 * processes of two versions can run side by side; old ones are left in place (they cost nothing).
 *
 * Page queries read their arguments from `p_args` (text[]): [1] tenant, [2] limit, [3] [4] the
 * position to start after (`-infinity` and the nil uuid on a first page, so one shape serves
 * every page), then the filters set, in a fixed order, then `updated_since`. In the updated
 * order, `horizon` is the sync horizon. Each query also carries an explicit `tenant_id =
 * p_args[1]`, so the (tenant_id, …, created_at | updated_at, id) indexes serve the keyset scan;
 * pages are ordered by (created_at, id) — or (updated_at, id) in the feed — ascending, the start
 * position compared as a row value. Only the predicates of the filters actually set are in a
 * shape, so each combination has a (generic, cached) plan that uses its index.
 *
 * Timestamps leave PostgreSQL as RFC 3339 UTC text with exactly six fractional digits
 * (`2026-01-01T00:00:00.000001Z`), never as a JS Date; cursor positions use the same text.
 */
import { createHash } from 'node:crypto';
import type { Db, Queryable } from '../db/index.ts';
import { rfc3339 } from '../db/sql.ts';
import { auditEventJsonSql } from '../audit/index.ts';
import type { Endpoint, Order, Position } from './cursor.ts';

/** A field of `jsonObject`: a column name, or a key and its SQL expression. */
type JsonField = string | [key: string, sql: string];

/**
 * `json_build_object(…)` of row `t`'s `fields`, one a line: a column name is that column of `t`
 * under its own name — as RFC 3339 text when it ends in `_at` — and `[key, sql]` any expression.
 */
function jsonObject(t: string, fields: JsonField[]): string {
  const line = (f: JsonField) => {
    if (typeof f !== 'string') return `    '${f[0]}', ${f[1]}`;
    return `    '${f}', ${f.endsWith('_at') ? rfc3339(`${t}.${f}`) : `${t}.${f}`}`;
  };
  return `json_build_object(\n${fields.map(line).join(',\n')})`;
}

/**
 * The JSON text of result `t`'s artifact ids, oldest first (`["a", "b"]`, json_agg's layout; none:
 * `[]`), from the ids kept on the result (`activity_results.artifact_ids`, maintained by a trigger
 * on `artifacts` under the result's row lock, in (created_at, id) order: migration 0164) — the one
 * source of the lists, the single result and the exports.
 */
export const artifactIdsText = (t: string) =>
  `case when cardinality(${t}.artifact_ids) = 0 then '[]' else '["' || array_to_string(${t}.artifact_ids, '", "') || '"]' end`;

/**
 * ActivityResult: id, activity_id, lesson_id, svc_user_id, program_id, unit_id, status, score (0–100
 * or null), completed_at, created_at, updated_at, artifact_ids (the result's artifacts in
 * (created_at, id) order: `artifactIdsText`).
 */
const activityResultJson = (t: string) =>
  jsonObject(t, [
    'id',
    'activity_id',
    'lesson_id',
    ['svc_user_id', `${t}.user_id`],
    'program_id',
    ['unit_id', `(select l.unit_id from lessons l where l.tenant_id = ${t}.tenant_id and l.id = ${t}.lesson_id)`],
    'status',
    ['score', `${t}.score::float8`],
    'completed_at',
    'created_at',
    'updated_at',
    ['artifact_ids', `(${artifactIdsText(t)})::json`],
  ]);

/**
 * Progress: svc_user_id, program_id, completed_count, total_count (activities of the program
 * now, archived ones left out — as the learner's own progress counts, migration 0130), percent
 * (floor(completed / total × 100), 0 when total is 0, at most 100),
 * last_activity_at, updated_at.
 */
const progressJson = (t: string) => {
  const fields = jsonObject(t, [
    ['svc_user_id', `${t}.user_id`],
    'program_id',
    'completed_count',
    ['total_count', 'c.total'],
    ['percent', `case when c.total = 0 then 0 else least(100, (${t}.completed_count::int8 * 100) / c.total) end`],
    'last_activity_at',
    'updated_at',
  ]);
  return `(select ${fields}
  from (select count(*)::int as total from activities a
         where a.tenant_id = ${t}.tenant_id and a.program_id = ${t}.program_id and not a.archived) c)`;
};

/**
 * Artifact: id, result_id, kind, ref_url, repo_url, verification (json or null), created_at, updated_at.
 * A verdict the calibration gate holds (`{status: "pending", reason: "calibration_required", held}`,
 * issue #21) is not shown: `held` is left out until the verdict is released, so an unmeasured
 * judge's verdict reaches no partner either.
 */
const artifactJson = (t: string) =>
  jsonObject(t, ['id', 'result_id', 'kind', 'ref_url', 'repo_url', ['verification', `${t}.verification - 'held'`], 'created_at', 'updated_at']);

/**
 * Learner: svc_user_id, external_ids [{issuer, subject}], email, created_at, updated_at — built by
 * `svc.results_learner_json` (migration 0100), which alone may read the identity tables.
 */
const learnerJson = (t: string) => `svc.results_learner_json(${t}.user_id, ${t}.created_at, ${t}.updated_at)`;

/** Program (in lists): id, title, description, archived_at, created_at, updated_at. */
const PROGRAM_FIELDS = ['id', 'title', 'description', 'archived_at', 'created_at', 'updated_at'];
const programJson = (t: string) => jsonObject(t, PROGRAM_FIELDS);

/**
 * Program outline: the program's fields plus units → lessons → activities (each in (position, id)
 * order) with ids, titles, positions, archived_at (each record's own; what is under an archived
 * record is hidden from learners too); activities add kind, pass_threshold, rubric (the stored
 * [{criterion, weight}]) and, with `withSpec`, spec.
 */
const outlineJson = (withSpec: boolean) => (t: string) =>
  jsonObject(t, [
    ...PROGRAM_FIELDS,
    [
      'units',
      `coalesce((select json_agg(json_build_object(
        'id', u.id, 'title', u.title, 'position', u.position, 'archived_at', ${rfc3339('u.archived_at')},
        'lessons', coalesce((select json_agg(json_build_object(
            'id', l.id, 'title', l.title, 'position', l.position, 'archived_at', ${rfc3339('l.archived_at')},
            'activities', coalesce((select json_agg(json_build_object(
                'id', a.id, 'title', a.title, 'position', a.position, 'archived_at', ${rfc3339('a.archived_at')}, 'kind', a.kind,
                'pass_threshold', a.pass_threshold, 'rubric', a.rubric${withSpec ? `, 'spec', a.spec` : ''}) order by a.position, a.id)
              from activities a where a.tenant_id = l.tenant_id and a.lesson_id = l.id), '[]'::json)) order by l.position, l.id)
          from lessons l where l.tenant_id = u.tenant_id and l.unit_id = u.id), '[]'::json)) order by u.position, u.id)
      from units u where u.tenant_id = ${t}.tenant_id and u.program_id = ${t}.id), '[]'::json)`,
    ],
  ]);

/**
 * Tombstone: resource, id, deleted_at, plus svc_user_id (results, artifacts, progress, learners)
 * and program_id (progress and content) where they apply, else null.
 */
const deletionJson = (t: string) => jsonObject(t, ['resource', 'id', 'svc_user_id', 'program_id', 'deleted_at']);

/** A filter: the predicate comparing a row of alias `t` with the request's value `arg` (SQL text). */
type Filter = (arg: (type: string) => string) => string;
/** The filter `column = value`. */
const equals =
  (column: string, type: 'uuid' | 'text'): Filter =>
  (arg) =>
    `t.${column} = ${arg(type)}`;

interface ListStatement {
  /** Name for logs, pg_stat_statements and EXPLAIN sessions. */
  name: string;
  table: string;
  json: (alias: string) => string;
  /** The row's unique column, last in keyset order (default `id`). */
  id?: string;
  /** The orders the list has, and the column of each (created_at / updated_at by default). */
  orders: Partial<Record<Order, string>>;
  /** Filter parameter → its predicate. */
  filters: Record<string, Filter>;
}

const BOTH = { created: 'created_at', updated: 'updated_at' } as const;

const LISTS: Record<Endpoint, ListStatement> = {
  'activity-results': {
    name: 'results_list_activity_results',
    table: 'activity_results',
    json: activityResultJson,
    orders: BOTH,
    filters: { activity_id: equals('activity_id', 'uuid'), user_id: equals('user_id', 'uuid'), status: equals('status', 'text') },
  },
  progress: {
    name: 'results_list_progress',
    table: 'progress',
    json: progressJson,
    orders: BOTH,
    filters: { user_id: equals('user_id', 'uuid'), program_id: equals('program_id', 'uuid') },
  },
  artifacts: {
    name: 'results_list_artifacts',
    table: 'artifacts',
    json: artifactJson,
    orders: BOTH,
    filters: { activity_id: equals('activity_id', 'uuid'), user_id: equals('user_id', 'uuid') },
  },
  learners: {
    name: 'results_list_learners',
    table: 'memberships',
    json: learnerJson,
    id: 'user_id',
    orders: BOTH,
    filters: {
      // One identity per (issuer, subject), so at most one learner: read by primary key (tenant_id, user_id).
      external_id: (arg) => `t.user_id = (select svc.results_learners_by_subject(${arg('text')}) limit 1)`,
      issuer: (arg) => `svc.results_learner_at_issuer(t.user_id, ${arg('text')})`,
    },
  },
  programs: {
    name: 'results_list_programs',
    table: 'programs',
    json: programJson,
    orders: { created: 'created_at' },
    filters: {},
  },
  deletions: {
    name: 'results_list_deletions',
    table: 'deletions',
    json: deletionJson,
    orders: { updated: 'deleted_at' },
    filters: { resource: equals('resource', 'text') },
  },
  // The tenant's audit log (issue #23, src/audit): a listing in (at, id) order.
  'audit-events': {
    name: 'results_list_audit_events',
    table: 'audit_events',
    json: auditEventJsonSql,
    orders: { created: 'at' },
    filters: { action: equals('action', 'text'), since: (arg) => `t.at >= ${arg('timestamptz')}` },
  },
};

/**
 * What an export (src/results/exports) reads of `endpoint`: its table, the same row-to-JSON SQL as
 * the list's `data` items (`json(alias)`), and the column of the feed order (`updated_at`, or
 * `deleted_at` for tombstones).
 */
export function exportSource(endpoint: Endpoint): { table: string; json: (alias: string) => string; updatedColumn: string; id: string } {
  const s = LISTS[endpoint];
  return { table: s.table, json: s.json, updatedColumn: s.orders.updated!, id: s.id ?? 'id' };
}

/** The orders `endpoint` can be listed in (programs: created only; deletions: the feed only). */
export const ordersOf = (endpoint: Endpoint): Order[] => Object.keys(LISTS[endpoint].orders) as Order[];

/** Filter values of a request, by name (undefined = not set). */
type FilterValues = Readonly<Record<string, string | undefined>>;

/** What one list page asks for. */
export interface ListOptions {
  limit: number;
  filters: FilterValues;
  order: Order;
  /** The feed's lower bound (updated_since, normalised RFC 3339), with `order: 'updated'`. */
  since?: string;
  /** Start after this row (exclusive). */
  after?: Position;
}

/** One page as PostgreSQL built it. */
export interface Page {
  /** The JSON array of the page's objects, as text (`[]` when empty). */
  data: string;
  /** True when at least one row follows this page. */
  hasMore: boolean;
  /** Position of the page's last row when `hasMore`, else undefined. */
  last?: Position;
  /**
   * In the updated order: the sync horizon as RFC 3339 text (every change committed at or before
   * it has been served or lies after this page), or undefined when a writer hides its start.
   */
  consistentThrough?: string;
}

interface PageRow {
  data: string | null;
  has_more: boolean | null;
  last_ts: string | null;
  last_id: string | null;
  consistent_through: string | null;
}

/** The position before every row: a first page starts "after" it. */
const START: Position = { at: '-infinity', id: '00000000-0000-0000-0000-000000000000' };

/** A page query of one shape, and the arguments of one request of that shape. */
export interface PageStatement {
  /** Name for logs and EXPLAIN sessions, e.g. `results_list_artifacts_since`. */
  name: string;
  /** The SELECT, reading `p_args[n]` and (in the feed) `horizon`. */
  text: string;
  /** True in the updated_since feed: the statement takes the sync horizon. */
  sync: boolean;
  /** The request's `p_args`. */
  args: string[];
}

/** Text and name of the page query of one shape (endpoint, order, which filters are set). */
interface Shape {
  name: string;
  text: string;
  /** The filters of the shape, in the order their values follow in `p_args` (from index 5). */
  filters: string[];
}

const shapes = new Map<string, Shape>();

/** The watermark of a feed page: the sync horizon as RFC 3339, null while a writer hides its start. */
const WATERMARK = `case when isfinite(horizon) then ${rfc3339('horizon')} end`;

/** The page query of one shape, built once per process (requests only fill in `p_args`). */
function shape(endpoint: Endpoint, order: Order, filterNames: readonly string[]): Shape {
  const shapeId = `${endpoint} ${order} ${filterNames.join(',')}`;
  let found = shapes.get(shapeId);
  if (found) return found;
  const s = LISTS[endpoint];
  let n = 4;
  const arg = (type: string) => `p_args[${++n}]::${type}`;
  const key = s.orders[order];
  if (!key) throw new Error(`results: /v1/${endpoint} has no ${order} order`);
  const id = s.id ?? 'id';
  const where = ['t.tenant_id = p_args[1]::uuid'];
  const filters = Object.keys(s.filters).filter((name) => filterNames.includes(name));
  for (const name of filters) where.push(s.filters[name]!(arg));
  if (order === 'updated') {
    where.push(`t.${key} >= ${arg('timestamptz')}`);
    where.push(`t.${key} < horizon`);
  }
  where.push(`(t.${key}, t.${id}) > (p_args[3]::timestamptz, p_args[4]::uuid)`);
  const name = `${s.name}${order === 'updated' && s.orders.created ? '_since' : ''}`;
  const text = `/* ${name} */
select coalesce(json_agg(p.obj order by p.n) filter (where p.n <= p_args[2]::int), '[]'::json)::text as data,
       count(*) > p_args[2]::int as has_more,
       max(p.position_ts) filter (where p.n = p_args[2]::int) as last_ts,
       max(p.id::text) filter (where p.n = p_args[2]::int) as last_id,
       ${order === 'updated' ? WATERMARK : 'null::text'} as consistent_through
from (
  select ${s.json('t')} as obj,
         ${rfc3339(`t.${key}`)} as position_ts,
         t.${id} as id,
         row_number() over (order by t.${key}, t.${id}) as n
  from ${s.table} t
  where ${where.join('\n    and ')}
  order by t.${key}, t.${id}
  limit p_args[2]::int + 1
) p`;
  found = { name, text, filters };
  shapes.set(shapeId, found);
  return found;
}

/**
 * The page query of `endpoint` for a request: `limit` rows for `tenantId` after `after`
 * (exclusive), narrowed by `filters`, in the created or the updated order. Fetches limit + 1
 * rows to know whether more follow. In the updated order only rows older than the sync horizon
 * are read, so a page never runs ahead of a transaction that is still writing.
 */
export function listStatement(endpoint: Endpoint, tenantId: string, options: ListOptions): PageStatement {
  const after = options.after ?? START;
  const set = Object.keys(options.filters).filter((name) => options.filters[name] !== undefined);
  const { name, text, filters } = shape(endpoint, options.order, set);
  const args = [tenantId, String(options.limit), after.at, after.id, ...filters.map((f) => options.filters[f]!)];
  if (options.order === 'updated') args.push(options.since ?? '-infinity');
  return { name, text, sync: options.order === 'updated', args };
}

/** The single-object reads: table, object, the id column; `program+spec` is the outline with `include=spec`. */
const ONE = {
  'activity-results': { name: 'results_get_activity_result', table: 'activity_results', json: activityResultJson, id: 'id' },
  artifacts: { name: 'results_get_artifact', table: 'artifacts', json: artifactJson, id: 'id' },
  learners: { name: 'results_get_learner', table: 'memberships', json: learnerJson, id: 'user_id' },
  programs: { name: 'results_get_program', table: 'programs', json: outlineJson(false), id: 'id' },
  'programs+spec': { name: 'results_get_program_spec', table: 'programs', json: outlineJson(true), id: 'id' },
} as const;

/** A single-object read of `oneStatement`. */
export type One = keyof typeof ONE;

/** The query of one object of `endpoint` by id: `p_args` = [tenant, id]. */
export function oneStatement(endpoint: One, tenantId: string, id: string): PageStatement {
  const { name, table, json, id: column } = ONE[endpoint];
  const text = `/* ${name} */
select ${json('t')}::text as data, false as has_more, null::text as last_ts, null::text as last_id, null::text as consistent_through
from ${table} t where t.tenant_id = p_args[1]::uuid and t.${column} = p_args[2]::uuid`;
  return { name, text, sync: false, args: [tenantId, id] };
}

/** Every subset of `names` (the filter combinations a list accepts). */
function subsets(names: string[]): string[][] {
  const all: string[][] = [[]];
  for (const name of names) for (const set of all.slice()) all.push([...set, name]);
  return all;
}

/** One statement of every shape the API can send (with placeholder arguments). */
export function allStatements(): PageStatement[] {
  const nil = START.id;
  const out: PageStatement[] = [];
  for (const endpoint of Object.keys(LISTS) as Endpoint[]) {
    for (const set of subsets(Object.keys(LISTS[endpoint].filters))) {
      const filters = Object.fromEntries(set.map((name) => [name, 'x']));
      for (const order of ordersOf(endpoint)) out.push(listStatement(endpoint, nil, { limit: 1, filters, order }));
    }
  }
  for (const one of Object.keys(ONE) as One[]) out.push(oneStatement(one, nil, nil));
  return out;
}

/** The statement function of a shape: its name (a hash of its text) and its CREATE statement. */
export function statementFunction(statement: Pick<PageStatement, 'name' | 'text' | 'sync'>): { name: string; create: string } {
  const body = `-- ${statement.name}: generated by src/results/queries.ts
declare
  horizon timestamptz;
  caller text := current_setting('role');
begin
  horizon := svc.results_enter(p_args[1]::uuid, ${statement.sync});
  return query
${statement.text};
  perform set_config('role', caller, true);
end`;
  // Everything after the name, so that any change to the function — body or settings — names a new one.
  const definition = `(p_args text[])
  returns table (data text, has_more boolean, last_ts text, last_id text, consistent_through text)
  language plpgsql volatile
  set search_path = public, pg_temp
  set plan_cache_mode = force_generic_plan
as $fn$
${body}
$fn$`;
  const name = `results_q_${createHash('sha256').update(definition).digest('hex').slice(0, 20)}`;
  const create = `create function svc.${name}${definition}`;
  return { name, create };
}

/** Name of each statement function, by statement text, once computed. */
const functionNames = new Map<string, string>();
const functionName = (statement: PageStatement) => {
  let name = functionNames.get(statement.text);
  if (!name) {
    name = statementFunction(statement).name;
    functionNames.set(statement.text, name);
  }
  return name;
};

/** Advisory lock key serialising installations by concurrently starting processes. */
const INSTALL_LOCK_KEY = 7_310_224_020;

/**
 * Create the statement functions this version needs that the database does not have yet, in
 * one transaction under an advisory lock (processes starting together create each once).
 * Runs as the database owner at startup, like the migrations. Returns how many it created.
 */
export async function installStatements(db: Db): Promise<number> {
  const wanted = new Map(allStatements().map((st) => [functionName(st), st]));
  return db.transaction(async (tx) => {
    await tx.query('select pg_advisory_xact_lock($1)', [INSTALL_LOCK_KEY]);
    const have = new Set(
      (
        await tx.query<{ proname: string }>(`select proname from pg_proc where pronamespace = 'svc'::regnamespace and proname = any($1::text[])`, [
          [...wanted.keys()],
        ])
      ).map((r) => r.proname),
    );
    let created = 0;
    for (const [name, st] of wanted) {
      if (have.has(name)) continue;
      await tx.exec(`${statementFunction(st).create};\nrevoke execute on function svc.${name}(text[]) from public;`);
      created += 1;
    }
    return created;
  });
}

/**
 * The query the API sends for `statement`: the call of its statement function with the
 * arguments as its one text[] parameter (also what bench/results-api.ts replays beside the API).
 */
export function statementCall(statement: PageStatement): { text: string; values: [string[]] } {
  return { text: `select data, has_more, last_ts, last_id, consistent_through from svc.${functionName(statement)}($1::text[])`, values: [statement.args] };
}

/** Run `statement` for its tenant as svc_results: one statement, one round trip. */
async function run(db: Queryable, statement: PageStatement): Promise<PageRow | undefined> {
  const { text, values } = statementCall(statement);
  const [row] = await db.query<PageRow>(text, values);
  return row;
}

/** One list page (see `listStatement`). */
export async function listPage(db: Queryable, endpoint: Endpoint, tenantId: string, options: ListOptions): Promise<Page> {
  const row = await run(db, listStatement(endpoint, tenantId, options));
  const hasMore = row?.has_more === true;
  return {
    data: row?.data ?? '[]',
    hasMore,
    last: hasMore && row!.last_ts && row!.last_id ? { at: row!.last_ts, id: row!.last_id } : undefined,
    consistentThrough: row?.consistent_through ?? undefined,
  };
}

/**
 * One object of `endpoint` by id as JSON text, or undefined when the tenant has no such row
 * (whether it does not exist or belongs to another tenant: the caller answers 404 either way).
 */
export async function findOne(db: Queryable, endpoint: One, tenantId: string, id: string): Promise<string | undefined> {
  return (await run(db, oneStatement(endpoint, tenantId, id)))?.data ?? undefined;
}
