/**
 * Progress notifications of long tool calls (MCP `notifications/progress`; import_program sends
 * them, issue #16).
 *
 * A client asks for them by putting a `progressToken` in the `_meta` of its `tools/call`. The
 * surface is stateless and answers plain JSON, which cannot carry a notification before the
 * result; so such a call alone is answered as a server-sent-event stream (the Streamable HTTP
 * transport's other response form, which every client must accept): the notifications, then
 * the result.
 */
import type { ServerNotification, ProgressToken } from '@modelcontextprotocol/sdk/types.js';
import type { Progress } from './tool.ts';

/** True when `body` is a `tools/call` that asks for progress (answer it as an SSE stream). */
export function wantsProgress(body: unknown): boolean {
  const message = body as { method?: unknown; params?: { _meta?: { progressToken?: unknown } } } | null;
  return message?.method === 'tools/call' && message.params?._meta?.progressToken !== undefined;
}

/** The `Progress` of one call, or undefined when it has no progress token. */
export function progressOf(token: ProgressToken | undefined, send: (notification: ServerNotification) => Promise<void>): Progress | undefined {
  if (token === undefined) return undefined;
  return (progress, total, message) => send({ method: 'notifications/progress', params: { progressToken: token, progress, total, message } });
}
