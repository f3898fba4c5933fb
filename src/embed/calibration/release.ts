/**
 * Learners' submissions held by the calibration gate (gate.ts), and their release.
 *
 * Held: the submission was graded, but its activity's gate is closed. Its artifact's verification
 * becomes `{status: "pending", reason: "calibration_required", held_at, held: {verification,
 * effect}}` — the verdict the judge would have recorded (`held.verification`) and what it would
 * do to the result (`held.effect`, ../grading/verdict.ts `Effect`) kept inside, not shown to the
 * learner (the judge's answer and the learner's reads show `pending` / `calibration_required`).
 * The job is completed; the result and progress are untouched; the backlog sweep leaves it alone.
 *
 * Released: as soon as the gate opens (a calibration run passes, runs.ts; an author forces the
 * activity live, `set_grading`), every held submission of the activity is recorded through
 * `recordOutcome` (result, progress and the `updated_since` feed move as for a live verdict), with
 * `verification.calibration` saying what let it through. A release takes the activity's gate lock
 * (gate.ts) and is idempotent (a recorded submission is no longer pending).
 */
import type { Queryable } from '../../db/index.ts';
import { recordOutcome, type Effect, type RecordedOutcome } from '../grading/verdict.ts';
import type { Calibration } from './gate.ts';
import { lockGate } from './gate.ts';

/** The `reason` of a submission held by the gate. */
export const CALIBRATION_REQUIRED = 'calibration_required';

/** Hold the graded `verification` of artifact `artifactId` (header). False when it is no longer pending or gone. */
export async function holdForCalibration(
  tx: Queryable,
  tenantId: string,
  artifactId: string,
  verification: RecordedOutcome & Record<string, unknown>,
  effect: Effect,
  now: Date,
): Promise<boolean> {
  const rows = await tx.query(
    `update artifacts set verification = $3::text::jsonb, updated_at = clock_timestamp()
      where id = $1 and tenant_id = $2 and verification->>'status' = 'pending' returning id`,
    [artifactId, tenantId, JSON.stringify({ status: 'pending', reason: CALIBRATION_REQUIRED, held_at: now.toISOString(), held: { verification, effect } })],
  );
  return rows.length > 0;
}

/**
 * Record every held submission of activity `activityId`, oldest first, with `calibration` stamped
 * on each verdict, in the caller's transaction (under the gate lock). Returns how many.
 */
export async function releaseHeld(tx: Queryable, tenantId: string, activityId: string, calibration: Calibration): Promise<number> {
  await lockGate(tx, activityId);
  const held = await tx.query<{ id: string; held: { verification: RecordedOutcome & Record<string, unknown>; effect: Effect } }>(
    `select id, verification->'held' as held from artifacts
      where tenant_id = $1 and activity_id = $2 and verification->>'reason' = $3 and verification->>'status' = 'pending'
      order by created_at, id`,
    [tenantId, activityId, CALIBRATION_REQUIRED],
  );
  let released = 0;
  for (const a of held) {
    if (await recordOutcome(tx, tenantId, a.id, { ...a.held.verification, calibration }, a.held.effect)) released++;
  }
  return released;
}
