/**
 * `/livez` and `/readyz` (issue #11, src/http/probes.ts): on a real server process whose Redis
 * does not answer, and on the real app whose database stops answering (every connection of its
 * pool held, as in an outage or a saturated pool: `select 1` cannot run within the 1 s bound).
 * The ready answer of a server process, and its 503 while shutting down, are in shutdown.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_POOL_SIZE } from '../../src/config/db-defaults.ts';
import { backend, startApp } from '../helpers/harness.ts';
import { freePort } from '../helpers/pg-cluster.ts';
import { useServerProcess } from '../helpers/server-process.ts';

const probe = async (url: string) => {
  const res = await fetch(url);
  return { status: res.status, cacheControl: res.headers.get('cache-control'), body: (await res.json()) as Record<string, unknown> };
};

describe('probes of a server process whose Redis does not answer', () => {
  // A Redis on a free loopback port: nothing listens there.
  const server = useServerProcess(async () => ({ REDIS_URL: `redis://127.0.0.1:${await freePort()}` }));

  it('/livez answers 200, never cached: it checks nothing outside the process', async () => {
    expect(await probe(`${server.url}/livez`)).toEqual({ status: 200, cacheControl: 'no-store', body: { status: 'live' } });
  });

  it('/readyz answers 503 naming redis, within the bound', async () => {
    const started = Date.now();
    const { status, cacheControl, body } = await probe(`${server.url}/readyz`);
    expect(Date.now() - started).toBeLessThan(4000); // each check is bounded at 1 s; room for a loaded runner, far below a hang
    expect({ status, cacheControl }).toEqual({ status: 503, cacheControl: 'no-store' });
    expect(body).toEqual({
      status: 'unavailable',
      failing: ['redis'],
      checks: { database: 'ok', migrations: 'ok', queue: 'ok', redis: 'failed', shutdown: 'ok' },
    });
  });
});

describe('readiness when the database does not answer', () => {
  it('/readyz answers 503 naming the database within the bound, and 200 once it answers again', async () => {
    const t = await startApp();
    try {
      expect(await probe(`${t.url}/readyz`)).toEqual({
        status: 200,
        cacheControl: 'no-store',
        body: { status: 'ready', checks: { database: 'ok', migrations: 'ok', queue: 'ok', shutdown: 'ok' } },
      });
      // Take every connection (PGlite has one) and hold it: `select 1` now waits.
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      const holders = backend === 'pglite' ? 1 : DEFAULT_POOL_SIZE;
      const entered: Promise<void>[] = [];
      const transactions = Array.from({ length: holders }, () => {
        let enter!: () => void;
        entered.push(new Promise<void>((resolve) => (enter = resolve)));
        return t.db.transaction(async () => {
          enter();
          await held;
        });
      });
      await Promise.all(entered);

      const started = Date.now();
      const { status, body } = await probe(`${t.url}/readyz`);
      expect(Date.now() - started).toBeLessThan(4000); // each check is bounded at 1 s; room for a loaded runner, far below a hang
      expect(status).toBe(503);
      expect(body).toMatchObject({ status: 'unavailable', failing: ['database'], checks: { database: 'timed out', queue: 'ok' } });
      expect((await probe(`${t.url}/livez`)).status).toBe(200);

      release();
      await Promise.all(transactions);
      expect(await probe(`${t.url}/readyz`)).toMatchObject({ status: 200, body: { status: 'ready' } });
    } finally {
      await t.close();
    }
  });
});
