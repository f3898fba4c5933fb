/**
 * Archiving: `archive_X {id}` and `unarchive_X {id}` for programs, units, lessons and activities
 * (issue #16).
 *
 * An archived record — and everything under it — is hidden from learners (the member-read
 * policies of migration 0110: the embed reads, the player, a learner's MCP reads) and refuses new
 * submissions (the judge answers 409 `archived`), while authors still read and edit it here and
 * the Results API still serves it with its learners' results, which are kept. The database keeps
 * the state: `archived_at` is the record's own (set here), `archived` whether it or a record
 * above it is archived (kept by the triggers of migration 0110). So unarchiving a unit of an
 * archived program leaves it hidden until the program is unarchived too; the answer says so.
 *
 * Archiving an archived record keeps its first `archived_at`; unarchiving one that is not
 * archived changes nothing: both are idempotent. The program's order lock is taken first (as
 * updates and deletes do, records.ts), so a record created or moved under a parent being
 * archived is archived with it.
 */
import { z } from 'zod';
import type { ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import type { Queryable } from '../db/index.ts';
import { explainDbError } from './errors.ts';
import { lockOrderOf, missing, RECORDS, recordJson, TABLES, UNDER, uuid, type RecordName } from './records.ts';
import { defineTool, type AnyTool } from './tool.ts';

/**
 * Annotations of archive / unarchive: a write (not read-only) that destroys nothing — no content,
 * result or order is lost, and the other tool undoes it exactly — and idempotent.
 */
export const REVERSIBLE: ToolAnnotations = { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false };

/** Set (`archive`) or clear the record's own `archived_at`; the record after the change. */
async function setArchived(tx: Queryable, name: RecordName, id: string, archive: boolean): Promise<Record<string, unknown>> {
  let rows: { record: Record<string, unknown> }[];
  try {
    if (name === 'program') await tx.query('select svc.lock_program_order(id) from programs where id = $1', [id]);
    else await lockOrderOf(tx, name, id);
    rows = await tx.query(
      `update ${TABLES[name].table} as t set archived_at = ${archive ? 'coalesce(t.archived_at, now())' : 'null'}
        where t.id = $1 returning ${recordJson('t')} as record`,
      [id],
    );
  } catch (err) {
    throw explainDbError(err, { record: name, id });
  }
  return rows[0]?.record ?? missing(tx, name, id);
}

function archiveTool(name: RecordName): AnyTool {
  return defineTool({
    name: `archive_${name}`,
    title: `Archive ${name === 'activity' ? 'an' : 'a'} ${name}`,
    description:
      `Retire one ${name} and ${UNDER[name]} without deleting anything: learners no longer see it and cannot submit work to it; ` +
      "authors still read and edit it, and the Results API keeps serving it with the learners' results. " +
      `Use this for content that has learner results (delete_${name} refuses it). Undo with unarchive_${name}; archiving again changes nothing. ` +
      `Needs the author role in the ${name}'s tenant. Returns the ${name} (archived_at set, archived true).`,
    input: z.strictObject({ id: uuid(`Id of the ${name} to archive`) }),
    output: RECORDS[name],
    annotations: REVERSIBLE,
    run: async ({ id }, tx) => {
      const record = await setArchived(tx, name, id, true);
      return { structured: record, summary: `archived ${name} ${record.id}` };
    },
  });
}

function unarchiveTool(name: RecordName): AnyTool {
  return defineTool({
    name: `unarchive_${name}`,
    title: `Unarchive ${name === 'activity' ? 'an' : 'a'} ${name}`,
    description:
      `Bring an archived ${name} back: learners see it again and may submit work, unless a record above it is still archived ` +
      `(then \`archived\` stays true until that one is unarchived too). Unarchiving a ${name} that is not archived changes nothing. ` +
      `Needs the author role in the ${name}'s tenant. Returns the ${name}.`,
    input: z.strictObject({ id: uuid(`Id of the ${name} to unarchive`) }),
    output: RECORDS[name],
    annotations: REVERSIBLE,
    run: async ({ id }, tx) => {
      const record = await setArchived(tx, name, id, false);
      const still = record.archived === true ? ' (still hidden from learners: a record above it is archived)' : '';
      return { structured: record, summary: `unarchived ${name} ${record.id}${still}` };
    },
  });
}

const NAMES: readonly RecordName[] = ['program', 'unit', 'lesson', 'activity'];

/** archive_program … archive_activity, then unarchive_program … unarchive_activity. */
export const lifecycleTools: AnyTool[] = [...NAMES.map(archiveTool), ...NAMES.map(unarchiveTool)];
