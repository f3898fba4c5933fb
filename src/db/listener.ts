/**
 * LISTEN on a PostgreSQL server through a dedicated node-postgres connection that comes back by
 * itself: when the connection drops (server restart, failover, a terminated backend) it is opened
 * again after a short backoff (250 ms doubling, at most `MAX_BACKOFF_MS`), the channel is
 * listened to again and `onListen` runs, so the caller knows that notices sent meanwhile were
 * lost (the API-key cache starts over there: src/results/key-cache.ts).
 *
 * node-postgres has no re-listen of its own (postgres.js had one); the only package for it,
 * pg-listen, has not been released since 2020, so this is the small loop it would be.
 *
 * `listen` resolves once the first LISTEN succeeded and rejects when the first connection fails
 * (the caller then relies on its TTL); after that, failures are retried until `stop`.
 */
import pg from 'pg';

/** Longest wait between two reconnection attempts, in milliseconds. */
export const MAX_BACKOFF_MS = 2000;
const FIRST_BACKOFF_MS = 250;

/** A quoted identifier (the channel name) for LISTEN / UNLISTEN, which take no parameters. */
const ident = (name: string) => `"${name.replace(/"/g, '""')}"`;

export async function listen(
  config: pg.ClientConfig,
  channel: string,
  onNotify: (payload: string) => void,
  onListen?: () => void,
): Promise<() => Promise<void>> {
  let client: pg.Client | undefined;
  let stopped = false;
  let backoff = FIRST_BACKOFF_MS;
  let timer: NodeJS.Timeout | undefined;

  const connect = async (): Promise<void> => {
    const c = new pg.Client(config);
    const lost = () => {
      c.removeAllListeners();
      c.on('error', () => {}); // a late socket error of the dead client must not crash the process
      void c.end().catch(() => {});
      if (client !== c) return;
      client = undefined;
      schedule();
    };
    c.on('error', lost);
    c.on('end', lost);
    c.on('notification', (msg) => {
      if (msg.channel === channel) onNotify(msg.payload ?? '');
    });
    try {
      await c.connect();
      await c.query(`LISTEN ${ident(channel)}`);
    } catch (err) {
      c.removeAllListeners();
      c.on('error', () => {});
      await c.end().catch(() => {});
      throw err;
    }
    if (stopped) {
      await c.end().catch(() => {});
      return;
    }
    client = c;
    backoff = FIRST_BACKOFF_MS;
    onListen?.();
  };

  const schedule = () => {
    if (stopped || timer) return;
    timer = setTimeout(() => {
      timer = undefined;
      connect().catch(() => {
        backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
        schedule();
      });
    }, backoff);
    timer.unref();
  };

  await connect();
  return async () => {
    stopped = true;
    clearTimeout(timer);
    const c = client;
    client = undefined;
    if (c) {
      c.removeAllListeners();
      c.on('error', () => {});
      await c.end().catch(() => {});
    }
  };
}
