/**
 * import_program: bulk content injection — a whole program (units → lessons → activities with
 * rubrics) written in one call, in one transaction: all of it or nothing.
 *
 * Idempotent by the caller's `external_id` (required): the program row is inserted with
 * `on conflict (tenant_id, external_id) do nothing`, so of two concurrent imports one writes and
 * the other waits for it and then finds the program. A second import with the same external_id
 * and the same content (sha256 of the validated arguments, stored in `programs.import_digest`)
 * writes nothing and answers the program already imported (`created: false`); with different
 * content it is refused — to replace a program, delete it and import again.
 *
 * Order comes from the arrays: position i + 1 at every level. Rows are written three statements
 * in all (tree.ts), each checked by RLS and by the position triggers. The answer is the program
 * with an id map of the tree (id, external_id, position of every record, no titles: the Odin
 * full-stack path answers in about 75,000 characters), so the caller can map their ids to ours.
 * An answer with the id map larger than `MAX_ANSWER_CHARS` (reads.ts; 20 units × 10 lessons × 10
 * activities is about 390,000 characters) leaves the map out: the program, its counts and a
 * `note` naming the reads that give the ids (get_program, get_unit, search_content).
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { explainDbError, ToolFailure } from './errors.ts';
import { externalId, NEW_FIELDS, ProgramRecord, recordJson, tenantIdBySlug, tenantSlug } from './records.ts';
import { MAX_ANSWER_CHARS } from './reads.ts';
import { answerSize, defineTool, type AnyTool, type Progress, type ToolAnswer } from './tool.ts';
import { programOutline, treeCounts, treeCountsSchema, writeChildren, type Json, type LevelWritten, type UnitInput } from './tree.ts';

/** Most records (units + lessons + activities) one import may hold. */
export const MAX_IMPORT_RECORDS = 20_000;

const ImportActivity = z.strictObject({
  external_id: externalId('among the activities of the program').optional(),
  ...NEW_FIELDS.activity,
});

const ImportLesson = z.strictObject({
  external_id: externalId('among the lessons of the program').optional(),
  ...NEW_FIELDS.lesson,
  activities: z.array(ImportActivity).max(1_000).default([]).describe('The activities of the lesson, in order (position = index + 1)'),
});

const ImportUnit = z.strictObject({
  external_id: externalId('among the units of the program').optional(),
  ...NEW_FIELDS.unit,
  lessons: z.array(ImportLesson).max(5_000).default([]).describe('The lessons of the unit, in order (position = index + 1)'),
});

const ImportInput = z
  .strictObject({
    tenant: tenantSlug('Slug of the tenant that will own the program (you must be an author there)'),
    external_id: externalId(
      'among the programs of the tenant. Makes the import idempotent: the same external_id with the same content ' +
        'returns the program already imported; with different content the import is refused',
    ),
    ...NEW_FIELDS.program,
    units: z.array(ImportUnit).max(5_000).describe('The units of the program, in order (position = index + 1), each with its lessons and their activities'),
  })
  .superRefine((value, ctx) => {
    // external ids are unique per program at each level; say where a duplicate is, before any write
    const seen = { units: new Map<string, string>(), lessons: new Map<string, string>(), activities: new Map<string, string>() };
    const check = (level: keyof typeof seen, id: string | undefined, path: (string | number)[]) => {
      if (id === undefined) return;
      const first = seen[level].get(id);
      if (first) ctx.addIssue({ code: 'custom', path: [...path, 'external_id'], message: `duplicate external_id "${id}" (first used at ${first})` });
      else seen[level].set(id, path.map((p, i) => (typeof p === 'number' ? `[${p}]` : `${i ? '.' : ''}${p}`)).join(''));
    };
    let records = 0;
    value.units.forEach((u, ui) => {
      check('units', u.external_id, ['units', ui]);
      records += 1 + u.lessons.length;
      u.lessons.forEach((l, li) => {
        check('lessons', l.external_id, ['units', ui, 'lessons', li]);
        records += l.activities.length;
        l.activities.forEach((a, ai) => {
          check('activities', a.external_id, ['units', ui, 'lessons', li, 'activities', ai]);
        });
      });
    });
    if (records > MAX_IMPORT_RECORDS) {
      ctx.addIssue({
        code: 'custom',
        path: ['units'],
        message: `too many records: ${records} (at most ${MAX_IMPORT_RECORDS} units, lessons and activities per import)`,
      });
    }
  });

const OutlineRecord = {
  id: z.string().describe('Record id (uuid)'),
  external_id: z.string().nullable().describe('Your id of the record, if you gave one'),
  position: z.number().int().describe('Position within its parent (1-based)'),
};

const ImportOutput = ProgramRecord.extend({
  created: z.boolean().describe('true: written by this call; false: this external_id was already imported with the same content, nothing written'),
  counts: treeCountsSchema('in the program', 'Size of the program'),
  units: z
    .array(
      z.object({
        ...OutlineRecord,
        lessons: z
          .array(z.object({ ...OutlineRecord, activities: z.array(z.object(OutlineRecord)).describe('Activities, in order') }))
          .describe('Lessons, in order'),
      }),
    )
    .optional()
    .describe(
      'Every record of the program with its id, your external_id and its position, in order (read titles and texts with get_program); ' +
        `left out when the answer would exceed ${MAX_ANSWER_CHARS.toLocaleString('en')} characters (see note)`,
    ),
  note: z.string().optional().describe('Present when the id map is left out: where to read the ids instead'),
});

const FIND_BY_EXTERNAL_ID_SQL = `select ${recordJson('p')} as record, p.import_digest as digest from programs p where p.tenant_id = $1 and p.external_id = $2`;

const INSERT_PROGRAM_SQL = `
  insert into programs as p (tenant_id, external_id, title, description, import_digest)
  values ($1, $2, $3, $4, $5)
  on conflict (tenant_id, external_id) where external_id is not null do nothing
  returning ${recordJson('p')} as record`;

/**
 * Progress of one import in records written (the program, then each level), out of all of them;
 * undefined when the client did not ask for progress.
 */
function importProgress(progress: Progress | undefined, units: UnitInput[]): LevelWritten | undefined {
  if (!progress) return undefined;
  const counts = treeCounts({ units });
  const total = 1 + counts.units + counts.lessons + counts.activities;
  let done = 0;
  return async (records, level) => {
    done += records;
    await progress(done, total, `wrote ${records} ${level}`);
  };
}

const importProgram = defineTool({
  name: 'import_program',
  title: 'Import a whole program',
  description:
    'Create a program with all its units, lessons and activities (with rubrics) in one call, in one transaction: ' +
    'either everything is written or nothing is. Order comes from the arrays. `external_id` (your id of the program) ' +
    'makes it safe to retry: the same external_id and content returns the program already imported (created: false). ' +
    'Needs the author role in the tenant. Returns the program and a map of your external ids to ids, in order. ' +
    'Pass a progressToken to receive progress notifications while it writes.',
  input: ImportInput,
  output: ImportOutput,
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  run: async (args, tx, ctx) => {
    const { tenant, ...content } = args;
    const digest = createHash('sha256').update(JSON.stringify(content)).digest('hex');
    const tenantId = await tenantIdBySlug(tx, tenant);
    const progress = importProgress(ctx.progress, content.units);
    let program: Json | undefined;
    try {
      [program] = (
        await tx.query<{ record: Json }>(INSERT_PROGRAM_SQL, [tenantId, content.external_id, content.title, content.description ?? null, digest])
      ).map((r) => r.record);
      if (program) {
        await progress?.(1, 'program');
        await writeChildren(tx, program.id as string, content.units, progress);
      }
    } catch (err) {
      throw explainDbError(err);
    }
    const created = program !== undefined;
    if (!program) {
      const [existing] = await tx.query<{ record: Json; digest: string | null }>(FIND_BY_EXTERNAL_ID_SQL, [tenantId, content.external_id]);
      program = existing!.record;
      if (existing!.digest !== digest) {
        throw new ToolFailure(
          `external_id already used: program ${program.id} of ${tenant} has external_id "${content.external_id}" and other content; ` +
            'delete it first (delete_program) or import under another external_id',
        );
      }
    }
    const tree = await programOutline(tx, program.id as string);
    const counts = treeCounts(tree);
    return withinBound({
      structured: { ...tree, created, counts },
      summary: created
        ? `imported program ${program.id} into ${tenant}: ${counts.units} unit(s), ${counts.lessons} lesson(s), ${counts.activities} activities`
        : `program ${program.id} was already imported with this external_id and content: nothing written`,
    });
  },
});

/**
 * The answer of an import, or, when its id map makes it larger than `MAX_ANSWER_CHARS`, the same
 * answer without the map (`units`) and with a `note` naming the reads that give the ids.
 */
function withinBound(answer: ToolAnswer): ToolAnswer {
  const size = answerSize(answer);
  if (size <= MAX_ANSWER_CHARS) return answer;
  const { units: _map, ...program } = answer.structured;
  const note =
    `the id map is left out: it would make this answer ${size.toLocaleString('en')} characters, more than the ` +
    `${MAX_ANSWER_CHARS.toLocaleString('en')} one answer may hold. Read the ids of the units with get_program (only the units when the outline is too large), ` +
    'then each unit with get_unit, or find records with search_content; each record in full (get_unit or get_lesson at depth "full", get_activity) has your external_id';
  return { structured: { ...program, note }, summary: `${answer.summary} (id map left out: too large; see note)` };
}

export const importTools: AnyTool[] = [importProgram];
