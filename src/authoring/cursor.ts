/**
 * Opaque cursors of the authoring list tools (keyset pagination).
 *
 * A cursor is base64url JSON of the sort key of the last row of a page — for list_programs
 * `[created_at, id]` (created_at as PostgreSQL's text, microseconds kept), for list_tenants
 * `[slug]`. It is not signed: it only says where to resume, and every row read after it still
 * goes through the caller's RLS. A cursor that does not decode to the tool's key shape is an
 * invalid argument (an `isError` result naming it), never a database error.
 */
import { invalidArguments } from './errors.ts';

export const TIMESTAMP_RE = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d{1,6})?([+-]\d{2}(:\d{2})?|Z)$/;
export const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const SLUG_RE = /^[a-z0-9][a-z0-9-]{0,62}$/;

/** The cursor that resumes after a row whose sort key is `key`. */
export function encodeCursor(key: readonly string[]): string {
  return Buffer.from(JSON.stringify(key)).toString('base64url');
}

/**
 * Decode a cursor of `tool` whose key parts must match `shape` (one pattern per part).
 * Throws a `ToolFailure` (an `isError` result) when it does not.
 */
export function decodeCursor(tool: string, cursor: string, shape: readonly RegExp[]): string[] {
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (
      Array.isArray(value) &&
      value.length === shape.length &&
      value.every((part, i) => typeof part === 'string' && shape[i]!.test(part))
    ) {
      return value as string[];
    }
  } catch {
    // fall through
  }
  throw invalidArguments(`Invalid arguments for tool ${tool}: malformed cursor`);
}

export const DEFAULT_LIMIT = 50;
export const MAX_LIMIT = 200;

/** Split `limit + 1` fetched rows into the page and the cursor of the next one (null: last page). */
export function page<T>(rows: T[], limit: number, keyOf: (row: T) => string[]): { items: T[]; next_cursor: string | null } {
  const items = rows.slice(0, limit);
  const last = items[items.length - 1];
  return { items, next_cursor: rows.length > limit && last ? encodeCursor(keyOf(last)) : null };
}
