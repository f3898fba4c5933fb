/**
 * Sign-in and refresh rate limits of `/auth/v1/token`, checked before any password hashing.
 *
 * Fixed-window counters (`@fastify/rate-limit`'s stores: in memory, or Redis when
 * `REDIS_URL` is set so that every process shares them):
 *
 * | counter | key | checked in | default |
 * |---|---|---|---|
 * | sign-in per IP | client address (IPv6 by /64) | `onRequest`, before the body is read | 30 / 5 min (GoTrue's `RATE_LIMIT_SIGN_IN_SIGN_UPS`) |
 * | sign-in per email | the normalised email of the body | `preHandler`, after JSON parsing, before the handler | 10 / 5 min |
 * | refresh per IP | client address | `onRequest`; also both grants of `POST /oauth/token` | 150 / 5 min (GoTrue's `RATE_LIMIT_TOKEN_REFRESH`) |
 * | client registrations per IP | client address | `onRequest` of `POST /oauth/clients/register`, before the body is read or a row stored | 60 / 1 min, its own fixed window (`SVC_OAUTH_REGISTER_PER_IP`; issue #23) |
 * | authorization requests per IP | client address | `onRequest` of `GET /oauth/authorize`, before a client metadata document is fetched or an authorization row stored | 60 / 1 min, its own fixed window (`SVC_OAUTH_AUTHORIZE_PER_IP`; issue #23) |
 *
 * The OAuth sign-in page (oauth/pages) counts against the same sign-in counters as the password
 * grant: one budget per IP and per email, whichever door is used.
 *
 * Every attempt counts, successful or not. Over a limit: 429 `over_request_rate_limit`
 * "Request rate limit reached" (GoTrue's code and message) with `Retry-After` in seconds.
 * The per-email counter also stops a distributed guesser (many IPs, one account); its price is
 * that anyone can hold one account's sign-in back for a window — the usual trade-off.
 *
 * The client address is Fastify's `request.ip`: behind a proxy, set `SVC_TRUST_PROXY` (the app's
 * `trustProxy`), or every client shares the proxy's address.
 *
 * If Redis fails or hangs (command timeout, src/http/redis.ts), the check is skipped (fail open,
 * one warning per outage): an outage of the counter store must not lock everyone out; argon2id
 * still makes each guess expensive.
 */
import rateLimit, { normalizeIP } from '@fastify/rate-limit';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { exceededFor, type RateChecker } from '../http/rate-check.ts';
import { rateLimitRedis } from '../http/redis.ts';
import type { Config } from '../config.ts';
import { AuthError } from './errors.ts';
import { normaliseEmail } from './users.ts';

/** What the /token route hooks call; each throws the 429 `AuthError` when a limit is reached. */
export interface TokenLimits {
  /** `onRequest`: the per-IP counter of the request's grant type. */
  byIp(req: FastifyRequest, reply: FastifyReply): Promise<void>;
  /** `preHandler`: the per-email counter of a password grant. */
  byEmail(req: FastifyRequest, reply: FastifyReply): Promise<void>;
  /** Both sign-in counters for a sign-in outside /token (the OAuth sign-in page): the same budget. */
  signIn(req: FastifyRequest, reply: FastifyReply, email: string): Promise<void>;
  /** The refresh counter, for `POST /oauth/token` (both of its grants). */
  oauthToken(req: FastifyRequest, reply: FastifyReply): Promise<void>;
  /** OAuth dynamic client registrations per IP and minute. */
  register(req: FastifyRequest, reply: FastifyReply): Promise<void>;
  /** OAuth authorization requests (`GET /oauth/authorize`) per IP and minute. */
  authorize(req: FastifyRequest, reply: FastifyReply): Promise<void>;
}

const grantOf = (req: FastifyRequest) => (req.query as Record<string, unknown> | undefined)?.grant_type;

/** The email a password grant names, normalised as everywhere else ('' when there is none). */
function emailOf(req: FastifyRequest): string {
  const email = (req.body as { email?: unknown } | undefined)?.email;
  return typeof email === 'string' ? normaliseEmail(email).slice(0, 320) : '';
}

/**
 * Register `@fastify/rate-limit` in the identity plugin (`app`, encapsulated: no global hook)
 * and build the /token limiters from `config`. A Redis client made here is closed with the app.
 */
export async function tokenRateLimits(app: FastifyInstance, appConfig: Pick<Config, 'identity' | 'redisUrl'>): Promise<TokenLimits> {
  const config = appConfig.identity.rateLimit;
  const redis = await rateLimitRedis(app, appConfig);
  await app.register(rateLimit, {
    global: false,
    ...(redis ? { redis, nameSpace: 'svc:auth-rate:' } : { cache: 100_000 }),
  });
  const timeWindow = config.windowSeconds * 1000;
  const make = (name: string, max: number, key: (req: FastifyRequest) => string, windowMs = timeWindow): RateChecker =>
    app.createRateLimit({ max, timeWindow: windowMs, keyGenerator: (req) => `${name}:${key(req)}` }) as RateChecker;
  const ip = (req: FastifyRequest) => normalizeIP(req.ip);
  const signInIp = make('signin-ip', config.signInPerIp, ip);
  const refreshIp = make('refresh-ip', config.refreshPerIp, ip);
  const registerIp = make('register-ip', config.registerPerIp, ip, 60_000);
  const authorizeIp = make('authorize-ip', config.authorizePerIpPerMinute, ip, 60_000);
  // The OAuth sign-in form names its email in a form body: `signIn` records it for the key.
  const signInEmailOf = new WeakMap<FastifyRequest, string>();
  const signInEmail = make('signin-email', config.signInPerEmail, (req) => signInEmailOf.get(req) ?? emailOf(req));

  const enforce = async (check: RateChecker, req: FastifyRequest, reply: FastifyReply) => {
    const retryAfter = await exceededFor(check, req, 'identity');
    if (retryAfter !== undefined) {
      reply.header('retry-after', String(retryAfter));
      throw new AuthError(429, 'over_request_rate_limit', 'Request rate limit reached');
    }
  };
  return {
    async byIp(req, reply) {
      const grant = grantOf(req);
      if (grant === 'password') await enforce(signInIp, req, reply);
      else if (grant === 'refresh_token') await enforce(refreshIp, req, reply);
    },
    async byEmail(req, reply) {
      if (grantOf(req) === 'password') await enforce(signInEmail, req, reply);
    },
    async signIn(req, reply, email) {
      await enforce(signInIp, req, reply);
      signInEmailOf.set(req, normaliseEmail(email).slice(0, 320));
      await enforce(signInEmail, req, reply);
    },
    oauthToken: (req, reply) => enforce(refreshIp, req, reply),
    register: (req, reply) => enforce(registerIp, req, reply),
    authorize: (req, reply) => enforce(authorizeIp, req, reply),
  };
}
