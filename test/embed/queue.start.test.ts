/**
 * Processes that start together on a fresh PostgreSQL database all come up: pg-boss installs its
 * schema once and the grading queue is created once (its create_queue deadlocked when two
 * processes ran it at once; src/embed/queue/index.ts takes turns under an advisory lock).
 */
import { describe, expect, it } from 'vitest';
import { openDb } from '../../src/db/index.ts';
import { backend, freshDb, startApp } from '../helpers/harness.ts';

describe.skipIf(backend !== 'postgres')('two processes starting on a fresh database', () => {
  it('both start, and the grading queue exists once', { timeout: 120_000 }, async () => {
    for (let round = 0; round < 4; round++) {
      const { db, url, drop } = await freshDb();
      const second = await openDb({ databaseUrl: url! });
      try {
        const started = await Promise.allSettled([startApp({}, { db }), startApp({}, { db: second })]);
        for (const s of started) if (s.status === 'fulfilled') await s.value.close();
        expect(started.map((s) => (s.status === 'rejected' ? String(s.reason) : s.status))).toEqual(['fulfilled', 'fulfilled']);
        const queues = await db.query<{ n: number }>(`select count(*)::int as n from pgboss.queue where name = 'embed-grading'`);
        expect(queues[0]!.n).toBe(1);
      } finally {
        await second.close();
        await drop();
      }
    }
  });
});
