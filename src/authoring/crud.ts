/**
 * The create_X, update_X and delete_X tools, built the same way for the record types from their
 * tables in records.ts: `childTools` = create_unit, update_unit, delete_unit, create_lesson,
 * update_lesson, delete_lesson, create_activity, update_activity, delete_activity; programs.ts uses
 * `updateTool('program')` and `deleteTool('program')` (create_program, which takes a tenant
 * instead of a parent, is its own).
 *
 * `create_X {<parent>_id, title, …fields, position?, external_id?}` adds a unit to a program, a
 * lesson to a unit or an activity to a lesson (an activity says what the learner hands in —
 * `kind`, `spec` — and how it is graded — `rubric`, `pass_threshold`). The record takes its
 * tenant (and program) from its parent (trigger of migration 0001); a parent the caller cannot see
 * reads as "<parent> <id> not found". Positions are kept contiguous by the triggers of migration 0030.
 * `update_X {id, …fields}` changes only the fields given (null clears a nullable text field);
 * `delete_X {id}` deletes the record and everything under it, or refuses (nothing deleted) when
 * an activity that would go has learner results: activity_results → activities is ON DELETE
 * RESTRICT (migration 0001), so no delete path can lose learners' work. All three answer with the
 * record (as created / after the update / as it was before the delete) as `structuredContent`.
 * Updates and deletes are annotated destructive: an update overwrites what it changes (a graded
 * activity's spec and rubric).
 */
import { z } from 'zod';
import { article, plural } from './errors.ts';
import {
  CHANGEABLE_FIELDS,
  deleteRecord,
  externalId,
  insertPosition,
  insertRecord,
  movePosition,
  NEW_FIELDS,
  PARENT,
  RECORDS,
  title,
  UNDER,
  updateRecord,
  uuid,
  type ChildName,
  type RecordName,
} from './records.ts';
import { CREATE, defineTool, DELETE, UPDATE, type AnyTool } from './tool.ts';

/** The activity fields whose change moves its rubric version (migration 0060) and so stales its calibration report. */
const GRADED_FIELDS = ['kind', 'spec', 'rubric', 'pass_threshold'];

/** What create_X says a new record holds, where there is more to say than its fields. */
const HOLDS: Partial<Record<ChildName, string>> = { activity: ': what the learner must produce and the rubric it is graded with' };

/** `create_<name>` for a unit, lesson or activity: appended to its parent, or inserted at `position`. */
function createTool(name: ChildName): AnyTool {
  const parent = PARENT[name];
  const parentId = `${parent}_id`;
  return defineTool({
    name: `create_${name}`,
    title: `Create ${article(name)} ${name}`,
    description:
      `Add ${article(name)} ${name} to ${article(parent)} ${parent}${HOLDS[name] ?? ''} ` +
      `(appended at the end, or inserted at \`position\`, moving the later ones down). Returns the ${name} with its id.`,
    input: z.strictObject({
      [parentId]: uuid(`Id of the ${parent} the ${name} belongs to`),
      ...NEW_FIELDS[name],
      position: insertPosition(`Position within the ${parent}`).optional(),
      external_id: externalId(`among the ${plural(name)} of the program`).optional(),
    }),
    output: RECORDS[name],
    annotations: CREATE,
    run: async (args: Record<string, unknown>, tx) => {
      const record = await insertRecord(tx, name, args, { record: parent, id: args[parentId] as string });
      return { structured: record, summary: `created ${name} ${record.id} at position ${record.position}` };
    },
  });
}

/** `update_<name>`: the title, the record type's changeable fields and (below a program) the position. */
export function updateTool(name: RecordName): AnyTool {
  return defineTool({
    name: `update_${name}`,
    title: `Update ${article(name)} ${name}`,
    description:
      `Change fields of one ${name}; only the fields you give are changed (at least one), and what they held is overwritten. ` +
      `Needs the author role in the ${name}'s tenant. Returns the updated ${name}.`,
    input: z.strictObject({
      id: uuid(`Id of the ${name} to change`),
      title: title('New title').optional(),
      ...CHANGEABLE_FIELDS[name],
      ...(name === 'program' ? {} : { position: movePosition(`New position within the ${PARENT[name]}`).optional() }),
    }),
    output: RECORDS[name],
    annotations: UPDATE,
    run: async ({ id, ...changes }, tx, ctx) => {
      const record = await updateRecord(tx, name, id as string, changes);
      // An activity's new rubric version (a change of what is graded: kind, spec, rubric, pass
      // threshold — migration 0060's trigger) makes its calibration report stale: queue a new run
      // (src/embed/calibration/runs.ts). A title or position edit leaves the report standing.
      const judge = name === 'activity' && GRADED_FIELDS.some((f) => f in changes) ? ctx.judge : undefined;
      return {
        structured: record,
        summary: `updated ${name} ${record.id}`,
        ...(judge && { afterCommit: () => judge.catchUpCalibration({ activityId: id as string }) }),
      };
    },
  });
}

/** `delete_<name>`. */
export function deleteTool(name: RecordName): AnyTool {
  return defineTool({
    name: `delete_${name}`,
    title: `Delete ${article(name)} ${name}`,
    description:
      `Delete one ${name} and ${UNDER[name]}${name === 'program' ? '' : `; the ${plural(name)} after it move up one position`}. ` +
      'Refused, with nothing deleted, when learners have results on an activity that would go (their work stays resolvable). ' +
      `Needs the author role in the ${name}'s tenant. Returns the deleted ${name}.`,
    input: z.strictObject({ id: uuid(`Id of the ${name} to delete`) }),
    output: RECORDS[name],
    annotations: DELETE,
    run: async ({ id }, tx) => {
      const record = await deleteRecord(tx, name, id);
      return { structured: record, summary: `deleted ${name} ${record.id}` };
    },
  });
}

/** create_X, update_X and delete_X of units, then of lessons, then of activities. */
export const childTools: AnyTool[] = (['unit', 'lesson', 'activity'] as const).flatMap((name) => [createTool(name), updateTool(name), deleteTool(name)]);
