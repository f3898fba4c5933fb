/**
 * The backlog sweep: re-enqueue every artifact whose verification is still `pending` (and not held
 * by the calibration gate: graded already, ../calibration/release.ts) but that has no live job (a job archived after retention, submissions stored before the queue existed), at
 * most `SWEEP_BATCH` per sweep, one sweeper at a time across processes (advisory lock). So
 * "configured later" and "restart" both grade everything left pending. See index.ts.
 */
import type PgBoss from 'pg-boss';
import type { Db } from '../../db/index.ts';
import { bossDb } from '../../jobs/index.ts';
import { GRADING_QUEUE, jobOptions, RETENTION_DAYS } from './options.ts';

/** Namespace of the advisory lock of the backlog sweep. */
const SWEEP_LOCK = 7311;
/** Artifacts re-enqueued per sweep. */
const SWEEP_BATCH = 500;

/** Re-enqueue pending artifacts without a live job (priority 0, the backlog's). Returns how many. */
export async function sweepBacklog(boss: PgBoss, db: Db, leaseSeconds: number): Promise<number> {
  return db.transaction(async (tx) => {
    const [{ locked }] = (await tx.query<{ locked: boolean }>('select pg_try_advisory_xact_lock($1, 0) as locked', [SWEEP_LOCK])) as [{ locked: boolean }];
    if (!locked) return 0;
    // pg-boss's job table: a job is live while its state is before `completed`.
    const orphans = await tx.query<{ id: string; tenant_id: string }>(
      `select a.id, a.tenant_id from artifacts a
        where a.verification->>'status' = 'pending'
          and a.verification->>'reason' is distinct from 'calibration_required'
          and not exists (select 1 from pgboss.job j where j.name = $1 and j.id = a.id and j.state < 'completed')
        order by a.created_at
        limit ${SWEEP_BATCH}`,
      [GRADING_QUEUE],
    );
    if (!orphans.length) return 0;
    const txDb = bossDb(tx, db);
    await boss.deleteJob(
      GRADING_QUEUE,
      orphans.map((o) => o.id),
      { db: txDb } as never,
    );
    await boss.insert(
      orphans.map((o) => ({
        id: o.id,
        name: GRADING_QUEUE,
        data: { artifact_id: o.id, tenant_id: o.tenant_id },
        priority: 0,
        ...jobOptions(leaseSeconds),
        keepUntil: new Date(Date.now() + RETENTION_DAYS * 86_400_000).toISOString(),
      })),
      { db: txDb } as never,
    );
    return orphans.length;
  });
}
