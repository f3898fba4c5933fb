/**
 * Content as MCP resources (issue #16), read as the caller under RLS like the tools.
 *
 * URI scheme `svc:` (this service's own; not fetchable over HTTP):
 * - `svc://programs/{id}` — a program's outline: the program record, counts, and its units →
 *   lessons → activities with id, title, position (and kind), as get_program answers it by
 *   default (`application/json`). `resources/list` lists the programs the caller can read — their
 *   tenants' and the catalog's — in list_programs' order and pages (`nextCursor`).
 * - `svc://activities/{id}` — one activity in full: kind, spec, rubric, pass threshold
 *   (`application/json`). Not listed (a program's outline gives the ids).
 * A URI that names nothing the caller can read is JSON-RPC -32002 "Resource not found"; a
 * malformed cursor is -32602. A program whose outline exceeds the answer bound (reads.ts) is
 * read shallow, as get_program answers it (its units only, each with counts, and a note); one too
 * large even so (thousands of units) is -32602 with get_program's refusal as the message.
 */
import { ResourceTemplate, type McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { ListResourcesRequestSchema, McpError, type ReadResourceResult } from '@modelcontextprotocol/sdk/types.js';
import { asUser } from '../db/index.ts';
import { UUID_RE } from '../lib/ids.ts';
import { NotFound, ToolFailure } from './errors.ts';
import { JSONRPC } from './jsonrpc.ts';
import { listPrograms } from './programs.ts';
import { getProgram } from './reads.ts';
import { findRecord } from './records.ts';
import type { ToolAnswer, ToolContext } from './tool.ts';
import type { Json } from './tree.ts';

const JSON_TYPE = 'application/json';
export const programUri = (id: string) => `svc://programs/${id}`;
export const activityUri = (id: string) => `svc://activities/${id}`;

const notFound = (uri: string) => new McpError(JSONRPC.RESOURCE_NOT_FOUND, `Resource not found: ${uri}`, { uri });

/** The variable `id` of a matched template, when it is a uuid. */
function idOf(uri: URL, variables: Record<string, string | string[]>): string {
  const id = variables.id;
  if (typeof id !== 'string' || !UUID_RE.test(id)) throw notFound(uri.href);
  return id;
}

/**
 * The outline of program `id` as the caller reads it (get_program's default answer: shallow when
 * the outline is too large), or undefined when the caller cannot read it. Throws an `McpError`
 * -32602 with get_program's refusal when even the shallow outline is too large.
 */
export async function readProgram(ctx: ToolContext, id: string): Promise<Json | undefined> {
  try {
    return (await asUser(ctx.deps.db, ctx.session.claims, (tx) => getProgram.run({ id, depth: 'outline' }, tx, ctx))).structured;
  } catch (err) {
    if (err instanceof NotFound) return undefined;
    throw err instanceof ToolFailure ? new McpError(JSONRPC.INVALID_PARAMS, err.message) : err;
  }
}

/** Activity `id` in full as the caller reads it, or undefined. */
export const readActivity = (ctx: ToolContext, id: string): Promise<Json | undefined> =>
  asUser(ctx.deps.db, ctx.session.claims, (tx) => findRecord(tx, 'activity', id));

const jsonContents = (uri: string, value: unknown): ReadResourceResult => ({
  contents: [{ uri, mimeType: JSON_TYPE, text: JSON.stringify(value) }],
});

/** Register the program and activity resources on the request's server. */
export function registerResources(server: McpServer, ctx: ToolContext): void {
  server.registerResource(
    'program',
    new ResourceTemplate('svc://programs/{id}', { list: undefined }),
    {
      title: 'Program outline',
      description: 'A program with the outline of its units, lessons and activities (id, title, position, kind), as get_program answers by default',
      mimeType: JSON_TYPE,
    },
    async (uri, variables) => {
      const program = await readProgram(ctx, idOf(uri, variables));
      if (!program) throw notFound(uri.href);
      return jsonContents(uri.href, program);
    },
  );
  server.registerResource(
    'activity',
    new ResourceTemplate('svc://activities/{id}', { list: undefined }),
    { title: 'Activity', description: 'One activity in full: kind, spec, rubric and pass threshold', mimeType: JSON_TYPE },
    async (uri, variables) => {
      const activity = await readActivity(ctx, idOf(uri, variables));
      if (!activity) throw notFound(uri.href);
      return jsonContents(uri.href, activity);
    },
  );
  // resources/list: the programs, in list_programs' pages (the SDK's own handler has no cursor);
  // registered after the templates, whose registration installs the SDK's handler
  server.server.setRequestHandler(ListResourcesRequestSchema, async (request) => {
    const cursor = request.params?.cursor;
    let page: ToolAnswer;
    try {
      page = await asUser(ctx.deps.db, ctx.session.claims, (tx) => listPrograms.run({ cursor }, tx, ctx));
    } catch (err) {
      throw err instanceof ToolFailure ? new McpError(JSONRPC.INVALID_PARAMS, err.message) : err;
    }
    const { programs, next_cursor } = page.structured as { programs: { id: string; title: string; tenant: string | null }[]; next_cursor: string | null };
    return {
      resources: programs.map((p) => ({
        uri: programUri(p.id),
        name: p.title,
        title: p.title,
        description: `Outline of program "${p.title}" (${p.tenant === null ? 'service catalog' : `tenant ${p.tenant}`})`,
        mimeType: JSON_TYPE,
      })),
      ...(next_cursor ? { nextCursor: next_cursor } : {}),
    };
  });
}
