/**
 * A program's tree (units → lessons → activities), read and written level by level.
 *
 * - `programTree(tx, id)`: the program with every record, each level in order — one query for
 *   the program, one that builds the whole tree as JSON in PostgreSQL (get_program).
 * - `programOutline(tx, id)`: the same tree with only id, external_id, title and position per
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
import type { Queryable } from '../db/index.ts';
import { notFoundFailure, findRecord, recordJson } from './records.ts';

/** What a tree read renders per record: the whole row, or the outline. */
type Shape = 'full' | 'outline';

const outline = (alias: string) =>
  `jsonb_build_object('id', ${alias}.id, 'external_id', ${alias}.external_id, 'title', ${alias}.title, 'position', ${alias}.position)`;

function treeSql(catalog: boolean, shape: Shape): string {
  const tenant = (alias: string) => (catalog ? `${alias}.tenant_id is null` : `${alias}.tenant_id = $2::uuid`);
  const row = (alias: string) => (shape === 'full' ? recordJson(alias) : outline(alias));
  return `
  select coalesce(jsonb_agg(${row('u')} || jsonb_build_object('lessons', coalesce((
           select jsonb_agg(${row('l')} || jsonb_build_object('activities', coalesce((
                    select jsonb_agg(${row('a')} order by a.position, a.created_at, a.id)
                      from activities a where ${tenant('a')} and a.lesson_id = l.id), '[]'::jsonb))
                  order by l.position, l.created_at, l.id)
             from lessons l where ${tenant('l')} and l.unit_id = u.id), '[]'::jsonb))
         order by u.position, u.created_at, u.id), '[]'::jsonb) as units
    from units u where ${tenant('u')} and u.program_id = $1::uuid`;
}

export type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

async function readTree(tx: Queryable, id: string, shape: Shape): Promise<Json> {
  const program = await findRecord(tx, 'program', id);
  if (!program) throw await notFoundFailure(tx, 'program', id);
  const catalog = program.tenant_id === null;
  const [row] = await tx.query<{ units: Json[] }>(treeSql(catalog, shape), catalog ? [id] : [id, program.tenant_id]);
  return { ...program, units: row?.units ?? [] };
}

/** The program `id` with its units → lessons → activities; throws "program <id> not found". */
export const programTree = (tx: Queryable, id: string) => readTree(tx, id, 'full');

/** The program record with an outline of its tree (id, external_id, title, position per record). */
export const programOutline = (tx: Queryable, id: string) => readTree(tx, id, 'outline');

/** Record counts of a tree read by `programTree` or `programOutline`. */
export function treeCounts(tree: Json): { units: number; lessons: number; activities: number } {
  const lessons = (tree.units as Json[]).flatMap((u) => u.lessons as Json[]);
  return { units: tree.units.length, lessons: lessons.length, activities: lessons.flatMap((l) => l.activities as Json[]).length };
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

/**
 * Insert `units` (with their lessons and activities) under the empty program `programId`, in
 * order. Returns the counts written. Database errors are thrown as they come (the caller maps them).
 */
export async function writeChildren(tx: Queryable, programId: string, units: UnitInput[]): Promise<{ units: number; lessons: number; activities: number }> {
  if (!units.length) return { units: 0, lessons: 0, activities: 0 };
  const unitRows = units.map((u, i) => ({ ord: i, external_id: u.external_id ?? null, title: u.title, description: u.description ?? null, position: i + 1 }));
  const insertedUnits = await tx.query<{ id: string; position: number }>(INSERT_UNITS_SQL, [programId, JSON.stringify(unitRows)]);
  const unitId = new Map(insertedUnits.map((r) => [r.position, r.id]));

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
  return { units: unitRows.length, lessons: lessonRows.length, activities: activityRows.length };
}
