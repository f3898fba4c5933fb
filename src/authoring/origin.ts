/**
 * DNS-rebinding protection of `/mcp` (MCP Streamable HTTP transport, 2025-11-25, "Security
 * Warning": servers MUST validate the `Origin` header; local servers SHOULD bind to loopback
 * only). Runs on every request to `/mcp`, before authentication.
 *
 * - `Origin` present → it must be the service's own origin (that of `BASE_URL`) or one of
 *   `SVC_MCP_ALLOWED_ORIGINS`; anything else, `null` included, is answered 403. Requests without
 *   `Origin` (MCP clients that are not browsers: SDKs, Claude Code, the Inspector CLI) pass.
 * - When the service listens on a loopback address, the `Host` header must also name this
 *   machine (`localhost`, `127.0.0.1`, `[::1]`, on any port) or the host of `BASE_URL` or of an
 *   allowed origin: a page of `evil.example` whose name an attacker re-pointed at 127.0.0.1 sends
 *   `Host: evil.example` and is refused even when it sends no `Origin`.
 *
 * The SDK transport has the same check (`enableDnsRebindingProtection`), but it runs inside the
 * transport, after authentication, and compares hosts with their ports; this hook answers first
 * (a foreign page learns nothing, not even whether a token is needed) and on every method.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config.ts';
import { jsonRpcError } from './auth.ts';

const FORBIDDEN = -32000;
const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '[::1]']);

const isLoopback = (host: string) => host === 'localhost' || host === '::1' || host === '[::1]' || host.startsWith('127.');

/** The host name of a `Host` header value (port and case dropped), or undefined when it is not one. */
function hostName(value: string | undefined): string | undefined {
  if (!value) return undefined;
  try {
    return new URL(`http://${value}`).hostname;
  } catch {
    return undefined;
  }
}

/** Why a request with these headers must be refused, or undefined when it may pass. */
export function rebindingRefusal(config: Pick<Config, 'baseUrl' | 'host' | 'mcpAllowedOrigins'>, origin: string | undefined, host: string | undefined): string | undefined {
  const own = new URL(config.baseUrl).origin;
  const allowed = [own, ...(config.mcpAllowedOrigins ?? [])];
  if (origin !== undefined && !allowed.includes(origin)) {
    return `Forbidden: requests from origin ${origin} are not allowed (DNS-rebinding protection); allowed: ${allowed.join(', ')}`;
  }
  if (isLoopback(config.host)) {
    const name = hostName(host);
    const names = new Set([...LOOPBACK_NAMES, ...allowed.map((o) => new URL(o).hostname)]);
    if (!name || !names.has(name)) {
      return `Forbidden: Host ${host ?? '(none)'} is not this server (DNS-rebinding protection)`;
    }
  }
  return undefined;
}

/** Fastify `onRequest` hook of `/mcp`: 403 with a JSON-RPC error for a foreign Origin or Host. */
export function originGuard(config: Config) {
  return async (req: FastifyRequest, reply: FastifyReply) => {
    const refusal = rebindingRefusal(config, req.headers.origin, req.headers.host);
    if (refusal) return reply.code(403).send(jsonRpcError(FORBIDDEN, refusal));
  };
}
