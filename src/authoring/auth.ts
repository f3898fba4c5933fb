/**
 * Authentication of `POST /mcp` (DESIGN §6, §8 "Token audiences"): a session JWT in
 * `Authorization: Bearer` — a first-party session (`aud` "authenticated") or an OAuth access
 * token issued for this resource (`aud` = the `/mcp` URL, issue #12), which must carry the
 * `authoring` scope.
 *
 * - no header, or not `Bearer <token>` → 401, `WWW-Authenticate: Bearer resource_metadata="…",
 *   scope="authoring"` (RFC 9728 §5.1, RFC 6750 §3, so MCP clients find the protected-resource
 *   metadata and what to ask for), JSON-RPC error -32001;
 * - a token that fails verification (signature, alg other than HS256, `exp`, another audience, a
 *   session ended by logout or a revoked grant, a deleted user) → 401, `error="invalid_token"`;
 * - an OAuth token without the scope → 403, `error="insufficient_scope"` (RFC 6750 §3.1).
 * Verification is `verifySession` of the identity platform, the same as `/auth/v1/user`.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Deps } from '../deps.ts';
import { AUDIENCE, AuthError, DEFAULT_SCOPE, mcpResource, SUPPORTED_SCOPES, TokenError, verifySession, type VerifiedSession } from '../identity/index.ts';
import { bearerToken } from '../http/bearer.ts';
import { JSONRPC, jsonRpcError } from './jsonrpc.ts';

/** A JSON-RPC error response not tied to a request (`id: null`). */

const baseUrl = (deps: Deps) => deps.config.baseUrl.replace(/\/+$/, '');

/** Where the RFC 9728 metadata of this resource is served. */
export const resourceMetadataUrl = (deps: Deps) => `${baseUrl(deps)}/.well-known/oauth-protected-resource`;

/** The RFC 9728 protected-resource metadata of `/mcp`. */
export function protectedResourceDocument(deps: Deps) {
  return {
    resource: mcpResource(deps),
    resource_name: 'Learning content authoring (MCP)',
    authorization_servers: [`${baseUrl(deps)}/auth/v1`],
    scopes_supported: SUPPORTED_SCOPES,
    bearer_methods_supported: ['header'],
  };
}

const quote = (s: string) => s.replace(/["\\]/g, '');

/**
 * Verify the caller of one request. Returns the session, or undefined after having sent the
 * 401 reply. Other errors (database down) are thrown to the surface's error handler.
 */
export async function authenticate(deps: Deps, req: FastifyRequest, reply: FastifyReply): Promise<VerifiedSession | undefined> {
  const token = bearerToken(req.headers.authorization);
  if (!token) {
    reply
      .code(401)
      .header('www-authenticate', `Bearer resource_metadata="${resourceMetadataUrl(deps)}", scope="${DEFAULT_SCOPE}"`)
      .send(jsonRpcError(JSONRPC.UNAUTHORIZED, 'Unauthorized: an Authorization: Bearer <access token> header is required'));
    return undefined;
  }
  let session: VerifiedSession;
  try {
    session = await verifySession(deps, token, [AUDIENCE, mcpResource(deps)]);
  } catch (err) {
    if (!(err instanceof TokenError) && !(err instanceof AuthError)) throw err;
    reply
      .code(401)
      .header('www-authenticate', `Bearer error="invalid_token", error_description="${quote(err.message)}", resource_metadata="${resourceMetadataUrl(deps)}"`)
      .send(jsonRpcError(JSONRPC.UNAUTHORIZED, `Unauthorized: ${err.message}`));
    return undefined;
  }
  if (session.claims.client_id !== undefined && !(session.claims.scope ?? '').split(' ').includes(DEFAULT_SCOPE)) {
    reply
      .code(403)
      .header('www-authenticate', `Bearer error="insufficient_scope", scope="${DEFAULT_SCOPE}", resource_metadata="${resourceMetadataUrl(deps)}"`)
      .send(jsonRpcError(JSONRPC.UNAUTHORIZED, `Forbidden: the token lacks the ${DEFAULT_SCOPE} scope`));
    return undefined;
  }
  return session;
}
