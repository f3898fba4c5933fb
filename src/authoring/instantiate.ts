/**
 * instantiate_program: deep-copy a program you can read (a catalog program, tenant_id null,
 * or one of your tenants') into a tenant you are an author of, in one transaction.
 *
 * Four statements after two look-ups: the program row (with `source_program_id`), then each
 * level with `insert … select`, where a materialized CTE pairs every source id with a fresh
 * uuid v7 and hands the old → new map to the next level. Positions are renumbered 1..n in
 * source order (position, created_at, id), so the copy reads in the same order even if the
 * source had gaps or ties. The triggers fill tenant_id / program_id from the new parents, and
 * RLS checks every row written: a learner's or stranger's attempt fails on the first insert.
 */
import { z } from 'zod';
import type { Queryable } from '../db/index.ts';
import { notFound } from './errors.ts';
import { findRecord, insertRecord, ProgramRecord, tenantIdBySlug, tenantSlug, title, uuid } from './records.ts';
import { CREATE, defineTool, type AnyTool } from './tool.ts';

type IdMap = Record<string, string>;

/** Copy level SQL: `$1` the parent map (old → new, jsonb), `$2` the new program id (units only). */
const COPY_UNITS_SQL = `
  with src as materialized (
    select u.id as old_id, svc.uuid_v7() as new_id, u.title, u.description,
           row_number() over (order by u.position, u.created_at, u.id) as position
      from units u where u.program_id = $1::uuid),
  ins as (
    insert into units (id, program_id, title, description, position)
    select new_id, $2::uuid, title, description, position from src returning 1)
  select (select count(*)::int from ins) as copied,
         coalesce((select jsonb_object_agg(old_id, new_id) from src), '{}'::jsonb) as map`;

const COPY_LESSONS_SQL = `
  with parents as (select key::uuid as old_id, value::uuid as new_id from jsonb_each_text($1::text::jsonb)),
  src as materialized (
    select l.id as old_id, svc.uuid_v7() as new_id, p.new_id as unit_id, l.title, l.body,
           row_number() over (partition by l.unit_id order by l.position, l.created_at, l.id) as position
      from lessons l join parents p on p.old_id = l.unit_id),
  ins as (
    insert into lessons (id, unit_id, title, body, position)
    select new_id, unit_id, title, body, position from src returning 1)
  select (select count(*)::int from ins) as copied,
         coalesce((select jsonb_object_agg(old_id, new_id) from src), '{}'::jsonb) as map`;

const COPY_ACTIVITIES_SQL = `
  with parents as (select key::uuid as old_id, value::uuid as new_id from jsonb_each_text($1::text::jsonb)),
  src as materialized (
    select svc.uuid_v7() as new_id, p.new_id as lesson_id, a.title, a.kind, a.spec, a.rubric, a.pass_threshold,
           row_number() over (partition by a.lesson_id order by a.position, a.created_at, a.id) as position
      from activities a join parents p on p.old_id = a.lesson_id),
  ins as (
    insert into activities (id, lesson_id, title, kind, spec, rubric, pass_threshold, position)
    select new_id, lesson_id, title, kind, spec, rubric, pass_threshold, position from src returning 1)
  select (select count(*)::int from ins) as copied, '{}'::jsonb as map`;

async function copyLevel(tx: Queryable, sql: string, params: unknown[]): Promise<{ copied: number; map: IdMap }> {
  const [row] = await tx.query<{ copied: number; map: IdMap }>(sql, params);
  return row!;
}

const instantiateProgram = defineTool({
  name: 'instantiate_program',
  title: 'Instantiate a program',
  description:
    'Copy a program (usually one of the service catalog, see list_programs) with all its units, lessons and activities ' +
    'into a tenant you are an author of. The copy records the source in `source_program_id`. All or nothing.',
  input: z.strictObject({
    program_id: uuid('Id of the source program: a catalog program or any program you can read'),
    tenant: tenantSlug('Slug of the tenant that will own the copy'),
    title: title("Title of the copy (default: the source's title)").optional(),
  }),
  output: ProgramRecord.extend({
    counts: z
      .object({
        units: z.number().int().describe('Units copied'),
        lessons: z.number().int().describe('Lessons copied'),
        activities: z.number().int().describe('Activities copied'),
      })
      .describe('How much was copied'),
  }),
  annotations: CREATE,
  run: async ({ program_id, tenant, title }, tx) => {
    // 1. the source, as the caller sees it; 2. the target tenant
    const source = await findRecord(tx, 'program', program_id);
    if (!source) throw notFound('program', program_id);
    const tenantId = await tenantIdBySlug(tx, tenant);
    // 3. the program, then each level (RLS checks every row)
    const program = await insertRecord(tx, 'program', {
      tenant_id: tenantId,
      title: title ?? source.title,
      description: source.description,
      source_program_id: program_id,
    });
    const units = await copyLevel(tx, COPY_UNITS_SQL, [program_id, program.id]);
    const lessons = await copyLevel(tx, COPY_LESSONS_SQL, [JSON.stringify(units.map)]);
    const activities = await copyLevel(tx, COPY_ACTIVITIES_SQL, [JSON.stringify(lessons.map)]);
    const counts = { units: units.copied, lessons: lessons.copied, activities: activities.copied };
    return {
      structured: { ...program, counts },
      summary: `instantiated program ${program.id} in ${tenant} from ${program_id}: ${counts.units} unit(s), ${counts.lessons} lesson(s), ${counts.activities} activities`,
    };
  },
});

export const instantiateTools: AnyTool[] = [instantiateProgram];
