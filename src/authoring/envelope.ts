/**
 * The JSON-RPC envelope of one `POST /mcp` body, checked before the SDK sees it (routes.ts), so
 * that the errors carry the codes of JSON-RPC 2.0 §5.1 and a short message:
 *
 * - a JSON value that is not a JSON-RPC 2.0 message (`{}`, `null`, `"x"`, `"jsonrpc": "1.0"`):
 *   -32600 Invalid Request (the SDK's transport answers -32700 Parse error, which JSON-RPC keeps
 *   for text that is not JSON at all — Fastify's parser answers that one);
 * - a request for a method of MCP whose `params` do not fit the method (`tools/call` without
 *   `params`, `"arguments": "x"`): -32602 Invalid params naming each field (the SDK validates them
 *   inside its request handler and answers -32603 Internal error with the Zod issues as JSON).
 *
 * Both use the SDK's own schemas, so whatever passes here passes the SDK's checks too. Unknown
 * methods pass (the SDK answers -32601), and so do notifications and responses.
 */
import { ClientRequestSchema, JSONRPCMessageSchema } from '@modelcontextprotocol/sdk/types.js';
import type { ZodType } from 'zod';
import { JSONRPC } from './jsonrpc.ts';

/** Each MCP request method a client may send, with the schema of its request (method and params). */
const REQUESTS: ReadonlyMap<string, ZodType> = new Map(ClientRequestSchema.options.map((schema) => [schema.shape.method.value, schema as ZodType]));

/** At most this many field errors are named in one message. */
const MAX_ISSUES = 3;

/** A JSON-RPC error to answer in place of handing the body to the SDK: HTTP status and body. */
export interface EnvelopeError {
  status: number;
  body: { jsonrpc: '2.0'; id: string | number | null; error: { code: number; message: string } };
}

/**
 * The error to answer for the parsed JSON `body` of one message, or undefined when it is a
 * well-formed JSON-RPC 2.0 message the SDK should handle. Invalid Request is HTTP 400 with id
 * null (as the SDK's transport answers); Invalid params is HTTP 200 with the request's id (as the
 * SDK answers an error of a valid request), e.g. "Invalid params for tools/call: params.arguments:
 * Invalid input: expected record, received string".
 */
export function envelopeError(body: unknown): EnvelopeError | undefined {
  const message = JSONRPCMessageSchema.safeParse(body);
  if (!message.success) {
    return {
      status: 400,
      body: {
        jsonrpc: '2.0',
        id: null,
        error: {
          code: JSONRPC.INVALID_REQUEST,
          message: 'Invalid Request: the body is JSON but not a JSON-RPC 2.0 message (an object with "jsonrpc": "2.0", a "method" and, for a request, an "id")',
        },
      },
    };
  }
  const request = message.data;
  if (!('id' in request) || !('method' in request)) return undefined;
  const schema = REQUESTS.get(request.method);
  const checked = schema?.safeParse(request);
  if (!checked || checked.success) return undefined;
  const fields = checked.error.issues
    .slice(0, MAX_ISSUES)
    .map((issue) => `${issue.path.join('.') || 'params'}: ${issue.message}`)
    .join('; ');
  return {
    status: 200,
    body: { jsonrpc: '2.0', id: request.id, error: { code: JSONRPC.INVALID_PARAMS, message: `Invalid params for ${request.method}: ${fields}` } },
  };
}
