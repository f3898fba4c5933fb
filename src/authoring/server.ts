/**
 * The MCP server of the authoring surface: one `McpServer` per HTTP request (stateless),
 * bound to the verified caller, with the 17 tools of DESIGN §6, import_program (issue #5: bulk
 * content injection), the bounded reads and search_content, archive_X / unarchive_X / move_X
 * (issue #16: content lifecycle), the judge calibration tools (calibration.ts, issue #21),
 * override_verdict / list_reviews / resolve_review (issue #21: overrides and the review queue,
 * reviews.ts), the program and activity resources (resources.ts) and two prompts (prompts.ts).
 *
 * Tools are registered with the SDK (so `tools/list` shows their JSON schemas and annotations);
 * `tools/call` is then dispatched by `callTool` (tool.ts) instead of the SDK's default handler,
 * because SDK 1.x answers an unknown tool with an `isError` result, and this surface keeps it a
 * JSON-RPC protocol error (-32602); and so that a call can report progress (progress.ts).
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { CallToolRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { SERVICE_NAME, VERSION } from '../version.ts';
import { calibrationTools } from './calibration.ts';
import { childTools } from './crud.ts';
import { importTools } from './import.ts';
import { instantiateTools } from './instantiate.ts';
import { lifecycleTools } from './lifecycle.ts';
import { moveTools } from './moves.ts';
import { programTools } from './programs.ts';
import { progressOf } from './progress.ts';
import { registerPrompts } from './prompts.ts';
import { registerResources } from './resources.ts';
import { readTools } from './reads.ts';
import { reviewTools } from './reviews.ts';
import { searchTools } from './search.ts';
import { callTool, invoke, type AnyTool, type ToolContext } from './tool.ts';
import { whoamiTools } from './whoami.ts';
import { observeToolCall } from '../telemetry/instrument.ts';

/** Every tool of the surface, in the order `tools/list` shows them. */
export const TOOLS: readonly AnyTool[] = [
  ...whoamiTools,
  ...programTools,
  ...readTools,
  ...searchTools,
  ...childTools,
  ...instantiateTools,
  ...importTools,
  ...lifecycleTools,
  ...moveTools,
  ...calibrationTools,
  ...reviewTools,
];

const INSTRUCTIONS =
  'Authoring tools for learning content: programs → units → lessons → activities. ' +
  'Start with whoami or list_tenants to see the tenants you may write to (role author). ' +
  'Copy a catalog program with instantiate_program, import a whole program in one call with import_program, ' +
  'or build one with create_program, create_unit, create_lesson and create_activity. ' +
  'Read a program with get_program (an outline by default), then one part at a time with get_unit, get_lesson and get_activity; ' +
  'find records by text with search_content. ' +
  'Retire content with archive_* (hidden from learners, results kept; unarchive_* brings it back) and re-parent it with move_unit, move_lesson and move_activity. ' +
  'Positions are 1-based and contiguous: creating at a position, or moving a record there, shifts its siblings.';

/**
 * One JSON-schema validator for every request: the SDK would otherwise build a new Ajv instance
 * per McpServer (about a third of a millisecond of CPU per request, measured in bench/authoring.ts).
 * It holds only compiled-schema caches, no request state.
 */
const jsonSchemaValidator = new AjvJsonSchemaValidator();

/** A fresh server for one request of the caller in `ctx`. */
export function buildMcpServer(ctx: ToolContext): McpServer {
  const server = new McpServer({ name: SERVICE_NAME, version: VERSION }, { capabilities: { tools: {} }, instructions: INSTRUCTIONS, jsonSchemaValidator });
  const byName = new Map<string, AnyTool>();
  for (const tool of TOOLS) {
    server.registerTool(
      tool.name,
      { title: tool.title, description: tool.description, inputSchema: tool.input, outputSchema: tool.output, annotations: tool.annotations },
      (args: Record<string, unknown>) => invoke(tool, ctx, args),
    );
    byName.set(tool.name, tool);
  }
  registerResources(server, ctx);
  registerPrompts(server, ctx);
  server.server.setRequestHandler(CallToolRequestSchema, (request, extra) =>
    observeToolCall(byName.has(request.params.name) ? request.params.name : 'unknown', () =>
      callTool(byName, { ...ctx, progress: progressOf(request.params._meta?.progressToken, extra.sendNotification) }, request.params),
    ),
  );
  return server;
}
