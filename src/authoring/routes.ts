/**
 * The authoring surface over HTTP (DESIGN §6): MCP Streamable HTTP, stateless, at `/mcp`.
 *
 * Every request first passes the DNS-rebinding check (origin.ts: a foreign `Origin`, or a foreign
 * `Host` while listening on loopback → 403).
 * `POST /mcp` (and `/mcp/`): 1. authenticate the bearer session JWT (onRequest, before the body
 * is read; 401 + JSON-RPC -32001 otherwise), 2. build a new McpServer bound to the caller and a
 * new stateless transport (`sessionIdGenerator: undefined`, plain JSON responses — an SSE stream
 * for a tool call that asks for progress, progress.ts), 3. hand the raw request over to the SDK
 * (`reply.hijack()`). A JSON-RPC batch (an array) is refused: 400, -32600; so is JSON that is not a
 * JSON-RPC message, and a request whose params do not fit its method is -32602 (envelope.ts) —
 * before the SDK, which would answer -32700 and -32603. Each tool call then runs in one transaction as
 * the caller (tool.ts). `GET` / `DELETE /mcp` → 405: no server-initiated stream, no sessions.
 * Errors Fastify raises before the SDK sees the request (bad JSON, wrong content type, body too
 * large — the limit of `/mcp` is `SVC_MCP_BODY_LIMIT`, 16 MiB by default, for import_program)
 * are answered as JSON-RPC errors too. While the database is unavailable (issue #11) a request
 * that cannot even be authenticated is answered HTTP 503 with `Retry-After` and a JSON-RPC error
 * (-32603) saying so; a tool call that meets the outage is an `isError` result (errors.ts).
 *
 * `protectedResourceMetadata` serves the RFC 9728 document outside the prefix; app.ts registers
 * it at the root.
 */
import { auditContextHook } from '../audit/index.ts';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { Deps } from '../deps.ts';
import type { VerifiedSession } from '../identity/index.ts';
import type { JudgeServices } from '../embed/index.ts';
import { authenticate, protectedResourceDocument } from './auth.ts';
import { originGuard } from './origin.ts';
import { wantsProgress } from './progress.ts';
import { buildMcpServer } from './server.ts';
import { DB_RETRY_AFTER_SECONDS, isDbUnavailable } from '../db/errors.ts';
import { UNAVAILABLE_MESSAGE } from './errors.ts';
import { envelopeError } from './envelope.ts';
import { JSONRPC, jsonRpcError } from './jsonrpc.ts';

/** Body limit of POST /mcp unless configured (SVC_MCP_BODY_LIMIT): room for import_program. */
export const DEFAULT_MCP_BODY_LIMIT = 16 * 1024 * 1024;

export default async function authoringRoutes(app: FastifyInstance, options: Deps & { judge?: JudgeServices }) {
  const deps: Deps = { config: options.config, db: options.db, now: options.now };
  const { judge } = options;
  const sessions = new WeakMap<FastifyRequest, VerifiedSession>();
  app.addHook('onRequest', originGuard(deps.config));
  // Tool calls record acts (overrides, review decisions, grading modes) with the request id (src/audit).
  app.addHook('onRequest', auditContextHook);

  app.setErrorHandler((err: FastifyError, req, reply) => {
    if (isDbUnavailable(err)) {
      req.log.warn({ reason: String(err.cause) }, 'authoring: database unavailable');
      return reply.code(503).header('retry-after', String(DB_RETRY_AFTER_SECONDS)).send(jsonRpcError(JSONRPC.INTERNAL_ERROR, UNAVAILABLE_MESSAGE));
    }
    const status = err.statusCode && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 500;
    if (status === 500) {
      req.log.error({ err }, 'authoring request failed');
      return reply.code(500).send(jsonRpcError(JSONRPC.INTERNAL_ERROR, 'Internal error'));
    }
    const parse = err instanceof SyntaxError || /JSON/.test(err.code ?? '');
    return reply
      .code(status)
      .send(jsonRpcError(parse ? JSONRPC.PARSE_ERROR : JSONRPC.INVALID_REQUEST, parse ? 'Parse error: the body is not valid JSON' : err.message));
  });

  app.post('/', {
    bodyLimit: deps.config.mcpBodyLimit ?? DEFAULT_MCP_BODY_LIMIT,
    onRequest: async (req: FastifyRequest, reply: FastifyReply) => {
      const session = await authenticate(deps, req, reply);
      if (!session) return reply;
      sessions.set(req, session);
    },
    handler: async (req, reply) => {
      if (Array.isArray(req.body)) {
        return reply
          .code(400)
          .send(
            jsonRpcError(
              JSONRPC.INVALID_REQUEST,
              'Invalid Request: JSON-RPC batches are not supported (removed from MCP in 2025-06-18); send one message per request',
            ),
          );
      }
      const refused = envelopeError(req.body);
      if (refused) return reply.code(refused.status).send(refused.body);
      const server = buildMcpServer({ deps, session: sessions.get(req)!, log: req.log, judge });
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: !wantsProgress(req.body) });
      reply.hijack();
      reply.raw.setHeader('x-request-id', req.id);
      reply.raw.on('close', () => {
        void transport.close();
        void server.close();
      });
      try {
        await server.connect(transport);
        await transport.handleRequest(req.raw, reply.raw, req.body);
      } catch (err) {
        req.log.error({ err }, 'mcp transport failed');
        if (!reply.raw.headersSent) {
          reply.raw.writeHead(500, { 'content-type': 'application/json' });
          reply.raw.end(JSON.stringify(jsonRpcError(JSONRPC.INTERNAL_ERROR, 'Internal error')));
        }
      }
    },
  });

  app.route({
    method: ['GET', 'DELETE'],
    url: '/',
    handler: async (_req, reply) =>
      reply
        .code(405)
        .header('allow', 'POST')
        .send(jsonRpcError(JSONRPC.SERVER_REFUSED, 'Method not allowed: this MCP server is stateless; send requests with POST')),
  });
}

/**
 * `GET /.well-known/oauth-protected-resource` (and the `/mcp` path-suffixed form of RFC 9728 §3.1):
 * `{resource, authorization_servers, bearer_methods_supported}`. Register at the root.
 */
export async function protectedResourceMetadata(app: FastifyInstance, options: Deps) {
  const deps: Deps = { config: options.config, db: options.db, now: options.now };
  // A public document, readable cross-origin (browser-based MCP clients fetch it).
  const handler = async (_req: FastifyRequest, reply: FastifyReply) => reply.header('access-control-allow-origin', '*').send(protectedResourceDocument(deps));
  app.get('/.well-known/oauth-protected-resource', handler);
  app.get('/.well-known/oauth-protected-resource/mcp', handler);
}
