/**
 * The `progress` read model's one write (DESIGN §4: kept current in the transaction of the verdict
 * that changes it): a verdict (verdict.ts), an override or a review decision (override.ts) moves
 * the learner's completed count in the result's program and stamps `last_activity_at`.
 */
import type { Queryable } from '../../db/index.ts';

/** Add `delta` (−1, 0, +1) to the learner's progress in the result's program and stamp it (one row per learner and program). */
export async function moveProgress(tx: Queryable, r: { tenant_id: string; user_id: string; program_id: string }, delta: number): Promise<void> {
  await tx.query(
    `insert into progress (tenant_id, user_id, program_id, completed_count, last_activity_at)
     values ($1, $2, $3, greatest($4::int, 0), now())
     on conflict (tenant_id, user_id, program_id) do update
       set completed_count = greatest(progress.completed_count + $4::int, 0),
           last_activity_at = excluded.last_activity_at,
           updated_at = clock_timestamp()`,
    [r.tenant_id, r.user_id, r.program_id, delta],
  );
}
