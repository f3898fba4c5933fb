/**
 * Rate limiting of the Results API (issue #4), with @fastify/rate-limit:
 *
 * - counted per API key (the key's id), after authentication — a request without a valid key
 *   is a 401 and is not counted;
 * - `config.results.rateLimit.max` requests per `windowMs` (SVC_RATE_LIMIT, SVC_RATE_LIMIT_WINDOW);
 *   a key's own `rate_limit` (svc key create --rate-limit) replaces the default;
 * - in memory, or in Redis when REDIS_URL is set, so every process of a deployment shares one
 *   count per key. If Redis cannot be reached or does not answer within its command timeout
 *   the request is let through (logged once per outage, src/http/redis.ts): a dashboard should
 *   not fail because the limiter's store is down;
 * - every answer carries `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset` (seconds,
 *   IETF draft headers); over the limit: 429 `rate_limited` with `Retry-After` (seconds).
 */
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance } from 'fastify';
import { rateLimitRedis } from '../http/redis.ts';
import type { Deps } from '../deps.ts';
import { ApiError } from '../http/api-errors.ts';
import { keyOf } from './auth.ts';

/** Prefix of the counters in Redis. */
export const REDIS_NAMESPACE = 'svc:results:rate:';

/**
 * Register the limiter on `api`, the context of the data routes, AFTER its API-key hook (the
 * limiter's per-route onRequest hook runs after the context's hooks, so the key is known).
 */
export async function registerRateLimit(api: FastifyInstance, deps: Deps): Promise<void> {
  const { max, windowMs } = deps.config.results.rateLimit;
  const redis = await rateLimitRedis(api, deps.config);
  await api.register(rateLimit, {
    global: true,
    hook: 'onRequest',
    keyGenerator: (req) => keyOf(req).id,
    max: (req) => keyOf(req).rateLimit ?? max,
    timeWindow: windowMs,
    redis,
    nameSpace: REDIS_NAMESPACE,
    skipOnError: true,
    enableDraftSpec: true,
    errorResponseBuilder: (_req, context) =>
      new ApiError('rate_limited', `too many requests for this API key (${context.max} per ${windowMs / 1000} s); retry in ${context.after}`),
  });
}
