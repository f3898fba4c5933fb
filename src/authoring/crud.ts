/**
 * The update_X and delete_X tools, built the same way for the four record types.
 *
 * `update_X {id, …fields}` changes only the fields given (null clears a nullable text field);
 * `delete_X {id}` deletes the record and everything under it, or refuses (nothing deleted) when
 * an activity that would go has learner results: activity_results → activities is ON DELETE
 * RESTRICT (migration 0001), so no delete path can lose learners' work. Both answer with the
 * record (after the update / as it was before the delete) as `structuredContent`. Both are
 * annotated destructive: an update overwrites what it changes (a graded activity's spec and rubric).
 */
import { z } from 'zod';
import { article } from './errors.ts';
import { deleteRecord, updateRecord, uuid, type RecordName } from './records.ts';
import { defineTool, DELETE, UPDATE, type AnyTool } from './tool.ts';

const CHILDREN: Record<RecordName, string> = {
  program: 'its units, lessons and activities',
  unit: 'its lessons and activities',
  lesson: 'its activities',
  activity: 'nothing else',
};

/** `update_<name>`: `fields` are the optional fields a caller may change. */
export function updateTool(name: RecordName, output: z.ZodObject, fields: z.ZodRawShape): AnyTool {
  return defineTool({
    name: `update_${name}`,
    title: `Update ${article(name)} ${name}`,
    description:
      `Change fields of one ${name}; only the fields you give are changed (at least one), and what they held is overwritten. ` +
      `Needs the author role in the ${name}'s tenant. Returns the updated ${name}.`,
    input: z.strictObject({ id: uuid(`Id of the ${name} to change`), ...fields }),
    output,
    annotations: UPDATE,
    run: async ({ id, ...changes }, tx) => {
      const record = await updateRecord(tx, name, id as string, changes);
      return { structured: record, summary: `updated ${name} ${record.id}` };
    },
  });
}

/** `delete_<name>`. */
export function deleteTool(name: RecordName, output: z.ZodObject): AnyTool {
  return defineTool({
    name: `delete_${name}`,
    title: `Delete ${article(name)} ${name}`,
    description:
      `Delete one ${name} and ${CHILDREN[name]}${name === 'program' ? '' : `; the ${name === 'activity' ? 'activities' : `${name}s`} after it move up one position`}. ` +
      'Refused, with nothing deleted, when learners have results on an activity that would go (their work stays resolvable). ' +
      `Needs the author role in the ${name}'s tenant. Returns the deleted ${name}.`,
    input: z.strictObject({ id: uuid(`Id of the ${name} to delete`) }),
    output,
    annotations: DELETE,
    run: async ({ id }, tx) => {
      const record = await deleteRecord(tx, name, id);
      return { structured: record, summary: `deleted ${name} ${record.id}` };
    },
  });
}
