/**
 * instantiate_program: deep-copy a program you can read (a catalog program, tenant_id null,
 * or one of your tenants') into a tenant you are an author of, in one transaction.
 *
 * The source tree is read as the caller (`programTree`: RLS decides what can be copied — another
 * tenant's program reads as not found), then written by the same code as import_program
 * (`writeChildren`): the program row with `source_program_id` = the source, then one statement
 * per level. The copy keeps the source's order with positions 1..n, and the child records' external
 * ids (they are unique per program); the program's own external_id is not copied (it is unique
 * per tenant). The triggers fill tenant_id / program_id from the new parents, and RLS checks
 * every row written: a learner's attempt fails on the first insert, and nothing stays.
 */
import { z } from 'zod';
import { explainDbError } from './errors.ts';
import { insertRecord, ProgramRecord, tenantIdBySlug, tenantSlug, title, uuid } from './records.ts';
import { CREATE, defineTool, type AnyTool } from './tool.ts';
import { programTree, treeCountsSchema, writeChildren, type Json, type TreeCounts, type UnitInput } from './tree.ts';

/** The writable content of a tree read by `programTree`. */
function contentOf(tree: Json): UnitInput[] {
  return (tree.units as UnitInput[]).map((u) => ({
    external_id: u.external_id,
    title: u.title,
    description: u.description,
    lessons: u.lessons.map((l) => ({
      external_id: l.external_id,
      title: l.title,
      body: l.body,
      activities: l.activities.map((a) => ({
        external_id: a.external_id,
        title: a.title,
        kind: a.kind,
        spec: a.spec,
        rubric: a.rubric,
        pass_threshold: a.pass_threshold,
      })),
    })),
  }));
}

const instantiateProgram = defineTool({
  name: 'instantiate_program',
  title: 'Instantiate a program',
  description:
    'Copy a program (usually one of the service catalog, see list_programs) with all its units, lessons and activities ' +
    'into a tenant you are an author of. The copy records the source in `source_program_id`. All or nothing.',
  input: z.strictObject({
    program_id: uuid('Id of the source program: a catalog program or any program you can read'),
    tenant: tenantSlug('Slug of the tenant that will own the copy'),
    title: title("Title of the copy (default: the source's title)").optional(),
  }),
  output: ProgramRecord.extend({ counts: treeCountsSchema('copied', 'How much was copied') }),
  annotations: CREATE,
  run: async ({ program_id, tenant, title }, tx) => {
    // 1. the source, as the caller sees it; 2. the target tenant
    const source = await programTree(tx, program_id);
    const tenantId = await tenantIdBySlug(tx, tenant);
    // 3. the program, then each level (RLS checks every row)
    const program = await insertRecord(tx, 'program', {
      tenant_id: tenantId,
      title: title ?? source.title,
      description: source.description,
      source_program_id: program_id,
    });
    let counts: TreeCounts;
    try {
      counts = await writeChildren(tx, program.id as string, contentOf(source));
    } catch (err) {
      throw explainDbError(err);
    }
    return {
      structured: { ...program, counts },
      summary: `instantiated program ${program.id} in ${tenant} from ${program_id}: ${counts.units} unit(s), ${counts.lessons} lesson(s), ${counts.activities} activities`,
    };
  },
});

export const instantiateTools: AnyTool[] = [instantiateProgram];
