/**
 * The calibration room's front door (issue #21): what the authoring tools and the admin
 * operations use, re-exported by ../index.ts. Files: examples.ts (the examples, as the caller),
 * statistics.ts (the figures, pure), runs.ts (requesting and running a calibration as a queued
 * job), report.ts (the report view), gate.ts (thresholds, the gate, `verification.calibration`),
 * release.ts (holding and releasing learners' submissions). README.md has the design.
 *
 * This file adds the two steps that span a caller's transaction and the owner's work after it:
 * `setGradingMode` (as the caller) + `releaseIfOpen` (as the owner), and `awaitRun`.
 */
import { audit } from '../../audit/index.ts';
import type { Db, Queryable } from '../../db/index.ts';
import type { Deps } from '../../deps.ts';
import { PROMPT_VERSION } from '../grading/prompt.ts';
import { visibleActivity } from './examples.ts';
import { gateState } from './gate.ts';
import { releaseHeld } from './release.ts';
import { runProgress, type RunProgress } from './runs.ts';

export { addExample, CalibrationInputError, CalibrationNotFound, deleteExample, listExamples, type Example, type ExampleInput } from './examples.ts';
export { calibrationReport, checkReportAccess, type CalibrationReport } from './report.ts';
export { requestRun, runProgress, type RunProgress } from './runs.ts';
export { DEFAULT_THRESHOLDS, setThresholds, thresholdsOf, type Calibration, type Thresholds } from './gate.ts';
export { calibrationFigures, cohenKappa, confusionOf, exampleVerdict, type Figures, type GradedExample, type RunGrade } from './statistics.ts';

/**
 * Record an audited change of activity `activityId`'s grading mode as the caller (RLS: authors of
 * its tenant): `live` (only with `force`) lets learners' verdicts through without a passing
 * report; `gated` returns to the gate. Returns the activity's tenant and the change.
 */
export async function setGradingMode(
  tx: Queryable,
  a: { activityId: string; mode: 'gated' | 'live'; force: boolean; reason: string },
): Promise<{ tenantId: string; change: { mode: string; forced: boolean; reason: string; changed_by: string | null; changed_at: string } }> {
  const activity = await visibleActivity(tx, a.activityId);
  const [change] = await tx.query<{ mode: string; forced: boolean; reason: string; changed_by: string | null; changed_at: string }>(
    `insert into grading_mode_changes (tenant_id, activity_id, mode, forced, reason, changed_by)
     values ($1, $2, $3, $4, $5, public.current_itera_user_id())
     returning mode, forced, reason, changed_by, to_json(changed_at) #>> '{}' as changed_at`,
    [activity.tenant_id, activity.id, a.mode, a.mode === 'live' && a.force, a.reason],
  );
  await audit(tx, {
    tenantId: activity.tenant_id,
    action: 'grading.mode.set',
    target: { type: 'activity', id: activity.id },
    detail: { mode: change!.mode, forced: change!.forced },
  });
  return { tenantId: activity.tenant_id, change: change! };
}

/**
 * As the database owner: if activity `activityId`'s gate is open now, release its held
 * submissions (release.ts). `model`: the configured model (null: no process grades, nothing to
 * release). Returns how many were released.
 */
export async function releaseIfOpen(db: Db, tenantId: string, activityId: string, model: string | null): Promise<number> {
  if (!model) return 0;
  return db.transaction(async (tx) => {
    const [a] = await tx.query<{ rubric_version: number }>('select rubric_version from activities where id = $1 and tenant_id = $2', [activityId, tenantId]);
    if (!a) return 0;
    const gate = await gateState(tx, tenantId, activityId, { rubricVersion: a.rubric_version, model, promptVersion: PROMPT_VERSION });
    // Open with no examples left too (the last one deleted): held submissions go out as uncalibrated.
    return gate.live ? releaseHeld(tx, tenantId, activityId, gate.calibration) : 0;
  });
}

/**
 * Wait for run `runId` to finish — or to wait itself (`waiting`: the tenant's budget is spent or
 * the model is down; it resumes on its own later) — at most `ms` milliseconds, polling its row
 * every `everyMs`; `onProgress` hears each change of its graded count. Returns its last state.
 */
export async function awaitRun(
  deps: Pick<Deps, 'db'>,
  tenantId: string,
  runId: string,
  ms: number,
  onProgress?: (p: RunProgress) => Promise<void>,
  everyMs = 100,
): Promise<RunProgress> {
  const deadline = Date.now() + ms;
  let last = -1;
  for (;;) {
    const p = (await runProgress(deps.db, tenantId, runId))!;
    if (onProgress && p.graded !== last) await onProgress(p).catch(() => {});
    last = p.graded;
    if (p.status === 'done' || p.status === 'failed' || p.status === 'waiting' || Date.now() >= deadline) return p;
    await new Promise((r) => setTimeout(r, Math.min(everyMs, Math.max(1, deadline - Date.now()))));
  }
}
