/**
 * What an authoring tool is, and how one call runs.
 *
 * A tool is a name, a description, a strict zod input object, a zod output object, MCP
 * annotations and `run(args, tx, ctx)`. `invoke` runs `run` in ONE transaction as the caller
 * (`asUser`: the verified JWT claims and the `authenticated` role, so the RLS policies decide)
 * and turns its answer into a tool result: `structuredContent` is the record(s), the text is a
 * one-line summary followed by the same JSON (for clients that read only `content`).
 * A thrown `ToolFailure` or a database error becomes an `isError` result (see errors.ts) and
 * the transaction rolls back, so nothing half-written stays. Arguments that fail the tool's input
 * schema are an `isError` result naming the field (SEP-1303 of the 2025-11-25 spec: the model
 * can read it and correct itself); an unknown tool is a JSON-RPC -32602 protocol error.
 */
import type { FastifyBaseLogger } from 'fastify';
import { z } from 'zod';
import type { CallToolResult, ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import { asUser, type Queryable } from '../db/index.ts';
import { rerunOnConflict } from '../db/rerun.ts';
import type { Deps } from '../deps.ts';
import type { VerifiedSession } from '../identity/index.ts';
import type { JudgeServices } from '../embed/index.ts';
import { failureResult, ProtocolError } from './errors.ts';
import { JSONRPC } from './jsonrpc.ts';

/**
 * Tells the client how far a long call has got (`notifications/progress`): `done` of `total`
 * steps, and what was just done. Present only when the client sent a `progressToken`.
 */
export type Progress = (done: number, total: number, message: string) => Promise<void>;

/** Who is calling and with what: built once per HTTP request (`progress`: once per call). */
export interface ToolContext {
  deps: Deps;
  session: VerifiedSession;
  log: FastifyBaseLogger;
  progress?: Progress;
  /** The judge's grader and queue (calibration tools enqueue runs on it); absent in a bare authoring plugin. */
  judge?: JudgeServices;
}

/** A tool's answer: the structured record(s) and a one-line summary for humans. */
export interface ToolAnswer {
  structured: Record<string, unknown>;
  summary: string;
  /**
   * Work done as the service after the caller's transaction committed (enqueue a calibration run
   * and wait for it, release held submissions); its answer, if any, replaces this one. A failure
   * there is the call's failure, but what the transaction wrote stays.
   */
  afterCommit?: (() => Promise<ToolAnswer>) | (() => Promise<void>);
}

export interface Tool<I extends z.ZodObject = z.ZodObject> {
  name: string;
  title: string;
  description: string;
  input: I;
  output: z.ZodObject;
  annotations: ToolAnnotations;
  run: (args: z.output<I>, tx: Queryable, ctx: ToolContext) => Promise<ToolAnswer>;
}

/** A tool of any input type (for registries). */
export type AnyTool = Tool<z.ZodObject>;

/** Declare a tool (only for type inference of `run`'s arguments). */
export const defineTool = <I extends z.ZodObject>(tool: Tool<I>): Tool<I> => tool;

// Annotation presets (MCP ToolAnnotations). All tools act on this service's database only.
export const READ: ToolAnnotations = { readOnlyHint: true, openWorldHint: false };
export const CREATE: ToolAnnotations = { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false };
/** Updates overwrite what was there (a graded activity's spec and rubric): destructive. */
export const UPDATE: ToolAnnotations = { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false };
export const DELETE: ToolAnnotations = { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false };

/**
 * Run one validated call of `tool` as the caller and build its result. A transaction PostgreSQL
 * aborted as a deadlock victim or for serialization runs again (`rerunOnConflict`,
 * src/db/rerun.ts); any other failure answers at once.
 */
export async function invoke(tool: AnyTool, ctx: ToolContext, args: Record<string, unknown>): Promise<CallToolResult> {
  let answer: ToolAnswer;
  try {
    answer = await rerunOnConflict(() => asUser(ctx.deps.db, ctx.session.claims, (tx) => tool.run(args, tx, ctx)));
    if (answer.afterCommit) answer = (await answer.afterCommit()) ?? answer;
  } catch (err) {
    return failureResult(err, ctx.log, tool.name);
  }
  const checked = tool.output.safeParse(answer.structured);
  if (!checked.success) {
    ctx.log.error({ tool: tool.name, issues: checked.error.issues }, 'authoring tool output does not match its schema');
    throw new ProtocolError(JSONRPC.INTERNAL_ERROR, `internal error: tool ${tool.name} produced an invalid result`);
  }
  return toolResult(answer);
}

/** The result of a successful call: the summary and the JSON as text, and the JSON as `structuredContent`. */
export function toolResult(answer: ToolAnswer): CallToolResult {
  return {
    content: [{ type: 'text', text: `${answer.summary}\n${JSON.stringify(answer.structured)}` }],
    structuredContent: answer.structured,
  };
}

/** Characters of the result `answer` becomes, as JSON (what a client receives and hands to a model). */
export const answerSize = (answer: ToolAnswer): number => JSON.stringify(toolResult(answer)).length;

/**
 * Validate the arguments of a `tools/call` and invoke the tool. An unknown tool is a protocol
 * error (JSON-RPC -32602); arguments that fail the (strict) input schema are an `isError` result
 * whose text names each field and what is wrong with it. Either way nothing runs.
 */
export async function callTool(
  tools: ReadonlyMap<string, AnyTool>,
  ctx: ToolContext,
  params: { name: string; arguments?: Record<string, unknown> },
): Promise<CallToolResult> {
  const tool = tools.get(params.name);
  if (!tool) throw new ProtocolError(JSONRPC.INVALID_PARAMS, `Tool ${params.name} not found`);
  const parsed = tool.input.safeParse(params.arguments ?? {});
  if (!parsed.success) {
    return { isError: true, content: [{ type: 'text', text: `Invalid arguments for tool ${tool.name}: ${z.prettifyError(parsed.error)}` }] };
  }
  return invoke(tool, ctx, parsed.data);
}
