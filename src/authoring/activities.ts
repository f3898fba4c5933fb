/**
 * Activity tools: create_activity, update_activity, delete_activity. An activity says what the
 * learner hands in (`kind`, `spec`) and how it is graded (`rubric`, `pass_threshold`). It takes its
 * tenant and program from its lesson (trigger of migration 0001); its position is kept contiguous
 * by the triggers of migration 0030. Deleting an activity that learners have results on is refused
 * (foreign key `restrict` of activity_results).
 */
import { z } from 'zod';
import { deleteTool, updateTool } from './crud.ts';
import { ActivityRecord, externalId, insertPosition, insertRecord, kind, longText, movePosition, passThreshold, rubric, title, uuid } from './records.ts';
import { CREATE, defineTool, type AnyTool } from './tool.ts';

const DEFAULT_PASS_THRESHOLD = 70;

const createActivity = defineTool({
  name: 'create_activity',
  title: 'Create an activity',
  description:
    'Add an activity to a lesson: what the learner must produce and the rubric it is graded with ' +
    '(appended at the end, or inserted at `position`, moving the later ones down). Returns the activity with its id.',
  input: z.strictObject({
    lesson_id: uuid('Id of the lesson the activity belongs to'),
    title: title('Activity title'),
    kind,
    spec: longText('What the learner must produce (markdown)').min(1),
    rubric,
    pass_threshold: passThreshold.default(DEFAULT_PASS_THRESHOLD).describe(`Passing score, 0–100 (default ${DEFAULT_PASS_THRESHOLD})`),
    position: insertPosition('Position within the lesson').optional(),
    external_id: externalId('among the activities of the program').optional(),
  }),
  output: ActivityRecord,
  annotations: CREATE,
  run: async (args, tx) => {
    const record = await insertRecord(tx, 'activity', args, { record: 'lesson', id: args.lesson_id });
    return { structured: record, summary: `created activity ${record.id} at position ${record.position}` };
  },
});

export const activityTools: AnyTool[] = [
  createActivity,
  updateTool('activity', ActivityRecord, {
    title: title('New title').optional(),
    kind: kind.optional(),
    spec: longText('New spec (markdown)').min(1).optional(),
    rubric: rubric.optional(),
    pass_threshold: passThreshold.optional(),
    position: movePosition('New position within the lesson').optional(),
  }),
  deleteTool('activity', ActivityRecord),
];
