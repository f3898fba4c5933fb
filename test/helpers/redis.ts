/**
 * The Redis the suites that share counters across apps or processes use: TEST_REDIS_URL (default
 * redis://127.0.0.1:6379, which .ci/run starts), and whether it answers a TCP connect within
 * 500 ms — suites that need it are skipped with that reason when it does not.
 */
import { createConnection } from 'node:net';

export const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** Whether REDIS_URL accepts a connection (resolves false on refusal, error or 500 ms of silence). */
export function redisReachable(url = REDIS_URL): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const { hostname, port } = new URL(url);
    const socket = createConnection({ host: hostname, port: Number(port || 6379) });
    socket.setTimeout(500);
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });
}
