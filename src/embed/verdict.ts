/**
 * Recording a verdict: the artifact's `verification`, the learner's ActivityResult and the
 * `progress` read model, in the caller's transaction (DESIGN §4: progress is kept current in the
 * same transaction as the verdict that changes it).
 *
 * Exactly once. The artifact row is locked and the verdict is written only while its
 * verification is still `pending`: a second grading of the same artifact (a retried job whose
 * first run had in fact finished, a lease that expired under a slow model) changes nothing and
 * returns false.
 *
 * Score rule (docs/api.md): the result becomes `completed` on a pass (`completed_at` set on the
 * first pass) and `failed` on a failed verdict unless it is already completed, so a pass is never
 * undone by a later failed attempt; its `score` is the best score of all graded attempts;
 * progress(tenant, user, program) gets `last_activity_at`, and `completed_count + 1` only on the
 * result's first transition to `completed` (the result row is locked, so concurrent passes of
 * one learner count once).
 */
import type { Queryable } from '../db/index.ts';

/** The stored verification of a graded artifact: at least these fields (grade-job.ts adds more). */
export interface RecordedVerdict {
  status: 'passed' | 'failed';
  passed: boolean;
  /** 0–100. */
  score: number;
  feedback: string;
}

/** Store `verdict` for artifact `artifactId` of `tenantId` (steps above). False when it was already graded or is gone. */
export async function recordVerdict(tx: Queryable, tenantId: string, artifactId: string, verdict: RecordedVerdict & Record<string, unknown>): Promise<boolean> {
  const [artifact] = await tx.query<{ result_id: string; status: string | null }>(
    `select result_id, verification->>'status' as status from artifacts where id = $1 and tenant_id = $2 for update`,
    [artifactId, tenantId],
  );
  if (!artifact || artifact.status !== 'pending') return false;
  await tx.query(
    `update artifacts set verification = $3::text::jsonb, updated_at = clock_timestamp() where id = $1 and tenant_id = $2`,
    [artifactId, tenantId, JSON.stringify(verdict)],
  );
  const [before] = await tx.query<{ status: string; user_id: string; program_id: string }>(
    'select status, user_id, program_id from activity_results where id = $1 and tenant_id = $2 for update',
    [artifact.result_id, tenantId],
  );
  const firstCompletion = verdict.passed && before!.status !== 'completed';
  await tx.query(
    `update activity_results
        set status = case when $3::boolean or status = 'completed' then 'completed' else 'failed' end,
            completed_at = case when $3::boolean and completed_at is null then now() else completed_at end,
            score = greatest(coalesce(score, 0), $4::numeric),
            updated_at = clock_timestamp()
      where id = $1 and tenant_id = $2`,
    [artifact.result_id, tenantId, verdict.passed, verdict.score],
  );
  await tx.query(
    `insert into progress (tenant_id, user_id, program_id, completed_count, last_activity_at)
     values ($1, $2, $3, $4, now())
     on conflict (tenant_id, user_id, program_id) do update
       set completed_count = progress.completed_count + excluded.completed_count,
           last_activity_at = excluded.last_activity_at,
           updated_at = clock_timestamp()`,
    [tenantId, before!.user_id, before!.program_id, firstCompletion ? 1 : 0],
  );
  return true;
}
