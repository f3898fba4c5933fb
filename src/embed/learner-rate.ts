/**
 * The per-learner submission rate of `POST /v1/embed/judge` (issue #10 "Cost bounds"): at most
 * `embed.learnerRate` submissions per learner and tenant per `embed.learnerWindowSeconds`
 * (SVC_JUDGE_LEARNER_RATE, SVC_JUDGE_LEARNER_WINDOW), counted by `@fastify/rate-limit`'s store —
 * in memory, or in Redis when `REDIS_URL` is set so every process shares one count.
 *
 * The learner is known only once the token is verified (and, for an IdP token seen for the first
 * time, once the learner exists), so the judge counts inside its transaction, before anything
 * is written: beyond the rate it throws 429 `rate_limited` with `Retry-After` (the seconds left
 * in the window) and the transaction leaves nothing behind. Every submission counts, accepted or
 * not. If Redis fails or hangs the submission is let through (fail open, logged once per outage).
 *
 * Appeals (`POST /v1/embed/results/{id}/appeal`, ../appeal.ts) are counted the same way, per
 * learner, with their own count (`appealLimiter`: `embed.appealRate` per `embed.appealWindowSeconds`,
 * default 5 per hour).
 */
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Deps } from '../deps.ts';
import { ApiError } from '../http/api-errors.ts';
import { exceededFor, type RateChecker } from '../http/rate-check.ts';
import { rateLimitRedis } from '../http/redis.ts';
import type { LearnerLimit } from './judge.ts';

/**
 * Register the limiter's store in the embed plugin `app` and return, per request, the check
 * the judge calls with the learner it resolved.
 */
export async function learnerLimiter(app: FastifyInstance, deps: Pick<Deps, 'config'>): Promise<(req: FastifyRequest) => LearnerLimit> {
  const redis = await rateLimitRedis(app, deps.config);
  await app.register(rateLimit, { global: false, skipOnError: true, ...(redis ? { redis, nameSpace: 'svc:embed-rate:' } : { cache: 100_000 }) });
  const { learnerRate, learnerWindowSeconds } = deps.config.embed;
  return perLearner(app, 'learner', learnerRate, learnerWindowSeconds, 'submissions');
}

/** Appeals per learner and tenant: `embed.appealRate` (default 5) per `embed.appealWindowSeconds` (default 3600). */
export const APPEAL_RATE_DEFAULT = 5;
export const APPEAL_WINDOW_DEFAULT_SECONDS = 3600;

/**
 * The appeal count, on the store `learnerLimiter` registered (call it after that one): per request,
 * the check the appeal endpoint calls with the learner. Throws 429 `rate_limited` beyond the rate.
 */
export function appealLimiter(app: FastifyInstance, deps: Pick<Deps, 'config'>): (req: FastifyRequest) => LearnerLimit {
  const e = deps.config.embed;
  return perLearner(app, 'appeal', e.appealRate ?? APPEAL_RATE_DEFAULT, e.appealWindowSeconds ?? APPEAL_WINDOW_DEFAULT_SECONDS, 'review requests');
}

/** A count of `max` per `windowSeconds` per learner and tenant, keyed `<prefix>:<tenant>:<learner>`. */
function perLearner(app: FastifyInstance, prefix: string, max: number, windowSeconds: number, what: string): (req: FastifyRequest) => LearnerLimit {
  const keys = new WeakMap<FastifyRequest, string>();
  const check = app.createRateLimit({
    max,
    timeWindow: windowSeconds * 1000,
    keyGenerator: (req) => keys.get(req) ?? 'unknown',
  }) as RateChecker;
  return (req) => async (tenantId, svcUserId) => {
    keys.set(req, `${prefix}:${tenantId}:${svcUserId}`);
    const retryAfter = await exceededFor(check, req, 'embed');
    if (retryAfter !== undefined) {
      throw new ApiError('rate_limited', `too many ${what}: at most ${max} per ${windowSeconds} s for one learner`, undefined, retryAfter);
    }
  };
}
