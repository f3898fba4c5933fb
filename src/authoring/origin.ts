/**
 * DNS-rebinding protection of `/mcp` (MCP Streamable HTTP transport, 2025-11-25, "Security
 * Warning": servers MUST validate the `Origin` header; local servers SHOULD bind to loopback
 * only). Runs on every request to `/mcp`, before authentication.
 *
 * - `Origin` present → it must be the service's own origin (that of `BASE_URL`; when that is a
 *   loopback address, also the same scheme and port under another loopback name — localhost,
 *   127.0.0.1, [::1]) or one of `SVC_MCP_ALLOWED_ORIGINS`; anything else, `null` included, is
 *   answered 403. Requests without
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
import { isIPv4 } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config.ts';
import { JSONRPC, jsonRpcError } from './jsonrpc.ts';

const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '[::1]']);

/** A loopback address or name: localhost, ::1 / [::1], or an IPv4 literal in 127.0.0.0/8 (not a name like 127.evil.example). */
const isLoopback = (host: string) => host === 'localhost' || host === '::1' || host === '[::1]' || (isIPv4(host) && host.startsWith('127.'));

/** The host name of a `Host` header value (port and case dropped), or undefined when it is not one. */
function hostName(value: string | undefined): string | undefined {
  if (!value) return undefined;
  try {
    return new URL(`http://${value}`).hostname;
  } catch {
    return undefined;
  }
}

/**
 * Whether `origin` is this service's own loopback origin under another loopback name: with
 * `BASE_URL` http://127.0.0.1:8787, a page of http://localhost:8787 (or http://[::1]:8787) is
 * served by this very server — the same scheme and port on this machine. A rebinding page has a
 * foreign host name, and another local app another port.
 */
function sameLoopbackServer(own: string, origin: string): boolean {
  let a: URL;
  let b: URL;
  try {
    [a, b] = [new URL(own), new URL(origin)];
  } catch {
    return false;
  }
  return isLoopback(a.hostname) && isLoopback(b.hostname) && a.protocol === b.protocol && a.port === b.port && b.origin === origin;
}

/** Why a request with these headers must be refused, or undefined when it may pass. */
export function rebindingRefusal(
  config: Pick<Config, 'baseUrl' | 'host' | 'mcpAllowedOrigins'>,
  origin: string | undefined,
  host: string | undefined,
): string | undefined {
  const own = new URL(config.baseUrl).origin;
  const allowed = [own, ...(config.mcpAllowedOrigins ?? [])];
  if (origin !== undefined && !allowed.includes(origin) && !sameLoopbackServer(own, origin)) {
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
    if (refusal) return reply.code(403).send(jsonRpcError(JSONRPC.SERVER_REFUSED, refusal));
  };
}
