/**
 * The JSON-RPC 2.0 error codes the MCP endpoint answers with, in one place (JSON-RPC 2.0 §5.1 for
 * -32700…-32603; -32000…-32099 are "server errors" the spec leaves to the implementation, used
 * here as the MCP SDK and clients read them), and the error body sent outside the SDK.
 */
export const JSONRPC = {
  /** The body is not JSON. */
  PARSE_ERROR: -32700,
  /** Not a JSON-RPC request object (or a batch, which MCP 2025-06-18 removed). */
  INVALID_REQUEST: -32600,
  /** The method's params are wrong; also an unknown tool (MCP tools/call). */
  INVALID_PARAMS: -32602,
  INTERNAL_ERROR: -32603,
  /** Refused before the method runs: a wrong HTTP method, a disallowed Origin. */
  SERVER_REFUSED: -32000,
  /** No valid bearer token (the HTTP status is 401 or 403). */
  UNAUTHORIZED: -32001,
  /** MCP resources/read of a URI that does not exist (MCP spec "Resources", error handling). */
  RESOURCE_NOT_FOUND: -32002,
} as const;

/** A JSON-RPC error response without a request id (sent before a request could be read). */
export const jsonRpcError = (code: number, message: string) => ({ jsonrpc: '2.0' as const, error: { code, message }, id: null });
