/**
 * Redis (REDIS_URL: shared rate limits and job wake-ups across processes): one PING within the
 * timeout, without retries.
 */
import { Redis } from 'ioredis';
import { redactUrl } from './database.ts';
import { error, ok, reason, type DoctorContext, type Finding } from './types.ts';

export async function checkRedis({ config, timeoutMs }: DoctorContext): Promise<Finding | undefined> {
  if (!config.redisUrl) return undefined;
  const where = redactUrl(config.redisUrl);
  const redis = new Redis(config.redisUrl, {
    lazyConnect: true,
    connectTimeout: timeoutMs,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    enableOfflineQueue: false,
  });
  redis.on('error', () => {}); // reported below
  try {
    await redis.connect();
    await redis.ping();
    return ok('redis', `${where} answers PING`);
  } catch (err) {
    return error('redis', `cannot reach Redis at ${where} (${reason(err)})`, 'start Redis, or correct REDIS_URL (unset it to keep limits per process)');
  } finally {
    redis.disconnect();
  }
}
