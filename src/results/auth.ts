/**
 * API-key authentication of the Results API: an `onRequest` hook that turns the request's
 * key into the key's tenant id, or answers 401 `unauthorized`.
 *
 * The key comes in `Authorization: Bearer svc_…` or `X-Svc-Api-Key: svc_…`. When both headers
 * are present they must carry the same key; a header that is present but is not a well-formed
 * key (another scheme, a JWT, two keys joined by a proxy) is refused rather than skipped, so a
 * request never silently authenticates with a different credential than the one meant.
 * Missing, malformed, unknown and revoked keys all get the same 401 (the message tells only
 * whether a key was found), so keys cannot be probed.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Db } from '../db/index.ts';
import { tenantOfApiKey } from './api-keys.ts';
import { ApiError } from '../http/api-errors.ts';

const BEARER_RE = /^Bearer[ \t]+(\S+)[ \t]*$/i;

const MISSING = 'an API key is required: send "Authorization: Bearer svc_…" or "X-Svc-Api-Key: svc_…"';
const INVALID = 'the API key is not valid (malformed, unknown or revoked)';

const tenants = new WeakMap<FastifyRequest, string>();

/**
 * The raw key sent with the request; undefined when no key header is present.
 * Throws `unauthorized` when a header is present but unusable, or the two headers disagree.
 */
export function apiKeyOf(req: FastifyRequest): string | undefined {
  const authorization = req.headers.authorization;
  const custom = req.headers['x-svc-api-key'];
  let fromAuthorization: string | undefined;
  if (authorization !== undefined) {
    const m = BEARER_RE.exec(authorization);
    if (!m) throw new ApiError('unauthorized', INVALID);
    fromAuthorization = m[1];
  }
  let fromCustom: string | undefined;
  if (custom !== undefined) {
    if (typeof custom !== 'string') throw new ApiError('unauthorized', INVALID);
    fromCustom = custom.trim();
  }
  if (fromAuthorization !== undefined && fromCustom !== undefined && fromAuthorization !== fromCustom) {
    throw new ApiError('unauthorized', 'Authorization and X-Svc-Api-Key carry different keys');
  }
  return fromAuthorization ?? fromCustom;
}

/**
 * The `onRequest` hook guarding the plugin's data routes: resolves the key to its tenant
 * (one indexed lookup by sha256 digest, as the database owner: `api_keys` is not readable by
 * the results role) and remembers it for `tenantOf`. Throws `unauthorized`.
 */
export function apiKeyHook(db: Db) {
  return async function authenticate(req: FastifyRequest, _reply: FastifyReply): Promise<void> {
    const key = apiKeyOf(req);
    if (!key) throw new ApiError('unauthorized', MISSING);
    const found = await tenantOfApiKey(db, key);
    if (!found) throw new ApiError('unauthorized', INVALID);
    tenants.set(req, found.tenant_id);
  };
}

/** The tenant id authenticated for this request. Throws (→ 500) if the hook did not run. */
export function tenantOf(req: FastifyRequest): string {
  const tenantId = tenants.get(req);
  if (!tenantId) throw new Error('results: tenantOf() called on a request the API-key hook did not authenticate');
  return tenantId;
}
