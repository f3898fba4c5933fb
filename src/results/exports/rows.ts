/**
 * The export SQL: each row's fields read set-based and written as text by PostgreSQL, byte for
 * byte what the list endpoints' `json_build_object` SQL (src/results/queries.ts) gives.
 *
 * Why not the lists' SQL: per row it runs correlated subqueries (the lesson's `unit_id`, an
 * activity count for progress; a `json_agg` of the result's artifact ids before migration 0164) and
 * `json_build_object`, which looks up each argument's type on every call; measured on 300,000
 * results (bench/README.md "Streaming exports"), that SQL ran ~10× the time of a plain `COPY` of
 * the rows. Here:
 *
 * - a result's artifact ids are read from the result itself (`activity_results.artifact_ids`,
 *   kept by a trigger: migration 0164, `artifactIdsText`, as the lists), not aggregated from `artifacts`;
 * - a full export (no `updated_since`, no keyset batch) reads the table once, joins `lessons` and
 *   the activity counts grouped by program, then sorts by (updated_at, id) — the feed order the
 *   docs promise; parallel workers may share the work (migration 0163);
 * - an incremental pull or a PGlite batch (a few rows of a big table) keeps per-row lookups by
 *   index (the activity count of the row's program), so it never aggregates the whole tenant;
 * - NDJSON lines are concatenated text in `json_build_object`'s layout (`{"k" : v, "k2" : v2}`):
 *   ids and timestamps quoted as is (their text never needs escaping), strings through
 *   `to_json`, numbers by their output function, nested values as their json/jsonb text, SQL
 *   null as `null`;
 * - CSV cells are the same values as text directly (no JSON round trip); for PostgreSQL's binary
 *   COPY (`cellsSelect(…, binary)`) uuids and timestamps stay raw, and `./binary-copy.ts` writes
 *   the CSV records and the NDJSON lines from them (learners' NDJSON and PGlite use the SQL text).
 *
 * Learners stay on `svc.results_learner_json` (migration 0100: only it may read the identity
 * tables), CSV parsing its object with `json_to_record`.
 *
 * test/results/exports.test.ts compares every export with the lists on both backends.
 */
import { rfc3339 } from '../../db/sql.ts';
import { artifactIdsText, exportSource } from '../queries.ts';
import { COLUMNS, type ColumnKind, type ExportName } from './columns.ts';

/** A SQL string literal (standard_conforming_strings on). Values are validated before; this is defence. */
export const literal = (s: string) => `'${s.replace(/'/g, "''")}'`;

/** Which rows an export reads: the tenant's, changed before the horizon, and since `since` when set. */
export interface Slice {
  tenantId: string;
  /** The sync horizon (RFC 3339 UTC µs): rows changed before it. */
  horizon: string;
  /** `updated_since` (normalised RFC 3339): rows changed at or after it. */
  since?: string;
}

/** How the rows are read: all at once (COPY, cursor) or a keyset batch after ($1, $2), $3 rows. */
type Mode = 'all' | 'keyset';

/**
 * One export's rows: `from` (alias `t` for the table, joins that may read `tenant`), and each
 * field's SQL over them (in the order and under the names of COLUMNS). `full` is true when the
 * whole slice is read (set-based joins); otherwise per-row lookups.
 */
interface Source {
  from: (tenant: string, full: boolean) => string;
  fields: Record<string, string>;
}

const SOURCES: Partial<Record<ExportName, Source>> = {
  'activity-results': {
    from: () => `activity_results t
      left join lessons l on l.tenant_id = t.tenant_id and l.id = t.lesson_id`,
    fields: {
      id: 't.id',
      activity_id: 't.activity_id',
      lesson_id: 't.lesson_id',
      svc_user_id: 't.user_id',
      program_id: 't.program_id',
      unit_id: 'l.unit_id',
      status: 't.status',
      score: 't.score::float8',
      completed_at: 't.completed_at',
      created_at: 't.created_at',
      updated_at: 't.updated_at',
      artifact_ids: artifactIdsText('t'),
    },
  },
  artifacts: {
    from: () => 'artifacts t',
    fields: {
      id: 't.id',
      result_id: 't.result_id',
      kind: 't.kind',
      ref_url: 't.ref_url',
      repo_url: 't.repo_url',
      verification: `(t.verification - 'held')`,
      created_at: 't.created_at',
      updated_at: 't.updated_at',
    },
  },
  progress: {
    from: (tenant, full) =>
      full
        ? `progress t
      left join (select a.program_id, count(*)::int as total from activities a
                  where a.tenant_id = ${tenant} and not a.archived group by a.program_id) c on c.program_id = t.program_id`
        : `progress t
      cross join lateral (select count(*)::int as total from activities a
                  where a.tenant_id = t.tenant_id and a.program_id = t.program_id and not a.archived) c`,
    fields: {
      svc_user_id: 't.user_id',
      program_id: 't.program_id',
      completed_count: 't.completed_count',
      total_count: 'coalesce(c.total, 0)',
      percent: `case when coalesce(c.total, 0) = 0 then 0 else least(100, (t.completed_count::int8 * 100) / c.total) end`,
      last_activity_at: 't.last_activity_at',
      updated_at: 't.updated_at',
    },
  },
  deletions: {
    from: () => 'deletions t',
    fields: {
      resource: 't.resource',
      id: 't.id',
      svc_user_id: 't.svc_user_id',
      program_id: 't.program_id',
      deleted_at: 't.deleted_at',
    },
  },
};

/** The JSON text of the value `v` of `kind` (what json_build_object writes for it), `null` for SQL null. */
function jsonValue(v: string, kind: ColumnKind): string {
  switch (kind) {
    case 'uuid':
      return `coalesce('"' || ${v}::text || '"', 'null')`;
    case 'timestamp':
      // The JSON string's quotes written by to_char itself (\" in its format): two || fewer.
      return `coalesce(to_char(${v} at time zone 'UTC', '\\"YYYY-MM-DD"T"HH24:MI:SS.US"Z\\"'), 'null')`;
    case 'string':
      return `coalesce(to_json(${v})::text, 'null')`;
    default: // int, float, json: their own text
      return `coalesce(${v}::text, 'null')`;
  }
}

/**
 * The CSV cell of column `s.<name>` (null stays null: an empty cell): uuids and strings as they
 * are (COPY writes a uuid with its output function, the text `::text` would give: on 1M results
 * the casts cost ~0.3 s of the CSV's ~3.8 s), timestamps RFC 3339, the rest as text (the drivers
 * of the keyset batches would parse numbers and JSON).
 */
function csvValue(name: string, kind: ColumnKind, binary: boolean): string {
  const v = `s."${name}"`;
  if (kind === 'timestamp') return binary ? v : rfc3339(v);
  return kind === 'string' || kind === 'uuid' ? v : `${v}::text`;
}

/**
 * The slice's rows of `name`, raw, narrow, in the feed order (updated, id), with their position
 * (`svc_k_ts`, `svc_k_id`). In `keyset` mode: after ($1, $2), at most $3 rows.
 */
function rowsSelect(name: ExportName, source: Source, slice: Slice, mode: Mode): string {
  const { updatedColumn, id } = exportSource(name);
  const full = isFull(slice, mode);
  const fields = Object.entries(source.fields).map(([k, sql]) => `${sql} as "${k}"`);
  return `select ${fields.join(', ')}, t.${updatedColumn} as svc_k_ts, t.${id} as svc_k_id
    from ${source.from(tenantLiteral(slice), full)}
    where ${rowsWhere(name, slice, mode).join(' and ')}
    order by t.${updatedColumn}, t.${id}${mode === 'keyset' ? ' limit $3::int' : ''}`;
}

/** True when the whole slice is read at once (set-based joins); false for per-row lookups. */
const isFull = (slice: Slice, mode: Mode) => mode === 'all' && slice.since === undefined;

const tenantLiteral = (slice: Slice) => `${literal(slice.tenantId)}::uuid`;

/** The conditions on the table `t` of export `name`: the tenant, the horizon, `since`, the keyset position. */
function rowsWhere(name: ExportName, slice: Slice, mode: Mode): string[] {
  const { updatedColumn, id } = exportSource(name);
  const where = [`t.tenant_id = ${tenantLiteral(slice)}`, `t.${updatedColumn} < ${literal(slice.horizon)}::timestamptz`];
  if (slice.since !== undefined) where.push(`t.${updatedColumn} >= ${literal(slice.since)}::timestamptz`);
  if (mode === 'keyset') where.push(`(t.${updatedColumn}, t.${id}) > ($1::timestamptz, $2::uuid)`);
  return where;
}

/** The old form for learners: `svc.results_learner_json` per row (json column `obj`). */
function learnerRows(slice: Slice, mode: Mode): string {
  const { table, json, updatedColumn, id } = exportSource('learners');
  return `select ${json('t')} as obj, t.${updatedColumn} as svc_k_ts, t.${id} as svc_k_id from ${table} t
    where ${rowsWhere('learners', slice, mode).join(' and ')} order by t.${updatedColumn}, t.${id}${mode === 'keyset' ? ' limit $3::int' : ''}`;
}

/**
 * The Parquet value of column `s.<name>` of `kind`, in the type `./parquet.ts` reads. For PGlite's
 * rows: timestamps as the text of their microseconds since the epoch (exact: `extract` is numeric;
 * ±infinity null), JSON as its text, the rest as is (uuid and text arrive as strings, int4 and float8 as numbers). For a binary
 * COPY (`binary`): uuid, timestamptz, int4 and float8 as their binary values, text and JSON as text.
 */
function parquetValue(name: string, kind: ColumnKind, binary: boolean): string {
  const v = `s."${name}"`;
  if (binary) return `${v}::${({ uuid: 'uuid', timestamp: 'timestamptz', int: 'int4', float: 'float8', string: 'text', json: 'text' } as const)[kind]}`;
  // numeric text, not int8: ±infinity is null, and a value beyond INT64 is refused by parquet.ts with the COPY path's error
  if (kind === 'timestamp') return `case when isfinite(${v}) then trunc(extract(epoch from ${v}) * 1000000)::text end`;
  if (kind === 'int') return `${v}::int4`;
  return kind === 'json' ? `${v}::text` : v;
}

/** The keyset position columns of a batch row (PGlite). */
const POSITION = `, ${rfc3339('s.svc_k_ts')} as k_ts, s.svc_k_id::text as k_id`;

/**
 * One text column `line`: each row's JSON object (NDJSON). With `keyset`, plus the row's position
 * `k_ts`, `k_id` (parameters $1, $2: start after; $3: rows).
 *
 * Unlike the CSV and Parquet selects, the line is written in the same query level as the sort
 * (one select, not over a sorted subquery): PostgreSQL then builds the lines below the Gather
 * Merge, in the parallel workers, rather than in the leader alone after it. The rows sorted are
 * wider, but on 910,000 results that ran in ~3.4 s instead of ~4.6 s (psql, the export's RLS and
 * snapshot; bench/README.md "Streaming exports"). CSV went the other way (3.5 → 4.2 s): its cells
 * are cheap to write and the wider sort costs more than the parallel writing saves.
 */
export function lineSelect(name: ExportName, slice: Slice, mode: Mode = 'all'): string {
  const source = SOURCES[name];
  if (!source) {
    const pos = mode === 'keyset' ? POSITION : '';
    // The subquery's ORDER BY keeps it a subquery: the text is written after the sort, of narrow rows.
    return `select s.obj::text as line${pos} from (${learnerRows(slice, mode)}) s order by s.svc_k_ts, s.svc_k_id`;
  }
  const { updatedColumn, id } = exportSource(name);
  const fields = source.fields;
  const parts = COLUMNS[name].map((c, i) => `'${i === 0 ? '{' : ', '}"${c.name}" : ' || ${jsonValue(`(${fields[c.name]})`, c.kind)}`);
  const pos = mode === 'keyset' ? `, ${rfc3339(`t.${updatedColumn}`)} as k_ts, t.${id}::text as k_id` : '';
  return `select ${parts.join(' || ')} || '}' as line${pos}
    from ${source.from(tenantLiteral(slice), isFull(slice, mode))}
    where ${rowsWhere(name, slice, mode).join(' and ')}
    order by t.${updatedColumn}, t.${id}${mode === 'keyset' ? ' limit $3::int' : ''}`;
}

/** The CSV cells of each row as text (null: an empty cell), in COLUMNS order. With `keyset`, as `lineSelect`. */
export function cellsSelect(name: ExportName, slice: Slice, mode: Mode = 'all', binary = false): string {
  const source = SOURCES[name];
  const pos = mode === 'keyset' ? POSITION : '';
  if (!source) {
    const record = COLUMNS[name].map((c) => `"${c.name}" ${c.kind === 'json' ? 'json' : 'text'}`).join(', ');
    return `select x.*${pos} from (${learnerRows(slice, mode)}) s, json_to_record(s.obj) as x(${record}) order by s.svc_k_ts, s.svc_k_id`;
  }
  const cells = COLUMNS[name].map((c) => `${csvValue(c.name, c.kind, binary)} as "${c.name}"`);
  return `select ${cells.join(', ')}${pos} from (${rowsSelect(name, source, slice, mode)}) s order by s.svc_k_ts, s.svc_k_id`;
}

/**
 * The Parquet cells of each row (`parquetValue`), in COLUMNS order: no JSON per row, no timestamp
 * text. With `keyset`, as `lineSelect`; with `binary`, for a binary COPY.
 */
export function parquetSelect(name: ExportName, slice: Slice, mode: Mode = 'all', binary = false): string {
  const source = SOURCES[name];
  const pos = mode === 'keyset' ? POSITION : '';
  const cells = COLUMNS[name].map((c) => `${parquetValue(c.name, c.kind, binary)} as "${c.name}"`);
  if (!source) {
    const types: Record<ColumnKind, string> = { uuid: 'text', string: 'text', int: 'int4', float: 'float8', timestamp: 'timestamptz', json: 'json' };
    const record = COLUMNS[name].map((c) => `"${c.name}" ${types[c.kind]}`).join(', ');
    return `select ${cells.join(', ')}${pos} from (select x.*, l.svc_k_ts, l.svc_k_id from (${learnerRows(slice, mode)}) l, json_to_record(l.obj) as x(${record})) s order by s.svc_k_ts, s.svc_k_id`;
  }
  return `select ${cells.join(', ')}${pos} from (${rowsSelect(name, source, slice, mode)}) s order by s.svc_k_ts, s.svc_k_id`;
}
