/**
 * What Supabase's API gateway does in front of GoTrue, and the credential checks of /auth/v1:
 *
 * - `apikey` header (or `?apikey=`) must be the anon or the service-role key (except on the routes
 *   marked `config.apikey: false`: OAuth and discovery, oauth/routes.ts): missing → 401
 *   `{"message": "No API key found in request"}`, wrong → 401 `{"message": "Invalid API key"}`
 *   (the gateway's bodies, not GoTrue's). Keys are compared in constant time.
 * - a session: `Authorization: Bearer <access token>` verified by `verifySession`;
 *   missing → 401 `no_authorization`.
 * - admin endpoints: the bearer token (or, without one, the `apikey`) must be the service-role
 *   key, otherwise 403 `not_admin` "User not allowed" (GoTrue `requireAdmin`).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Deps } from '../deps.ts';
import { AuthError } from './errors.ts';
import { verifySession, type VerifiedSession } from './sessions.ts';
import { bearerToken } from '../http/bearer.ts';
import { safeEqual } from '../lib/safe-equal.ts';

/** `onRequest` hook: the gateway's `apikey` check. Sends the 401 itself. */
export function apiKeyCheck(deps: Pick<Deps, 'config'>) {
  return async (req: FastifyRequest, reply: FastifyReply) => {
    if (req.method === 'OPTIONS') return; // CORS preflight carries no custom headers
    if (req.routeOptions.config?.apikey === false) return; // OAuth and discovery: MCP clients send no apikey
    const header = req.headers.apikey;
    const key = typeof header === 'string' ? header : (req.query as Record<string, unknown> | undefined)?.apikey;
    if (typeof key !== 'string' || !key) return reply.code(401).send({ message: 'No API key found in request' });
    if (!safeEqual(key, deps.config.anonKey) && !safeEqual(key, deps.config.serviceRoleKey)) {
      return reply.code(401).send({ message: 'Invalid API key' });
    }
  };
}

/** The caller's live session; throws 401 `no_authorization`, `TokenError` or 403 `AuthError`. */
export async function requireSession(deps: Deps, req: FastifyRequest): Promise<VerifiedSession> {
  const token = bearerToken(req.headers.authorization);
  if (!token) throw new AuthError(401, 'no_authorization', 'This endpoint requires a valid Bearer token');
  return verifySession(deps, token);
}

/** Throws 403 `not_admin` unless the request carries the service-role key. */
export function requireServiceRole(deps: Pick<Deps, 'config'>, req: FastifyRequest): void {
  const header = req.headers.apikey;
  const token = bearerToken(req.headers.authorization) ?? (typeof header === 'string' ? header : undefined);
  if (!token || !safeEqual(token, deps.config.serviceRoleKey)) {
    throw new AuthError(403, 'not_admin', 'User not allowed');
  }
}
