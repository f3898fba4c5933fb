/**
 * Lesson tools: create_lesson, update_lesson, delete_lesson. A lesson takes its tenant and program
 * from its unit (trigger of migration 0001); its position is kept contiguous by the triggers of
 * migration 0030; an invisible unit reads as not found.
 */
import { z } from 'zod';
import { deleteTool, updateTool } from './crud.ts';
import { clearableText, externalId, insertPosition, insertRecord, LessonRecord, longText, movePosition, title, uuid } from './records.ts';
import { CREATE, defineTool, type AnyTool } from './tool.ts';

const createLesson = defineTool({
  name: 'create_lesson',
  title: 'Create a lesson',
  description: 'Add a lesson to a unit (appended at the end, or inserted at `position`, moving the later ones down). Returns the lesson with its id.',
  input: z.strictObject({
    unit_id: uuid('Id of the unit the lesson belongs to'),
    title: title('Lesson title'),
    body: longText('Lesson text (markdown)').optional(),
    position: insertPosition('Position within the unit').optional(),
    external_id: externalId('among the lessons of the program').optional(),
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
    position: movePosition('New position within the unit').optional(),
  }),
  deleteTool('lesson', LessonRecord),
];
