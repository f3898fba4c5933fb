/**
 * Unit tools: create_unit, update_unit, delete_unit. A unit takes its tenant from its program
 * (trigger of migration 0001); its position is kept contiguous by the triggers of migration 0030; a
 * program the caller cannot see reads as "program <id> not found".
 */
import { z } from 'zod';
import { deleteTool, updateTool } from './crud.ts';
import { clearableText, externalId, insertPosition, insertRecord, longText, movePosition, title, UnitRecord, uuid } from './records.ts';
import { CREATE, defineTool, type AnyTool } from './tool.ts';

const createUnit = defineTool({
  name: 'create_unit',
  title: 'Create a unit',
  description: 'Add a unit to a program (appended at the end, or inserted at `position`, moving the later ones down). Returns the unit with its id.',
  input: z.strictObject({
    program_id: uuid('Id of the program the unit belongs to'),
    title: title('Unit title'),
    description: longText('What the unit covers (markdown)').optional(),
    position: insertPosition('Position within the program').optional(),
    external_id: externalId('among the units of the program').optional(),
  }),
  output: UnitRecord,
  annotations: CREATE,
  run: async (args, tx) => {
    const record = await insertRecord(tx, 'unit', args, { record: 'program', id: args.program_id });
    return { structured: record, summary: `created unit ${record.id} at position ${record.position}` };
  },
});

export const unitTools: AnyTool[] = [
  createUnit,
  updateTool('unit', UnitRecord, {
    title: title('New title').optional(),
    description: clearableText('New description (markdown)').optional(),
    position: movePosition('New position within the program').optional(),
  }),
  deleteTool('unit', UnitRecord),
];
