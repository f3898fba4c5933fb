/**
 * The Redis connection of a rate limiter (`REDIS_URL`), made one way for every surface.
 *
 * Fail fast, fail open: no offline queue and one retry per command, so while Redis is
 * unreachable a check fails at once and the limiter lets the request through (each limiter runs
 * with `skipOnError` or catches the error) instead of making every request wait for a
 * reconnect; errors are logged as warnings under `label`. The client is closed with `app`. On
 * start it waits up to a second for the connection, so counting starts with the first request.
 * Each client reports to readiness as `redis` (a PING, src/http/probes.ts).
 */
import type { FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';

/** A Redis client for `url` bound to `app`'s lifetime, or undefined without a URL. */
export async function rateLimitRedis(app: FastifyInstance, url: string | undefined, label: string): Promise<Redis | undefined> {
  if (!url) return undefined;
  const redis = new Redis(url, { connectTimeout: 1000, maxRetriesPerRequest: 1, enableOfflineQueue: false });
  redis.on('error', (err) => app.log.warn({ err }, `${label}: rate-limit store (Redis) unavailable; not limiting`));
  app.addHook('onClose', async () => {
    await redis.quit().catch(() => redis.disconnect());
  });
  app.readiness.add('redis', () => redis.ping());
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, 1000);
    redis.once('ready', () => {
      clearTimeout(timer);
      resolve();
    });
  });
  return redis;
}
