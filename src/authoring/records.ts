/**
 * The four content records (program → unit → lesson → activity): their field schemas, their
 * JSON shapes, the per-type tables the tools are built from (parent, fields on create and on
 * update, output shape), and the insert / update / delete helpers every record type's tools share.
 *
 * All SQL here runs inside the caller's `asUser` transaction, so RLS decides what is visible
 * and writable. Records are returned as PostgreSQL builds them (`to_jsonb(row)`: timestamps as
 * RFC 3339 text with microseconds). A zero-row update or delete is explained by looking the
 * id up once more under the same RLS: visible → "not allowed", invisible → "not found" (so
 * another tenant's id reads exactly like an id that does not exist; an id of another record
 * type that the caller can see is named: "… not found (that id is a unit)").
 *
 * Positions are the database's business (migration 0030): inserting at a position shifts the
 * siblings, changing a position moves the row, deleting closes the gap, all under a lock per
 * program. Updates and deletes here take that lock *before* touching the row, so that a
 * concurrent insert that holds the lock and shifts this row cannot deadlock with them.
 */
import { z } from 'zod';
import type { Queryable } from '../db/index.ts';
import { explainDbError, invalidArguments, NOT_ALLOWED, notFound, tenantNotFound, ToolFailure, type Subject } from './errors.ts';
import { slugSchema } from '../lib/ids.ts';
import { ARTIFACT_KINDS } from '../lib/artifact-kinds.ts';

// ---------------------------------------------------------------------------------------------
// Input field schemas (each tool adds its own `.describe()` where the meaning differs)
// ---------------------------------------------------------------------------------------------
export const uuid = (what: string) => z.uuid().describe(what);
export const tenantSlug = (what: string) => slugSchema('a tenant slug is 1–63 lower-case letters, digits and dashes').describe(what);
export const title = (what: string) => z.string().min(1).max(500).describe(`${what} (1–500 characters)`);
const longText = (what: string) => z.string().max(200_000).describe(what);
/** A text field an update may clear with null. */
const clearableText = (what: string) => z.string().max(200_000).nullable().describe(`${what}; null clears it`);
const POSITION_MAX = 1_000_000;
/** Position of a new record: omit to append; 1..n+1 inserts there and shifts the others down. */
export const insertPosition = (what: string) =>
  z
    .number()
    .int()
    .min(1)
    .max(POSITION_MAX)
    .describe(
      `${what} (1-based). Omit to append at the end; a position from 1 to (number of siblings + 1) inserts there ` +
        'and moves the siblings at and after it down by one',
    );
/** New position of an existing record: 1..n; the siblings in between shift by one. */
export const movePosition = (what: string) =>
  z.number().int().min(1).max(POSITION_MAX).describe(`${what} (1-based, at most the number of siblings); the siblings in between shift by one to make room`);
/** A partner's own id of a record: set at creation, never changed. */
export const externalId = (scope: string) =>
  z.string().min(1).max(200).describe(`Your own id for this record (1–200 characters), unique ${scope}; set once at creation, returned on reads`);
export const kind = z.enum(ARTIFACT_KINDS).describe('The kind of artifact the learner hands in: diagram, document, site or repo');
export const rubric = z
  .array(
    z.strictObject({
      criterion: z.string().min(1).max(5_000).describe('What the grader checks, in one sentence'),
      weight: z.number().nonnegative().max(1_000).default(1).describe('Relative weight of the criterion (non-negative, default 1)'),
    }),
  )
  .min(1)
  .max(200)
  .describe('Grading criteria with weights');
export const passThreshold = z.number().int().min(0).max(100).describe('Score (0–100) at or above which a submission passes');

const DEFAULT_PASS_THRESHOLD = 70;

/**
 * The fields a new record is written with, per record type, besides where it goes (tenant or
 * parent, position) and its external_id: create_X and the levels of import_program.
 */
export const NEW_FIELDS = {
  program: { title: title('Program title'), description: longText('What the program is about (markdown)').optional() },
  unit: { title: title('Unit title'), description: longText('What the unit covers (markdown)').optional() },
  lesson: { title: title('Lesson title'), body: longText('Lesson text (markdown)').optional() },
  activity: {
    title: title('Activity title'),
    kind,
    spec: longText('What the learner must produce (markdown)').min(1),
    rubric,
    pass_threshold: passThreshold.default(DEFAULT_PASS_THRESHOLD).describe(`Passing score, 0–100 (default ${DEFAULT_PASS_THRESHOLD})`),
  },
} satisfies Record<RecordName, z.ZodRawShape>;

/** The fields update_X may change, per record type, besides the title and (below a program) the position. */
export const CHANGEABLE_FIELDS = {
  program: { description: clearableText('New description (markdown)').optional() },
  unit: { description: clearableText('New description (markdown)').optional() },
  lesson: { body: clearableText('New lesson text (markdown)').optional() },
  activity: {
    kind: kind.optional(),
    spec: longText('New spec (markdown)').min(1).optional(),
    rubric: rubric.optional(),
    pass_threshold: passThreshold.optional(),
  },
} satisfies Record<RecordName, z.ZodRawShape>;

// ---------------------------------------------------------------------------------------------
// Output shapes. Loose objects: a column added by a later migration must not make clients that
// validate `structuredContent` against these schemas reject the answers.
// ---------------------------------------------------------------------------------------------
const id = z.string().describe('Record id (uuid)');
const ts = (what: string) => z.string().describe(`${what} (RFC 3339)`);
const common = {
  id,
  tenant_id: z.string().nullable().describe('Owning tenant id; null for the service catalog'),
  external_id: z.string().nullable().describe('The id you gave this record at creation, if any'),
  title: z.string().describe('Title'),
  created_at: ts('Creation time'),
  updated_at: ts('Last change'),
  archived_at: z.string().nullable().describe('When this record was archived (archive_*), RFC 3339; null when it is not archived itself'),
  archived: z.boolean().describe('Whether learners cannot see it: it, or a record above it, is archived'),
};
export const ProgramRecord = z.looseObject({
  ...common,
  description: z.string().nullable().describe('Description (markdown)'),
  source_program_id: z.string().nullable().describe('The program this one was instantiated from, if any'),
});
/**
 * A unit, lesson or activity under `parent`: the common fields, its program, its own `fields`
 * (led by its parent's id when the parent is not the program), its position among its siblings.
 */
const childRecord = <F extends z.ZodRawShape>(parent: Exclude<RecordName, 'activity'>, fields: F) =>
  z.looseObject({
    ...common,
    program_id: z.string().describe('Program id'),
    ...fields,
    position: z.number().int().min(1).describe(`Position within the ${parent} (1-based)`),
  });
export const UnitRecord = childRecord('program', { description: z.string().nullable().describe('Description (markdown)') });
export const LessonRecord = childRecord('unit', {
  unit_id: z.string().describe('Unit id'),
  body: z.string().nullable().describe('Lesson body (markdown)'),
});
export const ActivityRecord = childRecord('lesson', {
  lesson_id: z.string().describe('Lesson id'),
  kind: z.string().describe('Kind of artifact: diagram, document, site or repo'),
  spec: z.string().describe('What the learner must produce (markdown)'),
  rubric: z
    .array(z.looseObject({ criterion: z.string().describe('Criterion'), weight: z.number().optional().describe('Weight') }))
    .describe('Grading criteria'),
  pass_threshold: z.number().int().min(0).max(100).describe('Passing score (0–100)'),
});

/** The output shape of each record type. */
export const RECORDS: Record<RecordName, z.ZodObject> = { program: ProgramRecord, unit: UnitRecord, lesson: LessonRecord, activity: ActivityRecord };

// ---------------------------------------------------------------------------------------------
// Tables and the shared write helpers
// ---------------------------------------------------------------------------------------------
export type RecordName = 'program' | 'unit' | 'lesson' | 'activity';
/** A record that hangs under another one. */
export type ChildName = Exclude<RecordName, 'program'>;
/** The record type each child hangs under (its `<parent>_id` column). */
export const PARENT = { unit: 'program', lesson: 'unit', activity: 'lesson' } as const satisfies Record<ChildName, RecordName>;
/** What goes with a record when it is deleted, and what an archived record hides. */
export const UNDER: Record<RecordName, string> = {
  program: 'its units, lessons and activities',
  unit: 'its lessons and activities',
  lesson: 'its activities',
  activity: 'nothing else',
};

interface Table {
  table: string;
  /** Columns a tool may set on insert (besides trigger-filled ones). */
  insertable: readonly string[];
  /** Columns a tool may change (the column grants of migration 0001). */
  updatable: readonly string[];
}

export const TABLES: Record<RecordName, Table> = {
  program: {
    table: 'programs',
    insertable: ['tenant_id', 'external_id', 'title', 'description', 'source_program_id'],
    updatable: ['title', 'description'],
  },
  unit: { table: 'units', insertable: ['program_id', 'external_id', 'title', 'description', 'position'], updatable: ['title', 'description', 'position'] },
  lesson: { table: 'lessons', insertable: ['unit_id', 'external_id', 'title', 'body', 'position'], updatable: ['title', 'body', 'position'] },
  activity: {
    table: 'activities',
    insertable: ['lesson_id', 'external_id', 'title', 'kind', 'spec', 'rubric', 'pass_threshold', 'position'],
    updatable: ['title', 'kind', 'spec', 'rubric', 'pass_threshold', 'position'],
  },
};

/**
 * SQL of a record's JSON: the row as PostgreSQL renders it, without `import_digest` (the
 * bookkeeping of import_program, not content).
 */
export const recordJson = (alias: string) => `(to_jsonb(${alias}) - 'import_digest')`;

/**
 * jsonb values go in as JSON text cast `::text::jsonb`: a text parameter reaches the server
 * verbatim with any driver and the server parses it, while a parameter typed jsonb is left to the
 * driver's serialiser (postgres.js, the former backend, JSON-encoded a string once more).
 */
const JSONB_COLUMNS = new Set(['rubric']);

/** Columns of `allowed` present in `values` (undefined = not given), with their SQL parameters. */
function columnsOf(allowed: readonly string[], values: Record<string, unknown>, firstParam: number) {
  const columns = allowed.filter((c) => values[c] !== undefined);
  const params = columns.map((c) => (JSONB_COLUMNS.has(c) ? JSON.stringify(values[c]) : values[c]));
  const placeholders = columns.map((c, i) => `$${firstParam + i}${JSONB_COLUMNS.has(c) ? '::text::jsonb' : ''}`);
  return { columns, params, placeholders };
}

/** The record as JSON, or undefined when `id` is not visible to the caller. */
export async function findRecord(tx: Queryable, name: RecordName, id: string): Promise<Record<string, unknown> | undefined> {
  const [row] = await tx.query<{ record: Record<string, unknown> }>(`select ${recordJson('t')} as record from ${TABLES[name].table} t where t.id = $1`, [id]);
  return row?.record;
}

/** The kind of content record `id` is among those the caller can see, or null. */
export async function recordKind(tx: Queryable, id: string): Promise<string | null> {
  const [row] = await tx.query<{ kind: string | null }>('select svc.record_kind($1::uuid) as kind', [id]);
  return row?.kind ?? null;
}

/** "<name> <id> not found", naming what the id is when the caller can see it as another record. */
export async function notFoundFailure(tx: Queryable, name: RecordName, id: string): Promise<ToolFailure> {
  return notFound(name, id, await recordKind(tx, id));
}

/** Why a write touched no row: visible → not allowed; invisible (or another tenant's) → not found. */
export async function missing(tx: Queryable, name: RecordName, id: string): Promise<never> {
  throw (await findRecord(tx, name, id)) ? new ToolFailure(NOT_ALLOWED) : await notFoundFailure(tx, name, id);
}

/**
 * Take the order lock of the program of child record `id` (units, lessons, activities), if the
 * caller can see it: the same lock the triggers of migration 0030 take, taken first.
 */
export async function lockOrderOf(tx: Queryable, name: RecordName, id: string): Promise<void> {
  if (name === 'program') return;
  await tx.query(`select svc.lock_program_order(t.program_id) from ${TABLES[name].table} t where t.id = $1`, [id]);
}

/**
 * Insert one record; `parent` names the parent for the trigger's not-found (P0002).
 * Throws `ToolFailure` (not allowed, parent not found, invalid value).
 */
export async function insertRecord(tx: Queryable, name: RecordName, values: Record<string, unknown>, parent?: Subject): Promise<Record<string, unknown>> {
  const { columns, params, placeholders } = columnsOf(TABLES[name].insertable, values, 1);
  try {
    const [row] = await tx.query<{ record: Record<string, unknown> }>(
      `insert into ${TABLES[name].table} as t (${columns.join(', ')}) values (${placeholders.join(', ')})
       returning ${recordJson('t')} as record`,
      params,
    );
    return row!.record;
  } catch (err) {
    throw explainDbError(err, parent);
  }
}

/**
 * Change the given fields of one record. No field given → an `isError` result saying which fields exist.
 * Throws `ToolFailure` (not found, not allowed, invalid value).
 */
export async function updateRecord(tx: Queryable, name: RecordName, id: string, changes: Record<string, unknown>): Promise<Record<string, unknown>> {
  const { columns, params, placeholders } = columnsOf(TABLES[name].updatable, changes, 2);
  if (!columns.length) {
    throw invalidArguments(`nothing to update: give at least one of ${TABLES[name].updatable.join(', ')}`);
  }
  let rows: { record: Record<string, unknown> }[];
  try {
    if (changes.position !== undefined) await lockOrderOf(tx, name, id);
    rows = await tx.query(
      `update ${TABLES[name].table} as t set ${columns.map((c, i) => `${c} = ${placeholders[i]}`).join(', ')}
       where t.id = $1 returning ${recordJson('t')} as record`,
      [id, ...params],
    );
  } catch (err) {
    throw explainDbError(err, { record: name, id });
  }
  return rows[0]?.record ?? missing(tx, name, id);
}

/**
 * Delete one record (its children go with it). Returns the deleted record.
 * Throws `ToolFailure` (not found, not allowed, has learner results).
 */
export async function deleteRecord(tx: Queryable, name: RecordName, id: string): Promise<Record<string, unknown>> {
  let rows: { record: Record<string, unknown> }[];
  try {
    await lockOrderOf(tx, name, id);
    rows = await tx.query(`delete from ${TABLES[name].table} as t where t.id = $1 returning ${recordJson('t')} as record`, [id]);
  } catch (err) {
    throw explainDbError(err, { record: name, id });
  }
  return rows[0]?.record ?? missing(tx, name, id);
}

/** The id of a tenant the caller is a member of, by slug; throws "tenant not found" otherwise. */
export async function tenantIdBySlug(tx: Queryable, slug: string): Promise<string> {
  const [row] = await tx.query<{ id: string }>('select id from tenants where slug = $1', [slug]);
  if (!row) throw tenantNotFound(slug);
  return row.id;
}
