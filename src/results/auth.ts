/**
 * API-key authentication of the Results API: an `onRequest` hook that turns the request's
 * key into the live key (its id, tenant and rate limit), or answers 401 `unauthorized`.
 *
 * The key comes in `Authorization: Bearer svc_…` or `X-Svc-Api-Key: svc_…`. When both headers
 * are present they must carry the same key; a header that is present but is not a well-formed
 * key (another scheme, a JWT, two keys joined by a proxy) is refused rather than skipped, so a
 * request never silently authenticates with a different credential than the one meant.
 * Missing, malformed, unknown and revoked keys all get the same 401 (the message tells only
 * whether a key was found), so keys cannot be probed.
 */
import type { FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import type { LiveKey } from './api-keys.ts';
import type { ApiKeyCache } from './key-cache.ts';
import { ApiError } from '../http/api-errors.ts';
import { bearerToken } from '../http/bearer.ts';

const MISSING = 'an API key is required: send "Authorization: Bearer svc_…" or "X-Svc-Api-Key: svc_…"';
const INVALID = 'the API key is not valid (malformed, unknown or revoked)';

const keys = new WeakMap<FastifyRequest, LiveKey>();

/**
 * The raw key sent with the request; undefined when no key header is present.
 * Throws `unauthorized` when a header is present but unusable, or the two headers disagree.
 */
export function apiKeyOf(req: FastifyRequest): string | undefined {
  const authorization = req.headers.authorization;
  const custom = req.headers['x-svc-api-key'];
  let fromAuthorization: string | undefined;
  if (authorization !== undefined) {
    fromAuthorization = bearerToken(authorization);
    if (fromAuthorization === undefined) throw new ApiError('unauthorized', INVALID);
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
 * The `onRequest` hook guarding the plugin's data routes: resolves the key through the
 * process's key cache (a database read by prefix and a constant-time digest comparison on a
 * miss), records its use for `last_used_at`, and remembers it for `keyOf` / `tenantOf`.
 * Throws `unauthorized`.
 */
export function apiKeyHook(cache: ApiKeyCache) {
  const accept = (req: FastifyRequest, key: LiveKey | undefined): ApiError | undefined => {
    if (!key) return new ApiError('unauthorized', INVALID);
    cache.noteUse(key);
    keys.set(req, key);
    return undefined;
  };
  // A callback hook, not an async one: a key found in the cache (nearly every request) is
  // accepted without a promise; only a cache miss waits for the database.
  return function authenticate(req: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction): void {
    let raw: string | undefined;
    try {
      raw = apiKeyOf(req);
    } catch (err) {
      done(err as Error);
      return;
    }
    if (!raw) {
      done(new ApiError('unauthorized', MISSING));
      return;
    }
    const hit = cache.cached(raw);
    if (hit) {
      done(accept(req, hit));
      return;
    }
    cache.lookup(raw).then(
      (key) => done(accept(req, key)),
      (err: Error) => done(err),
    );
  };
}

/** The key authenticated for this request. Throws (→ 500) if the hook did not run. */
export function keyOf(req: FastifyRequest): LiveKey {
  const key = keys.get(req);
  if (!key) throw new Error('results: keyOf() called on a request the API-key hook did not authenticate');
  return key;
}

/** The tenant id authenticated for this request. Throws (→ 500) if the hook did not run. */
export const tenantOf = (req: FastifyRequest): string => keyOf(req).tenantId;
