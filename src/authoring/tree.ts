/**
 * A program's tree (units → lessons → activities), read and written level by level.
 *
 * - `readTree(tx, name, id, shape)`: a program, unit or lesson with everything under it, each
 *   level in order — one query for the record, one that builds the tree as JSON in PostgreSQL
 *   (get_program, get_unit, get_lesson, the program resource). `programTree` is the whole
 *   program (instantiate_program); `programOutline` has only id, external_id and position per
 *   record (the answer of import_program: how the caller's records map to ours).
 * - `writeChildren(tx, programId, units)`: insert a whole tree under a new program in three
 *   statements (units, lessons, activities), each an `insert … select` from one JSON parameter
 *   ordered by the tree's order, so the position triggers of migration 0030 append every row
 *   (position n + 1, checked by the trigger). RLS and the triggers check every row: the caller
 *   writes only where they could write the rows one by one. Used by import_program and
 *   instantiate_program.
 *
 * Each level filters on the row's tenant too (or `tenant_id is null` for the catalog), so the
 * indexes that lead with tenant_id serve the reads.
 */
import { z } from 'zod';
import type { Queryable } from '../db/index.ts';
import { notFoundFailure, findRecord, recordJson } from './records.ts';

/**
 * What a tree read renders per record: the whole row (`full`), what a reader needs to find their
 * way (`outline`: id, title, position, and kind for activities), or how an import's ids map to
 * ours (`ids`: id, external_id, position).
 */
export type Shape = 'full' | 'outline' | 'ids';

/** A record that has children, and the levels below it. */
export type Parent = 'program' | 'unit' | 'lesson';
type Level = 'unit' | 'lesson' | 'activity';

const LEVELS: Record<Level, { table: string; alias: string; parent: string; key: string; child?: Level }> = {
  unit: { table: 'units', alias: 'u', parent: 'program_id', key: 'units', child: 'lesson' },
  lesson: { table: 'lessons', alias: 'l', parent: 'unit_id', key: 'lessons', child: 'activity' },
  activity: { table: 'activities', alias: 'a', parent: 'lesson_id', key: 'activities' },
};
const CHILD_LEVEL: Record<Parent, Level> = { program: 'unit', unit: 'lesson', lesson: 'activity' };

function rowJson(level: Level, alias: string, shape: Shape): string {
  if (shape === 'full') return recordJson(alias);
  const fields = shape === 'ids' ? ['id', 'external_id', 'position'] : ['id', 'title', 'position', ...(level === 'activity' ? ['kind'] : [])];
  return `jsonb_build_object(${fields.map((f) => `'${f}', ${alias}.${f}`).join(', ')})`;
}

/** SQL of the JSON array of the `level` records under `parentRef`, in order, each with its children. */
function levelSql(level: Level, parentRef: string, shape: Shape, catalog: boolean): string {
  const { table, alias, parent, child } = LEVELS[level];
  const tenant = catalog ? `${alias}.tenant_id is null` : `${alias}.tenant_id = $2::uuid`;
  const children = child ? ` || jsonb_build_object('${LEVELS[child].key}', ${levelSql(child, `${alias}.id`, shape, catalog)})` : '';
  return `coalesce((select jsonb_agg(${rowJson(level, alias, shape)}${children} order by ${alias}.position, ${alias}.created_at, ${alias}.id)
    from ${table} ${alias} where ${tenant} and ${alias}.${parent} = ${parentRef}), '[]'::jsonb)`;
}

export type Json = Record<string, unknown>;

/**
 * The record `id` of type `name` (the whole row) with everything under it in `shape`, each level
 * in order under its key (`units`, `lessons`, `activities`); one query for the record, one for
 * the tree. Throws "<name> <id> not found" when the caller cannot see it.
 */
export async function readTree(tx: Queryable, name: Parent, id: string, shape: Shape): Promise<Json> {
  const record = await findRecord(tx, name, id);
  if (!record) throw await notFoundFailure(tx, name, id);
  const catalog = record.tenant_id === null;
  const level = CHILD_LEVEL[name];
  const [row] = await tx.query<{ children: Json[] }>(
    `select ${levelSql(level, '$1::uuid', shape, catalog)} as children`,
    catalog ? [id] : [id, record.tenant_id],
  );
  return { ...record, [LEVELS[level].key]: row?.children ?? [] };
}

/** The program `id` with its units → lessons → activities; throws "program <id> not found". */
export const programTree = (tx: Queryable, id: string) => readTree(tx, 'program', id, 'full');

/** The program record with the id map of its tree (id, external_id, position per record). */
export const programOutline = (tx: Queryable, id: string) => readTree(tx, 'program', id, 'ids');

/**
 * The output schema of a tree's counts (`treeCounts`, `writeChildren`): each level described as
 * "<Level> `each`" ("Units copied"), the whole as `description`.
 */
export const treeCountsSchema = (each: string, description: string) =>
  z
    .object({
      units: z.number().int().describe(`Units ${each}`),
      lessons: z.number().int().describe(`Lessons ${each}`),
      activities: z.number().int().describe(`Activities ${each}`),
    })
    .describe(description);

/** How many units, lessons and activities a tree holds (or a write wrote). */
export interface TreeCounts {
  units: number;
  lessons: number;
  activities: number;
}

/** Record counts of a tree read by `readTree` (0 for the levels it does not hold). */
export function treeCounts(tree: Json): TreeCounts {
  const counts = { units: 0, lessons: 0, activities: 0 };
  const walk = (node: Json) => {
    for (const key of ['units', 'lessons', 'activities'] as const) {
      for (const child of (node[key] as Json[] | undefined) ?? []) {
        counts[key]++;
        walk(child);
      }
    }
  };
  walk(tree);
  return counts;
}

// ---------------------------------------------------------------------------------------------
// Writing a tree
// ---------------------------------------------------------------------------------------------
export interface ActivityInput {
  external_id?: string | null;
  title: string;
  kind: string;
  spec: string;
  rubric: { criterion: string; weight: number }[];
  pass_threshold: number;
}
export interface LessonInput {
  external_id?: string | null;
  title: string;
  body?: string | null;
  activities: ActivityInput[];
}
export interface UnitInput {
  external_id?: string | null;
  title: string;
  description?: string | null;
  lessons: LessonInput[];
}

// `ord` is the row's place in the whole level; rows are inserted in that order so that each one
// lands at position n + 1 of its parent.
const INSERT_UNITS_SQL = `
  insert into units (program_id, external_id, title, description, position)
  select $1::uuid, x.external_id, x.title, x.description, x.position
    from jsonb_to_recordset($2::text::jsonb) as x(ord int, external_id text, title text, description text, position int)
   order by x.ord
  returning id, position`;

const INSERT_LESSONS_SQL = `
  insert into lessons (unit_id, external_id, title, body, position)
  select x.unit_id, x.external_id, x.title, x.body, x.position
    from jsonb_to_recordset($1::text::jsonb) as x(ord int, unit_id uuid, external_id text, title text, body text, position int)
   order by x.ord
  returning id, unit_id, position`;

const INSERT_ACTIVITIES_SQL = `
  insert into activities (lesson_id, external_id, title, kind, spec, rubric, pass_threshold, position)
  select x.lesson_id, x.external_id, x.title, x.kind, x.spec, x.rubric, x.pass_threshold, x.position
    from jsonb_to_recordset($1::text::jsonb)
      as x(ord int, lesson_id uuid, external_id text, title text, kind text, spec text, rubric jsonb, pass_threshold int, position int)
   order by x.ord
  returning id`;

/** Told after each level is written (import_program tells the program row too): how many records, which level. */
export type LevelWritten = (records: number, level: 'program' | 'units' | 'lessons' | 'activities') => Promise<void>;

/**
 * Insert `units` (with their lessons and activities) under the empty program `programId`, in
 * order; `written` is told after each level. Returns the counts written. Database errors are
 * thrown as they come (the caller maps them).
 */
export async function writeChildren(tx: Queryable, programId: string, units: UnitInput[], written?: LevelWritten): Promise<TreeCounts> {
  if (!units.length) return { units: 0, lessons: 0, activities: 0 };
  const unitRows = units.map((u, i) => ({ ord: i, external_id: u.external_id ?? null, title: u.title, description: u.description ?? null, position: i + 1 }));
  const insertedUnits = await tx.query<{ id: string; position: number }>(INSERT_UNITS_SQL, [programId, JSON.stringify(unitRows)]);
  const unitId = new Map(insertedUnits.map((r) => [r.position, r.id]));
  await written?.(unitRows.length, 'units');

  const lessonRows = units.flatMap((u, ui) =>
    u.lessons.map((l, li) => ({ unit_id: unitId.get(ui + 1)!, external_id: l.external_id ?? null, title: l.title, body: l.body ?? null, position: li + 1 })),
  );
  const lessonsByKey = new Map<string, string>();
  if (lessonRows.length) {
    const rows = await tx.query<{ id: string; unit_id: string; position: number }>(INSERT_LESSONS_SQL, [
      JSON.stringify(lessonRows.map((r, ord) => ({ ord, ...r }))),
    ]);
    for (const r of rows) lessonsByKey.set(`${r.unit_id}/${r.position}`, r.id);
  }
  await written?.(lessonRows.length, 'lessons');

  const activityRows = units.flatMap((u, ui) =>
    u.lessons.flatMap((l, li) =>
      l.activities.map((a, ai) => ({
        lesson_id: lessonsByKey.get(`${unitId.get(ui + 1)}/${li + 1}`)!,
        external_id: a.external_id ?? null,
        title: a.title,
        kind: a.kind,
        spec: a.spec,
        rubric: a.rubric,
        pass_threshold: a.pass_threshold,
        position: ai + 1,
      })),
    ),
  );
  if (activityRows.length) {
    await tx.query(INSERT_ACTIVITIES_SQL, [JSON.stringify(activityRows.map((r, ord) => ({ ord, ...r })))]);
  }
  await written?.(activityRows.length, 'activities');
  return { units: unitRows.length, lessons: lessonRows.length, activities: activityRows.length };
}
