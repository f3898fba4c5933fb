/**
 * The job queue (src/jobs): a queue declared with `defineQueue` is worked in every server process —
 * here one without a model — and its jobs are part of the enqueuing transaction (rolled back, no
 * job). The hourly retention sweep is a scheduled job on it (issue #23): its schedule is in
 * pg-boss, one run at a time (`stately`), and a job runs the sweep with the process's clock.
 */
import { describe, expect, it } from 'vitest';
import { defineQueue, enqueue } from '../../src/jobs/index.ts';
import { RETENTION_CRON, RETENTION_QUEUE, retentionQueue } from '../../src/admin/retention.ts';
import { startApp, useApp } from '../helpers/harness.ts';
import { countRows } from '../embed/fixtures.ts';

const seen: { id: string; data: { n: number } }[] = [];
const echo = defineQueue<{ n: number }>({
  name: 'test-echo',
  concurrency: 2,
  pollSeconds: 0.5,
  handler: async (job) => {
    seen.push({ id: job.id, data: job.data });
    return { doubled: job.data.n * 2 };
  },
});

/** The process's clock, moved by the tests. */
let offsetDays = 0;
const t = useApp(() => startApp({}, { now: () => new Date(Date.now() + offsetDays * 86_400_000) }));

describe('the job queue', () => {
  it('works a declared queue in a process without a model; the job commits with its transaction', async () => {
    expect(t.deps.config.judge).toBeFalsy();
    const id = await t.db.transaction((tx) => echo.enqueue(tx, { n: 21 }));
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    await expect.poll(() => seen.find((s) => s.id === id), { timeout: 15_000 }).toEqual({ id, data: { n: 21 } });
    await expect
      .poll(async () => (await t.db.query<{ state: string; output: unknown }>('select state, output from pgboss.job where id = $1', [id]))[0], {
        timeout: 10_000,
      })
      .toEqual({ state: 'completed', output: { doubled: 42 } });
  });

  it('a job enqueued in a transaction that rolls back does not exist', async () => {
    let id: string | null = null;
    await expect(
      t.db.transaction(async (tx) => {
        id = await enqueue(tx, 'test-echo', { n: 1 });
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect(id).toBeTruthy();
    expect(await countRows(t, 'pgboss.job', 'id = $1', [id])).toBe(0);
  });

  it('refuses a queue nobody declared', async () => {
    await expect(t.db.transaction((tx) => enqueue(tx, 'no-such-queue', {}))).rejects.toThrow(/not declared/);
  });
});

describe('the retention sweep, a scheduled job', () => {
  it('is scheduled hourly, one run at a time', async () => {
    const [schedule] = await t.db.query<{ cron: string; timezone: string }>('select cron, timezone from pgboss.schedule where name = $1', [RETENTION_QUEUE]);
    expect(schedule).toEqual({ cron: RETENTION_CRON, timezone: 'UTC' });
    expect(RETENTION_CRON).toBe('0 * * * *');
    const [queue] = await t.db.query<{ policy: string }>('select policy from pgboss.queue where name = $1', [RETENTION_QUEUE]);
    expect(queue!.policy).toBe('stately');
  });

  it("a job runs the sweep with the process's clock", { timeout: 90_000 }, async () => {
    const { id: tenant } = await t.op('tenant.create', { slug: 'sweep-job' });
    await t.db.query(`insert into deletions (tenant_id, id, resource, deleted_at) values ($1, gen_random_uuid(), 'artifact', now())`, [tenant]);
    // The hourly run, if it is queued at this moment, would hold the queue's one place (stately).
    await t.db.query('delete from pgboss.schedule where name = $1', [RETENTION_QUEUE]);
    await t.db.query(`delete from pgboss.job where name = $1 and state in ('created', 'retry')`, [RETENTION_QUEUE]);
    // today nothing is past the 30-day window of tombstones
    const first = await t.db.transaction((tx) => retentionQueue.enqueue(tx, {}));
    expect(first).toBeTruthy();
    await expect
      .poll(async () => (await t.db.query<{ state: string }>('select state from pgboss.job where id = $1', [first]))[0]?.state, { timeout: 30_000 })
      .toBe('completed');
    expect(await countRows(t, 'deletions', 'tenant_id = $1', [tenant])).toBe(1);
    // 31 days later the tombstone goes
    offsetDays = 31;
    const second = await t.db.transaction((tx) => retentionQueue.enqueue(tx, {}));
    expect(second).toBeTruthy();
    await expect
      .poll(async () => (await t.db.query<{ state: string }>('select state from pgboss.job where id = $1', [second]))[0]?.state, { timeout: 30_000 })
      .toBe('completed');
    expect(await countRows(t, 'deletions', 'tenant_id = $1', [tenant])).toBe(0);
    offsetDays = 0;
  });
});
