/**
 * Failures of the authoring domain, and how a failed tool call is told to the client.
 *
 * A domain failure (not allowed, not found, has learner results) is a tool result with
 * `isError: true` and a short text; the transaction of the call has rolled back. So is an
 * argument only the tool can judge (a malformed cursor). Protocol errors (`ProtocolError`,
 * `McpError`: an unknown tool) pass through and reach the client as JSON-RPC errors. Anything else is logged and answered "internal error":
 * SQL text and stack traces never leave the server.
 *
 * SQLSTATEs mapped here: 42501 (RLS `with check` / missing privilege) → not allowed;
 * P0002 (the parent-not-found trigger; its HINT names what the id really is, if the caller can
 * see it) → "<record> <id> not found"; 23001/23503 (a learner's activity_results row restricts the
 * delete; PostgreSQL reports either) → "has learner results"; SVP01 (migration 0030: a position
 * outside 1..n), SVP02 / SVP03 (migration 0110: a move to another tenant, or to another program
 * of content with learner results) → the trigger's own message, which names the allowed range or
 * the reason; 23503 on a parent's foreign key (the parent was deleted while an insert or a move
 * waited for the order lock) → "<parent> <id> not found"; 23505 on an external
 * id index → "external_id already used"; the bad-input states of db/errors.ts (a value breaks a
 * column rule the input schema did not catch, a NUL character, an impossible date in a cursor)
 * → invalid value. An unavailable database (db/errors.ts `DbUnavailableError`: the connection
 * dropped, none could be had, the statement timed out) → "Service unavailable …, retry".
 */
import type { FastifyBaseLogger } from 'fastify';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { isBadInput, isDbUnavailable, sqlState } from '../db/errors.ts';

export const NOT_ALLOWED = 'not allowed: you are not an author of that tenant';
/** The text of a call (or request) that met an unavailable database (issue #11). */
export const UNAVAILABLE_MESSAGE = 'Service unavailable: the database cannot be reached right now; nothing was changed, retry in a few seconds';

/**
 * A JSON-RPC protocol error (the SDK answers a thrown error that has a numeric `code` with
 * `{code, message}`). Unlike the SDK's `McpError`, the message is not prefixed "MCP error …",
 * which the client adds once more on its side.
 */
export class ProtocolError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/** A failure of the domain, reported to the caller as an `isError` result with this message. */
export class ToolFailure extends Error {}

/**
 * Arguments the input schema could not catch (a malformed cursor, nothing to update): an
 * `isError` result like every other invalid argument (tool.ts), so the model can correct itself.
 */
export const invalidArguments = (message: string) => new ToolFailure(message);

/** A failure that says the record (or tenant) named does not exist for the caller. */
export class NotFound extends ToolFailure {}

/**
 * "<record> <id> not found"; `actually` is the kind of record the id belongs to when the caller
 * can see it (svc.record_kind, under RLS), so a program id given as a lesson id says so.
 */
export const notFound = (record: string, id: string, actually?: string | null) =>
  new NotFound(`${record} ${id} not found${actually && actually !== record ? ` (that id is ${article(actually)} ${actually})` : ''}`);
/** "a" or "an" before a record name ("an activity"). */
export const article = (record: string) => (record === 'activity' ? 'an' : 'a');
/** The plural of a record name ("activities"). */
export const plural = (record: string) => (record === 'activity' ? 'activities' : `${record}s`);
export const tenantNotFound = (slug: string) => new NotFound(`tenant not found: ${slug}`);

/** What the subject of a statement was, so a database error can name it. */
export interface Subject {
  record: string;
  id: string;
}

/**
 * Turn a database error into a `ToolFailure` naming `subject` (the parent for inserts, the
 * record itself for deletes); returns the error unchanged when it is not one we explain.
 */
export function explainDbError(err: unknown, subject?: Subject): unknown {
  if (isBadInput(err)) {
    return new ToolFailure('invalid value: an argument breaks a rule of the record (length, range, kind, or a character such as NUL that cannot be stored)');
  }
  switch (sqlState(err)) {
    case '42501':
      return new ToolFailure(NOT_ALLOWED);
    case 'P0002':
      return subject ? notFound(subject.record, subject.id, dbField(err, 'hint')) : new ToolFailure('not found');
    case 'SVP01':
    case 'SVP02':
    case 'SVP03':
      // raised by the order triggers of migrations 0030 / 0110 with a message written for the caller
      return new ToolFailure((err as Error).message);
    case '23505': {
      const table = /^(programs|units|lessons|activities)_external_id_key$/.exec(constraintOf(err))?.[1];
      if (!table) return new ToolFailure('conflicting concurrent change: nothing was changed, try again');
      return new ToolFailure(
        table === 'programs'
          ? 'external_id already used: another program of this tenant has it'
          : `external_id already used: another ${EXTERNAL_ID_SCOPE[table]} of this program has it`,
      );
    }
    case '23503':
      // A parent deleted while this insert or move waited for the program's order lock; any
      // other foreign key is a learner's result restricting a delete.
      if (PARENT_KEYS.has(constraintOf(err))) return subject ? notFound(subject.record, subject.id) : new ToolFailure('not found');
      return hasLearnerResults(subject);
    case '23001':
      return hasLearnerResults(subject);
    default:
      return err;
  }
}

/** "<record> <id> cannot be deleted: … has learner results". */
const hasLearnerResults = (subject?: Subject) =>
  new ToolFailure(
    subject
      ? `${subject.record} ${subject.id} cannot be deleted: ${subject.record === 'activity' ? 'it has' : 'an activity in it has'} learner results`
      : 'cannot be deleted: it has learner results',
  );

/** The foreign keys from a content record to its parent (PostgreSQL's default names, migration 0001). */
const PARENT_KEYS = new Set(['units_program_id_fkey', 'lessons_unit_id_fkey', 'activities_lesson_id_fkey']);

const EXTERNAL_ID_SCOPE: Record<string, string> = { units: 'unit', lessons: 'lesson', activities: 'activity' };

/** A text field of a PGlite or node-postgres database error (`hint`, …), if present. */
function dbField(err: unknown, field: 'hint'): string | undefined {
  const value = (err as Record<string, unknown> | null)?.[field];
  return typeof value === 'string' && value ? value : undefined;
}

/** The constraint a database error names (`constraint` on PGlite and node-postgres errors alike). */
function constraintOf(err: unknown): string {
  return String((err as { constraint?: unknown } | null)?.constraint ?? '');
}

/** The tool result of a failed call; rethrows protocol errors. */
export function failureResult(err: unknown, log: FastifyBaseLogger, tool: string): CallToolResult {
  if (err instanceof McpError || err instanceof ProtocolError) throw err;
  if (isDbUnavailable(err)) {
    log.warn({ tool, reason: String(err.cause) }, 'authoring tool: database unavailable');
    return { isError: true, content: [{ type: 'text', text: UNAVAILABLE_MESSAGE }] };
  }
  const failure = explainDbError(err);
  if (failure instanceof ToolFailure) {
    return { isError: true, content: [{ type: 'text', text: failure.message }] };
  }
  log.error({ err, tool }, 'authoring tool failed');
  return { isError: true, content: [{ type: 'text', text: 'internal error: nothing was changed' }] };
}
