/**
 * Authentication of `POST /mcp` (DESIGN §6): a session JWT in `Authorization: Bearer`.
 *
 * - no header, or not `Bearer <token>` → 401, `WWW-Authenticate: Bearer resource_metadata="…"`
 *   (RFC 9728 §5.1, so MCP clients find the protected-resource metadata), JSON-RPC error -32001;
 * - a token that fails verification (signature, alg other than HS256, `exp`, `aud`, a session
 *   ended by logout, a deleted user) → 401, `error="invalid_token"`, JSON-RPC error -32001.
 * Verification is `verifySession` of the identity platform, the same as `/auth/v1/user`.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Deps } from '../deps.ts';
import { AuthError } from '../identity/errors.ts';
import { TokenError, verifySession, type VerifiedSession } from '../identity/sessions.ts';

export const UNAUTHORIZED = -32001;

/** A JSON-RPC error response not tied to a request (`id: null`). */
export const jsonRpcError = (code: number, message: string) => ({ jsonrpc: '2.0' as const, error: { code, message }, id: null });

const baseUrl = (deps: Deps) => deps.config.baseUrl.replace(/\/+$/, '');

/** Where the RFC 9728 metadata of this resource is served. */
export const resourceMetadataUrl = (deps: Deps) => `${baseUrl(deps)}/.well-known/oauth-protected-resource`;

/** The RFC 9728 protected-resource metadata of `/mcp`. */
export function protectedResourceDocument(deps: Deps) {
  return {
    resource: `${baseUrl(deps)}/mcp`,
    authorization_servers: [`${baseUrl(deps)}/auth/v1`],
    bearer_methods_supported: ['header'],
  };
}

const quote = (s: string) => s.replace(/["\\]/g, '');

/**
 * Verify the caller of one request. Returns the session, or undefined after having sent the
 * 401 reply. Other errors (database down) are thrown to the surface's error handler.
 */
export async function authenticate(deps: Deps, req: FastifyRequest, reply: FastifyReply): Promise<VerifiedSession | undefined> {
  const header = req.headers.authorization;
  const token = typeof header === 'string' ? /^Bearer +([^\s]+) *$/i.exec(header)?.[1] : undefined;
  if (!token) {
    reply
      .code(401)
      .header('www-authenticate', `Bearer resource_metadata="${resourceMetadataUrl(deps)}"`)
      .send(jsonRpcError(UNAUTHORIZED, 'Unauthorized: an Authorization: Bearer <access token> header is required'));
    return undefined;
  }
  try {
    return await verifySession(deps, token);
  } catch (err) {
    if (!(err instanceof TokenError) && !(err instanceof AuthError)) throw err;
    reply
      .code(401)
      .header(
        'www-authenticate',
        `Bearer error="invalid_token", error_description="${quote(err.message)}", resource_metadata="${resourceMetadataUrl(deps)}"`,
      )
      .send(jsonRpcError(UNAUTHORIZED, `Unauthorized: ${err.message}`));
    return undefined;
  }
}
