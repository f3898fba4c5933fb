/**
 * Moves (issue #16): `move_unit {id, program_id, position?}`, `move_lesson {id, unit_id,
 * position?}`, `move_activity {id, lesson_id, position?}` — to another parent of the same
 * tenant (or within the same one), at a position.
 *
 * The database does the work (migration 0110, `svc.move_in_parent`): the gap in the old parent
 * closes, the siblings at and after the position in the new parent move down, and what hangs
 * below follows (the program of lessons and activities; the lesson of an activity's learner
 * results). Positions obey the rules of migration 0030 — 1-based, contiguous, no duplicates even
 * under concurrent calls — with the order locks of both programs, taken here before the row is
 * touched (as updates and deletes do), in one global order. A move can still meet a deadlock when
 * another move re-parents its record between that lock and the update (the update then follows the
 * record to a program it has not locked): PostgreSQL aborts one of the two, and `invoke` (tool.ts)
 * runs the victim's transaction again, so the caller sees the move done.
 *
 * Refused, nothing changed (`isError`): an unknown or invisible record or parent ("… not found";
 * an id of another kind is named, so a move into one's own descendant reads "unit … not found
 * (that id is an activity)": each kind's parent is the kind above it); a parent of another
 * tenant; a move to another program of content that learners have results on (their results and
 * progress belong to the program); a position out of range; an external_id the new program
 * already has; a caller who is not an author of the tenant.
 */
import { z } from 'zod';
import type { ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import { explainDbError, plural } from './errors.ts';
import { ActivityRecord, LessonRecord, missing, recordJson, TABLES, UnitRecord, uuid, type RecordName } from './records.ts';
import { defineTool, type AnyTool } from './tool.ts';

/**
 * Annotations of a move: destructive (it rewrites the order of two parents: no sibling keeps its
 * position by chance), idempotent (the same move again leaves everything where it is).
 */
export const MOVE: ToolAnnotations = { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false };

interface Move {
  name: Exclude<RecordName, 'program'>;
  parent: Exclude<RecordName, 'activity'>;
  /** The parent column (and argument). */
  column: 'program_id' | 'unit_id' | 'lesson_id';
  output: z.ZodObject;
  /** SQL of the program (`program_id`) of parent `$2`. */
  parentProgram: string;
}

const MOVES: Move[] = [
  { name: 'unit', parent: 'program', column: 'program_id', output: UnitRecord, parentProgram: 'select id as program_id from programs where id = $2' },
  { name: 'lesson', parent: 'unit', column: 'unit_id', output: LessonRecord, parentProgram: 'select program_id from units where id = $2' },
  { name: 'activity', parent: 'lesson', column: 'lesson_id', output: ActivityRecord, parentProgram: 'select program_id from lessons where id = $2' },
];

function moveTool(m: Move): AnyTool {
  const table = TABLES[m.name].table;
  return defineTool({
    name: `move_${m.name}`,
    title: `Move ${m.name === 'activity' ? 'an' : 'a'} ${m.name}`,
    description:
      `Move one ${m.name} (with everything under it) to a ${m.parent} of the same tenant — or within its ${m.parent} — at \`position\`. ` +
      `The ${plural(m.name)} after it in its old ${m.parent} move up one; those at and after the position in the new ${m.parent} move down one. ` +
      `Moving to another program is refused when learners have results on it (move it within its program, or archive it). ` +
      `Needs the author role in the tenant. Returns the ${m.name} in its new place.`,
    input: z.strictObject({
      id: uuid(`Id of the ${m.name} to move`),
      [m.column]: uuid(`Id of the ${m.parent} to move it to (may be its current ${m.parent})`),
      position: z
        .number()
        .int()
        .min(1)
        .max(1_000_000)
        .optional()
        .describe(
          `Position in the new ${m.parent} (1-based): 1 to (number of ${plural(m.name)} there + 1), or 1 to n within its own ${m.parent}; omit to put it last`,
        ),
    }),
    output: m.output,
    annotations: MOVE,
    run: async (args, tx) => {
      const id = args.id as string;
      const parentId = args[m.column] as string;
      let rows: { record: Record<string, unknown> }[];
      try {
        await tx.query(
          `select svc.lock_programs_order(t.program_id, p.program_id)
             from ${table} t, (${m.parentProgram}) p where t.id = $1`,
          [id, parentId],
        );
        rows = await tx.query(`update ${table} as t set ${m.column} = $2, position = $3::int where t.id = $1 returning ${recordJson('t')} as record`, [
          id,
          parentId,
          args.position ?? null,
        ]);
      } catch (err) {
        throw explainDbError(err, { record: m.parent, id: parentId });
      }
      const record = rows[0]?.record ?? (await missing(tx, m.name, id));
      return { structured: record, summary: `moved ${m.name} ${record.id} to ${m.parent} ${parentId} at position ${record.position}` };
    },
  });
}

/** move_unit, move_lesson, move_activity. */
export const moveTools: AnyTool[] = MOVES.map(moveTool);
