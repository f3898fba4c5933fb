/**
 * Program tools: list_programs, get_program (the whole tree), create_program, update_program,
 * delete_program. Members of a tenant read its programs; everyone signed in reads the catalog
 * (programs with no tenant); only authors of the tenant write (RLS, migration 0001).
 */
import { z } from 'zod';
import type { Queryable } from '../db/index.ts';
import { invalidParams, notFound } from './errors.ts';
import { deleteTool, updateTool } from './crud.ts';
import {
  ActivityRecord,
  clearableText,
  findRecord,
  insertRecord,
  LessonRecord,
  longText,
  ProgramRecord,
  tenantIdBySlug,
  tenantSlug,
  title,
  UnitRecord,
  uuid,
} from './records.ts';
import { CREATE, defineTool, READ, type AnyTool } from './tool.ts';

// ---------------------------------------------------------------------------------------------
// list_programs: keyset pages over (created_at, id), an opaque cursor
// ---------------------------------------------------------------------------------------------
const DEFAULT_LIMIT = 50;
const MAX_LIMIT = 200;
const TIMESTAMP_RE = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d{1,6})?([+-]\d{2}(:\d{2})?|Z)$/;
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

interface Cursor {
  created_at: string;
  id: string;
}

/** The opaque cursor after `record`: base64url JSON of its (created_at, id), microseconds kept. */
export function encodeCursor(c: Cursor): string {
  return Buffer.from(JSON.stringify([c.created_at, c.id])).toString('base64url');
}

/** Decode a cursor; a malformed one is an invalid argument (-32602). */
export function decodeCursor(cursor: string): Cursor {
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (Array.isArray(value) && value.length === 2) {
      const [createdAt, id] = value as unknown[];
      if (typeof createdAt === 'string' && TIMESTAMP_RE.test(createdAt) && typeof id === 'string' && UUID_RE.test(id)) {
        return { created_at: createdAt, id };
      }
    }
  } catch {
    // fall through
  }
  throw invalidParams('Invalid arguments for tool list_programs: malformed cursor');
}

const LIST_PROGRAMS_SQL = `
  select to_jsonb(p) || jsonb_build_object('tenant', t.slug) as record
    from programs p left join tenants t on t.id = p.tenant_id
   where ($1::uuid is null or p.tenant_id = $1::uuid)
     and ($2::timestamptz is null or (p.created_at, p.id) > ($2::timestamptz, $3::uuid))
   order by p.created_at, p.id
   limit $4`;

const ListedProgram = ProgramRecord.extend({
  tenant: z.string().nullable().describe('Slug of the owning tenant; null for the catalog'),
});

const listPrograms = defineTool({
  name: 'list_programs',
  title: 'List programs',
  description:
    'List the programs you can read, oldest first: those of your tenants and the service catalog (tenant null). ' +
    'Give `tenant` to list one tenant only. Pages: pass `next_cursor` back as `cursor`; it is null on the last page.',
  input: z.strictObject({
    tenant: tenantSlug('Only programs of this tenant (slug); omit for all you can read, the catalog included').optional(),
    cursor: z.string().max(500).describe('`next_cursor` from the previous page; omit for the first page').optional(),
    limit: z.number().int().min(1).max(MAX_LIMIT).describe(`Page size, 1–${MAX_LIMIT} (default ${DEFAULT_LIMIT})`).optional(),
  }),
  output: z.object({
    programs: z.array(ListedProgram).describe('This page of programs'),
    next_cursor: z.string().nullable().describe('Cursor of the next page; null on the last page'),
  }),
  annotations: READ,
  run: async ({ tenant, cursor, limit = DEFAULT_LIMIT }, tx) => {
    const after = cursor === undefined ? undefined : decodeCursor(cursor);
    const tenantId = tenant === undefined ? null : await tenantIdBySlug(tx, tenant);
    const rows = await tx.query<{ record: Cursor & Record<string, unknown> }>(LIST_PROGRAMS_SQL, [
      tenantId,
      after?.created_at ?? null,
      after?.id ?? null,
      limit + 1,
    ]);
    const programs = rows.slice(0, limit).map((r) => r.record);
    const last = programs[programs.length - 1];
    const next_cursor = rows.length > limit && last ? encodeCursor(last) : null;
    return { structured: { programs, next_cursor }, summary: `${programs.length} program(s)${next_cursor ? ', more on the next page' : ''}` };
  },
});

// ---------------------------------------------------------------------------------------------
// get_program: the whole tree, each level in source order (position, then created_at, then id)
// ---------------------------------------------------------------------------------------------
/**
 * The units of program $1 with their lessons and activities. Each level filters on its row's
 * tenant too (`$2`, or null for the catalog), so the indexes that lead with tenant_id serve it.
 */
const treeSql = (catalog: boolean) => {
  const tenant = (alias: string) => (catalog ? `${alias}.tenant_id is null` : `${alias}.tenant_id = $2::uuid`);
  return `
  select coalesce(jsonb_agg(to_jsonb(u) || jsonb_build_object('lessons', coalesce((
           select jsonb_agg(to_jsonb(l) || jsonb_build_object('activities', coalesce((
                    select jsonb_agg(to_jsonb(a) order by a.position, a.created_at, a.id)
                      from activities a where ${tenant('a')} and a.lesson_id = l.id), '[]'::jsonb))
                  order by l.position, l.created_at, l.id)
             from lessons l where ${tenant('l')} and l.unit_id = u.id), '[]'::jsonb))
         order by u.position, u.created_at, u.id), '[]'::jsonb) as units
    from units u where ${tenant('u')} and u.program_id = $1::uuid`;
};

const ProgramTree = ProgramRecord.extend({
  units: z
    .array(
      UnitRecord.extend({
        lessons: z
          .array(LessonRecord.extend({ activities: z.array(ActivityRecord).describe('Activities in order') }))
          .describe('Lessons in order'),
      }),
    )
    .describe('Units in order'),
});

/** The program `id` with its units → lessons → activities; throws "program <id> not found". */
export async function programTree(tx: Queryable, id: string): Promise<Record<string, unknown>> {
  const program = await findRecord(tx, 'program', id);
  if (!program) throw notFound('program', id);
  const catalog = program.tenant_id === null;
  const [row] = await tx.query<{ units: unknown[] }>(treeSql(catalog), catalog ? [id] : [id, program.tenant_id]);
  return { ...program, units: row?.units ?? [] };
}

const getProgram = defineTool({
  name: 'get_program',
  title: 'Get a program with its content',
  description:
    'Read one program with all its units, each unit with its lessons, each lesson with its activities ' +
    '(each level ordered by position, then creation time).',
  input: z.strictObject({ id: uuid('Program id') }),
  output: ProgramTree,
  annotations: READ,
  run: async ({ id }, tx) => {
    const tree = await programTree(tx, id);
    const units = tree.units as { lessons: { activities: unknown[] }[] }[];
    const lessons = units.flatMap((u) => u.lessons);
    const activities = lessons.flatMap((l) => l.activities).length;
    return {
      structured: tree,
      summary: `program ${id} "${tree.title}": ${units.length} unit(s), ${lessons.length} lesson(s), ${activities} activit${activities === 1 ? 'y' : 'ies'}`,
    };
  },
});

// ---------------------------------------------------------------------------------------------
// create / update / delete
// ---------------------------------------------------------------------------------------------
const createProgram = defineTool({
  name: 'create_program',
  title: 'Create a program',
  description: 'Create an empty program in a tenant you are an author of. Returns the program with its id.',
  input: z.strictObject({
    tenant: tenantSlug('Slug of the tenant that will own the program'),
    title: title('Program title'),
    description: longText('What the program is about (markdown)').optional(),
  }),
  output: ProgramRecord,
  annotations: CREATE,
  run: async ({ tenant, title, description }, tx) => {
    const tenantId = await tenantIdBySlug(tx, tenant);
    const record = await insertRecord(tx, 'program', { tenant_id: tenantId, title, description });
    return { structured: record, summary: `created program ${record.id} in ${tenant}` };
  },
});

export const programTools: AnyTool[] = [
  listPrograms,
  getProgram,
  createProgram,
  updateTool('program', ProgramRecord, {
    title: title('New title').optional(),
    description: clearableText('New description (markdown)').optional(),
  }),
  deleteTool('program', ProgramRecord),
];
