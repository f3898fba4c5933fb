/**
 * Spans and metrics around the service's own units of work (issue #15): an MCP tool call, a
 * grading job, a model call. Each wrapper runs the work in an active span (so its database spans
 * nest under it) and records the matching metrics of src/telemetry/metrics.ts.
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { modelCallDuration, modelCalls, toolCallDuration, toolCalls } from './metrics.ts';
import { withSpan } from './tracing.ts';

/**
 * One `tools/call` of `tool` (a registered name, or `unknown` for names the registry lacks — the
 * label stays bounded): outcome `ok`, `error` (an `isError` result) or `invalid` (a JSON-RPC error
 * thrown: unknown tool, bad arguments).
 */
export async function observeToolCall(tool: string, call: () => Promise<CallToolResult>): Promise<CallToolResult> {
  const stop = toolCallDuration.startTimer({ tool });
  try {
    const result = await withSpan(`tools/call ${tool}`, { 'mcp.method.name': 'tools/call', 'gen_ai.tool.name': tool }, call);
    toolCalls.inc({ tool, outcome: result.isError ? 'error' : 'ok' });
    return result;
  } catch (err) {
    toolCalls.inc({ tool, outcome: 'invalid' });
    throw err;
  } finally {
    stop();
  }
}

/** A model call's result as far as metrics need it: its ledger record (outcome, wall time in ms). */
interface ObservedCall {
  record: { outcome: string; durationMs: number };
}

/** One call to the grading model `model`: a span, `svc_model_calls_total` and its duration by outcome. */
export async function observeModelCall<T extends ObservedCall>(model: string, call: () => Promise<T>): Promise<T> {
  const result = await withSpan('model.call', { 'gen_ai.operation.name': 'chat', 'gen_ai.request.model': model }, async (span) => {
    const r = await call();
    span.setAttribute('svc.model_call.outcome', r.record.outcome);
    return r;
  });
  modelCalls.inc({ outcome: result.record.outcome });
  modelCallDuration.observe({ outcome: result.record.outcome }, result.record.durationMs / 1000);
  return result;
}

/** One run of a grading job (`job` is pg-boss's id): a span, the job's outcome kind as an attribute. */
export function observeGradingJob<T extends { kind: string }>(job: { id: string }, run: () => Promise<T>): Promise<T> {
  return withSpan('grading.job', { 'messaging.message.id': job.id, 'messaging.destination.name': 'embed-grading' }, async (span) => {
    const outcome = await run();
    span.setAttribute('svc.grading.outcome', outcome.kind);
    return outcome;
  });
}
