/**
 * Opaque cursors of the authoring list tools (keyset pagination).
 *
 * A cursor (src/lib/cursor.ts, unsigned) is base64url JSON of the sort key of the last row of a page — for list_programs
 * `[created_at, id]` (created_at as PostgreSQL's text, microseconds kept), for list_tenants
 * `[slug]`. It is not signed: it only says where to resume, and every row read after it still
 * goes through the caller's RLS. A cursor that does not decode to the tool's key shape is an
 * invalid argument (an `isError` result naming it), never a database error.
 */
import { z } from 'zod';
import { keysetCodec, keysetPage } from '../lib/cursor.ts';
import { invalidArguments } from './errors.ts';

const codec = keysetCodec();

/**
 * Decode a cursor of `tool` whose key parts must match `shape` (one pattern per part).
 * Throws a `ToolFailure` (an `isError` result) when it does not.
 */
export function decodeCursor(tool: string, cursor: string, shape: readonly RegExp[]): string[] {
  const parts = codec.decode(cursor);
  if (parts?.length === shape.length && parts.every((part, i) => shape[i]!.test(part))) return parts;
  throw invalidArguments(`Invalid arguments for tool ${tool}: malformed cursor`);
}

export const DEFAULT_LIMIT = 50;
export const MAX_LIMIT = 200;

/**
 * The input fields of a list tool's pages: `cursor` (the previous page's `next_cursor`) and
 * `limit` (rows per page, 1 to `maxLimit`; the tool applies `defaultLimit` when it is omitted).
 */
export const pageInput = (defaultLimit = DEFAULT_LIMIT, maxLimit = MAX_LIMIT) => ({
  cursor: z.string().max(500).describe('`next_cursor` from the previous page; omit for the first page').optional(),
  limit: z.number().int().min(1).max(maxLimit).describe(`Page size, 1–${maxLimit} (default ${defaultLimit})`).optional(),
});

/** The output field a list tool answers next to its page of rows. */
export const NEXT_CURSOR = { next_cursor: z.string().nullable().describe('Cursor of the next page; null on the last page') };

/** Split `limit + 1` fetched rows into the page and the cursor of the next one (null: last page). */
export function page<T>(rows: T[], limit: number, keyOf: (row: T) => string[]): { items: T[]; next_cursor: string | null } {
  return keysetPage(rows, limit, (last) => codec.encode(keyOf(last)));
}
