/**
 * Submissions held for review (issue #10 "Injection held for review"): a pass whose artifact was
 * flagged as a possible prompt injection (injection/, or the model's own answer) is recorded
 * with `verification.review = "required"` and does not count (verdict.ts `hold`): its result
 * stays `in_progress` and progress does not move until an admin decides, through
 * `svc review list <tenant>` and `svc review approve|reject <result_id>` (src/admin/ops.ts).
 *
 * - approve: every held artifact of the result gets `review: "approved"`, and the pass counts as
 *   if it had not been held — the result becomes `completed` with the best held score, and
 *   progress counts the activity once (verdict.ts `pass`);
 * - reject: every held artifact gets `review: "rejected"` and `status: "failed"` (the model's
 *   score stays on the artifact for the record), and the result becomes `failed` unless an
 *   earlier pass completed it; its score is not raised (verdict.ts `fail`).
 * Both stamp `reviewed_at`. Deciding a result with nothing held is `not_found`.
 */
import type { Queryable } from '../../db/index.ts';
import { applyToResult } from './verdict.ts';

/** One held submission, as `svc review list` shows it. */
export interface HeldSubmission {
  result_id: string;
  artifact_id: string;
  activity_id: string;
  activity_title: string;
  svc_user_id: string;
  /** The model's score, 0–100. */
  score: number;
  /** What flagged it (`heuristic: …`, `model: …`). */
  signals: string[];
  /** RFC 3339. */
  submitted_at: string;
}

/** The held submissions of `tenantId`, oldest first (at most `limit`). */
export function listHeld(q: Queryable, tenantId: string, limit = 500): Promise<HeldSubmission[]> {
  return q.query<HeldSubmission>(
    `select a.result_id, a.id as artifact_id, a.activity_id, act.title as activity_title, a.user_id as svc_user_id,
            (a.verification->>'score')::float8 as score,
            coalesce(array(select jsonb_array_elements_text(a.verification->'injection'->'signals')), '{}') as signals,
            to_json(a.created_at) #>> '{}' as submitted_at
       from artifacts a join activities act on act.id = a.activity_id
      where a.tenant_id = $1 and (a.verification->>'review') = 'required'
      order by a.created_at, a.id
      limit $2`,
    [tenantId, limit],
  );
}

/**
 * Approve or reject the held artifacts of result `resultId` in `tenantId` (rules above); returns
 * how many were decided and the result's status after, or undefined when nothing was held.
 */
export async function decide(
  tx: Queryable,
  tenantId: string,
  resultId: string,
  decision: 'approve' | 'reject',
  now: Date,
): Promise<{ decided: number; status: string } | undefined> {
  const held = await tx.query<{ id: string; score: number }>(
    `select id, (verification->>'score')::float8 as score from artifacts
      where tenant_id = $1 and result_id = $2 and (verification->>'review') = 'required'
      order by id for update`,
    [tenantId, resultId],
  );
  if (!held.length) return undefined;
  const patch = decision === 'approve' ? { review: 'approved' } : { review: 'rejected', status: 'failed', passed: false };
  await tx.query(
    `update artifacts set verification = verification || $3::text::jsonb, updated_at = clock_timestamp()
      where tenant_id = $1 and id = any($2::uuid[])`,
    [tenantId, held.map((h) => h.id), JSON.stringify({ ...patch, reviewed_at: now.toISOString() })],
  );
  const best = Math.max(...held.map((h) => Number(h.score) || 0));
  await applyToResult(tx, tenantId, resultId, decision === 'approve' ? { kind: 'pass', score: best } : { kind: 'fail', score: null });
  const [result] = await tx.query<{ status: string }>('select status from activity_results where tenant_id = $1 and id = $2', [tenantId, resultId]);
  return { decided: held.length, status: result!.status };
}
