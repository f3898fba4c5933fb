/**
 * The Redis connection of the rate limiters (`REDIS_URL`): one client per app, shared by every
 * surface that counts (results API, sign-in, judge submissions), closed with the last of them.
 *
 * Fail fast, fail open (issue #11): no offline queue, one retry, and a command timeout of
 * `REDIS_COMMAND_TIMEOUT_MS`, so a Redis that refuses connections *or hangs* (a frozen process,
 * a lost network path, where the socket stays open and nothing answers) fails a check within half
 * a second, and the limiter lets the request through (each limiter runs with `skipOnError` or
 * catches the error) instead of making every request wait.
 *
 * One log line per outage, not per request: a warning when Redis is first found unavailable and
 * an info line when it answers again. A frozen Redis raises no connection error, so a PING every
 * `PING_INTERVAL_MS` (timing out like any command) notices both the outage and the return. On
 * start it waits up to a second for the connection, so counting starts with the first request.
 * The client reports to readiness as `redis` (a PING, src/http/probes.ts).
 */
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import type { Config } from '../config.ts';

/** Milliseconds one Redis command may take before it fails (and the request is let through). */
export const REDIS_COMMAND_TIMEOUT_MS = 500;
/** Milliseconds between the health PINGs that tell an outage's start and end. */
export const PING_INTERVAL_MS = 1000;

interface Shared {
  redis: Redis;
  users: number;
  ready: Promise<void>;
}

/** The client of each app, keyed by the app's config object (one per `buildApp`). */
const clients = new WeakMap<Pick<Config, 'redisUrl'>, Shared>();

/** Logs the transitions of one client: down once per outage, up once when it is back. */
function outageLog(log: FastifyBaseLogger) {
  let down = false;
  return {
    down(err: unknown) {
      if (down) return;
      down = true;
      log.warn({ reason: err instanceof Error ? err.message : String(err) }, 'Redis unavailable: rate limits are not counted until it is back');
    },
    up() {
      if (!down) return;
      down = false;
      log.info('Redis is back: rate limits are counted again');
    },
  };
}

function open(app: FastifyInstance, url: string): Shared {
  const redis = new Redis(url, {
    connectTimeout: 1000,
    commandTimeout: REDIS_COMMAND_TIMEOUT_MS,
    maxRetriesPerRequest: 1,
    enableOfflineQueue: false,
  });
  app.readiness.add('redis', () => redis.ping());
  const health = outageLog(app.log);
  redis.on('error', (err) => health.down(err));
  redis.on('ready', () => health.up());
  const ping = setInterval(() => {
    redis.ping().then(
      () => health.up(),
      (err: unknown) => health.down(err),
    );
  }, PING_INTERVAL_MS);
  ping.unref();
  redis.on('end', () => clearInterval(ping));
  const ready = new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, 1000);
    redis.once('ready', () => {
      clearTimeout(timer);
      resolve();
    });
  });
  return { redis, users: 0, ready };
}

/**
 * The app's Redis client for a rate limiter registered in `app` (a plugin of the app whose
 * config is `config`), or undefined without `REDIS_URL`. Closed when the last plugin using it closes.
 */
export async function rateLimitRedis(app: FastifyInstance, config: Pick<Config, 'redisUrl'>): Promise<Redis | undefined> {
  if (!config.redisUrl) return undefined;
  let shared = clients.get(config);
  if (!shared) {
    shared = open(app, config.redisUrl);
    clients.set(config, shared);
  }
  shared.users += 1;
  const { redis } = shared;
  app.addHook('onClose', async () => {
    if (--shared.users > 0) return;
    clients.delete(config);
    await redis.quit().catch(() => redis.disconnect());
  });
  await shared.ready;
  return redis;
}
