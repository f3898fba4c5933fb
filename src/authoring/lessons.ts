/**
 * Lesson tools: create_lesson, update_lesson, delete_lesson. A lesson takes its tenant and
 * program from its unit (trigger of migration 0001); an invisible unit reads as not found.
 */
import { z } from 'zod';
import { deleteTool, updateTool } from './crud.ts';
import { clearableText, insertRecord, LessonRecord, longText, position, title, uuid } from './records.ts';
import { CREATE, defineTool, type AnyTool } from './tool.ts';

const createLesson = defineTool({
  name: 'create_lesson',
  title: 'Create a lesson',
  description: 'Add a lesson to a unit (appended at the end unless `position` is given). Returns the lesson with its id.',
  input: z.strictObject({
    unit_id: uuid('Id of the unit the lesson belongs to'),
    title: title('Lesson title'),
    body: longText('Lesson text (markdown)').optional(),
    position: position('Position within the unit').optional(),
  }),
  output: LessonRecord,
  annotations: CREATE,
  run: async (args, tx) => {
    const record = await insertRecord(tx, 'lesson', args, { record: 'unit', id: args.unit_id });
    return { structured: record, summary: `created lesson ${record.id} at position ${record.position}` };
  },
});

export const lessonTools: AnyTool[] = [
  createLesson,
  updateTool('lesson', LessonRecord, {
    title: title('New title').optional(),
    body: clearableText('New lesson text (markdown)').optional(),
    position: position('New position within the unit').optional(),
  }),
  deleteTool('lesson', LessonRecord),
];
