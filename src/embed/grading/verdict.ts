/**
 * Recording the outcome of a grading: the artifact's `verification`, the learner's ActivityResult
 * and the `progress` read model, in the caller's transaction (DESIGN §4: progress is kept current
 * in the same transaction as the verdict that changes it).
 *
 * Exactly once. The artifact row is locked and the outcome is written only while its
 * verification is still `pending`: a second grading of the same artifact (a retried job whose
 * first run had in fact finished, a lease that expired under a slow model) changes nothing and
 * returns false.
 *
 * What an outcome does to the result (`Effect`; docs/api.md "Score rule"):
 * - `pass` — the result becomes `completed` (`completed_at` set on the first pass), its `score`
 *   the best graded score, and progress counts the activity once, on the result's first
 *   transition to `completed` (the result row is locked, so concurrent passes count once);
 * - `fail` — the result becomes `failed` unless it is already completed (a grading never undoes a
 *   pass; only an instructor's override does, override.ts);
 *   a graded failure may still raise the best score; `model_unavailable` carries no score;
 * - `hold` — a pass flagged as a possible prompt injection: the result stays as it is
 *   (`in_progress` unless an earlier pass completed it) until an admin approves (`pass`) or
 *   rejects (`fail`) it; the hold files an `injection` review in the review queue (review.ts);
 * - `none` — `not_gradable`: the artifact could not be graded, which is not held against the
 *   learner: the result is left as it is.
 * Every outcome stamps progress' `last_activity_at` except `none`.
 */
import type { Queryable } from '../../db/index.ts';
import { moveProgress } from './progress.ts';
import { fileInjectionReview } from './review.ts';

/** The stored verification of a finished grading: at least these fields (grade-job.ts adds provenance). */
export interface RecordedOutcome {
  status: 'passed' | 'failed' | 'not_gradable';
  feedback: string;
}

export type Effect = { kind: 'pass'; score: number } | { kind: 'fail'; score: number | null } | { kind: 'hold' } | { kind: 'none' };

/**
 * Store `verification` for artifact `artifactId` of `tenantId` and apply `effect` to its
 * result and progress (rules above). False when it was already graded or is gone.
 */
export async function recordOutcome(
  tx: Queryable,
  tenantId: string,
  artifactId: string,
  verification: RecordedOutcome & Record<string, unknown>,
  effect: Effect,
): Promise<boolean> {
  const [artifact] = await tx.query<{ result_id: string; status: string | null }>(
    `select result_id, verification->>'status' as status from artifacts where id = $1 and tenant_id = $2 for update`,
    [artifactId, tenantId],
  );
  if (artifact?.status !== 'pending') return false;
  await tx.query(`update artifacts set verification = $3::text::jsonb, updated_at = clock_timestamp() where id = $1 and tenant_id = $2`, [
    artifactId,
    tenantId,
    JSON.stringify(verification),
  ]);
  await applyToResult(tx, tenantId, artifact.result_id, effect);
  if (effect.kind === 'hold') await fileInjectionReview(tx, tenantId, artifactId);
  return true;
}

/** Apply `effect` to result `resultId` of `tenantId` and its progress row (rules in the header). */
export async function applyToResult(tx: Queryable, tenantId: string, resultId: string, effect: Effect): Promise<void> {
  if (effect.kind === 'none') return;
  const [before] = await tx.query<{ status: string; user_id: string; program_id: string }>(
    'select status, user_id, program_id from activity_results where id = $1 and tenant_id = $2 for update',
    [resultId, tenantId],
  );
  if (!before) return;
  const firstCompletion = effect.kind === 'pass' && before.status !== 'completed';
  if (effect.kind !== 'hold') {
    await tx.query(
      `update activity_results
          set status = case when $3::boolean or status = 'completed' then 'completed' else 'failed' end,
              completed_at = case when $3::boolean and completed_at is null then now() else completed_at end,
              score = case when $4::numeric is null then score else greatest(coalesce(score, 0), $4::numeric) end,
              updated_at = clock_timestamp()
        where id = $1 and tenant_id = $2`,
      [resultId, tenantId, effect.kind === 'pass', effect.score],
    );
  }
  await moveProgress(tx, { tenant_id: tenantId, user_id: before.user_id, program_id: before.program_id }, firstCompletion ? 1 : 0);
}
