/**
 * One counted check of an `@fastify/rate-limit` limiter made with `createRateLimit`, failing open:
 * if the counter store (Redis) fails, the request is not counted and goes through — an outage of
 * the store must not lock everyone out. The outage is logged once by src/http/redis.ts; each
 * uncounted request only at debug, under `label`.
 */
import type { FastifyRequest } from 'fastify';

/** What `app.createRateLimit(…)` returns. */
export type RateChecker = (req: FastifyRequest) => Promise<{ isExceeded?: boolean; ttlInSeconds?: number }>;

/** Count `req` with `check`; the seconds until the window ends (≥ 1) when the limit is exceeded, else undefined. */
export async function exceededFor(check: RateChecker, req: FastifyRequest, label: string): Promise<number | undefined> {
  let result: Awaited<ReturnType<RateChecker>>;
  try {
    result = await check(req);
  } catch (err) {
    req.log.debug({ err }, `${label}: rate-limit store unavailable; request not counted`);
    return undefined;
  }
  return result.isExceeded ? Math.max(1, result.ttlInSeconds ?? 1) : undefined;
}
