/**
 * The review queue (issue #21 "Learner appeals"; issue #10 "Injection held for review"): one table,
 * `reviews` (migration 0142), of two kinds —
 *
 * - `injection`: a pass flagged as a possible prompt injection (injection/, or the model's own
 *   answer) is recorded with `verification.review = "required"` and does not count (verdict.ts
 *   `hold`, which files this review): its result stays as it was until someone decides;
 * - `appeal`: a learner asks for a review of a graded verdict (../appeal.ts; at most one open
 *   appeal per result).
 *
 * A review is `open` until resolved, once, by an author of the tenant (MCP `resolve_review`, as
 * the author under RLS) or an admin (`svc review approve|reject`, src/admin/ops/judge.ts):
 * - `uphold` → `upheld`: the model's verdict stands. For a held pass that means it counts as if it
 *   had not been held — `review: "approved"`, the result `completed` with the held score, progress
 *   counted once (verdict.ts `pass`);
 * - `override` → `overridden`: an override (override.ts) of the review's artifact, which also
 *   resolves every other open review of the result. `svc review reject` is an override with
 *   `passed: false`.
 * Resolving a review that is not open is `already_resolved`; an unknown one (or another tenant's,
 * under RLS) is `not_found`.
 */
import { audit } from '../../audit/index.ts';
import type { Queryable } from '../../db/index.ts';
import { applyOverride, holdDecision, lockResult, ReviewError } from './override.ts';
import { applyToResult } from './verdict.ts';

export type ReviewKind = 'appeal' | 'injection';
export type ReviewStatus = 'open' | 'upheld' | 'overridden';

/** One review of the queue, as `list_reviews` and `svc review list` show it. */
export interface Review {
  id: string;
  kind: ReviewKind;
  status: ReviewStatus;
  result_id: string;
  artifact_id: string;
  activity_id: string;
  activity_title: string;
  svc_user_id: string;
  /** The learner's words (appeals). */
  message?: string;
  /** What flagged it (`heuristic: …`, `model: …`), for injection holds. */
  signals?: string[];
  /** The model's score of the artifact, 0–100. */
  score?: number;
  /** RFC 3339. */
  created_at: string;
  resolved_at?: string;
  /** svc_user_id of the author who resolved it; absent for an admin. */
  resolved_by?: string;
  reason?: string;
}

const REVIEW_SQL = `
  select v.id, v.kind, v.status, v.result_id, v.artifact_id, a.activity_id, coalesce(act.title, '') as activity_title,
         v.user_id as svc_user_id, v.message,
         case when v.kind = 'injection'
              then coalesce(array(select jsonb_array_elements_text(a.verification->'injection'->'signals')), '{}') end as signals,
         coalesce((a.verification->'override'->'previous'->>'score')::float8, (a.verification->>'score')::float8) as score,
         to_json(v.created_at) #>> '{}' as created_at, to_json(v.resolved_at) #>> '{}' as resolved_at,
         v.resolved_by, v.reason
    from reviews v
    join artifacts a on a.tenant_id = v.tenant_id and a.id = v.artifact_id
    left join activities act on act.id = a.activity_id`;

/** Drop the null fields of a review row (optional fields are absent, not null). */
const clean = (row: Record<string, unknown>): Review => Object.fromEntries(Object.entries(row).filter(([, value]) => value !== null)) as unknown as Review;

/**
 * The reviews the caller may see, oldest first — (created_at, id) order — at most `limit`: of
 * tenant `tenantId` when given, in `status` when given, after the review at `after` (keyset: its
 * `created_at` as RFC 3339 and its id) when given. As an author under RLS that is the tenants they
 * author — `authorOnly` keeps a learner's own appeals (which RLS also shows them) out; as the
 * owner, everything.
 */
export async function listReviews(
  q: Queryable,
  filter: { tenantId?: string; status?: ReviewStatus; resultId?: string; authorOnly?: boolean; after?: { createdAt: string; id: string } },
  limit = 500,
): Promise<Review[]> {
  const rows = await q.query<Record<string, unknown>>(
    `${REVIEW_SQL}
      where ($1::uuid is null or v.tenant_id = $1::uuid) and ($2::text is null or v.status = $2::text)
        and ($3::uuid is null or v.result_id = $3::uuid)
        and (not $4::boolean or v.tenant_id in (select public.current_author_tenant_ids()))
        and ($6::timestamptz is null or (v.created_at, v.id) > ($6::timestamptz, $7::uuid))
      order by v.created_at, v.id
      limit $5`,
    [
      filter.tenantId ?? null,
      filter.status ?? null,
      filter.resultId ?? null,
      filter.authorOnly ?? false,
      limit,
      filter.after?.createdAt ?? null,
      filter.after?.id ?? null,
    ],
  );
  return rows.map(clean);
}

/** Review `id` as the caller sees it, or undefined. */
async function reviewById(q: Queryable, id: string): Promise<Review | undefined> {
  const [row] = await q.query<Record<string, unknown>>(`${REVIEW_SQL} where v.id = $1`, [id]);
  return row && clean(row);
}

/** File the injection review of held artifact `artifactId` (verdict.ts `hold`); once per artifact. */
export async function fileInjectionReview(tx: Queryable, tenantId: string, artifactId: string): Promise<void> {
  await tx.query(
    `insert into reviews (tenant_id, kind, result_id, artifact_id, user_id)
     select tenant_id, 'injection', result_id, id, user_id from artifacts where tenant_id = $1 and id = $2
     on conflict (tenant_id, artifact_id) where kind = 'injection' do nothing`,
    [tenantId, artifactId],
  );
}

export interface Resolution {
  reviewId: string;
  decision: 'uphold' | 'override';
  /** Required for `override`, refused for `uphold`. */
  passed?: boolean;
  /** 0–100; only with `override`. */
  score?: number;
  /** 1..1000 characters (optional for admins). */
  reason?: string;
  /** svc_user_id of the author; null for an admin. */
  by: string | null;
  now: Date;
}

/**
 * Resolve one open review (header). Locks the result (override.ts `lockResult`: artifacts, then the
 * result), then the review, so it queues behind a concurrent override or grading of the same
 * result. Returns the review after. Throws `ReviewError` (not_found, already_resolved, invalid).
 */
export async function resolveReview(tx: Queryable, r: Resolution): Promise<Review> {
  if (r.decision === 'override' && r.passed === undefined) throw new ReviewError('invalid', 'passed: required when decision is "override"');
  if (r.decision === 'uphold' && (r.passed !== undefined || r.score !== undefined)) {
    throw new ReviewError('invalid', 'passed, score: only with decision "override" (uphold keeps the model\'s verdict)');
  }
  const [found] = await tx.query<{ result_id: string }>('select result_id from reviews where id = $1', [r.reviewId]);
  if (!found) throw new ReviewError('not_found', `review ${r.reviewId} not found`);
  const locked = await lockResult(tx, found.result_id).catch((err) => {
    // a learner sees their own appeal, but cannot lock its result (no update policy of theirs)
    throw err instanceof ReviewError && err.code === 'not_found' ? new ReviewError('not_found', `review ${r.reviewId} not found`) : err;
  });
  const [review] = await tx.query<{ kind: ReviewKind; status: ReviewStatus; artifact_id: string }>(
    'select kind, status, artifact_id from reviews where tenant_id = $1 and id = $2 for update',
    [locked.tenant_id, r.reviewId],
  );
  if (!review) throw new ReviewError('not_found', `review ${r.reviewId} not found`);
  if (review.status !== 'open') throw new ReviewError('already_resolved', `review ${r.reviewId} is already resolved (${review.status})`);

  if (r.decision === 'override') {
    if (!r.reason) throw new ReviewError('invalid', 'reason: required for an override');
    await applyOverride(tx, {
      resultId: found.result_id,
      artifactId: review.artifact_id,
      passed: r.passed!,
      score: r.score,
      reason: r.reason,
      by: r.by,
      now: r.now,
    });
  } else {
    if (review.kind === 'injection') await approveHeld(tx, locked.tenant_id, found.result_id, [review.artifact_id], r.now);
    await tx.query(`update reviews set status = 'upheld', resolved_at = $3, resolved_by = $4, reason = $5 where tenant_id = $1 and id = $2`, [
      locked.tenant_id,
      r.reviewId,
      r.now.toISOString(),
      r.by,
      r.reason ?? null,
    ]);
    await audit(tx, {
      tenantId: locked.tenant_id,
      action: 'review.uphold',
      target: { type: 'review', id: r.reviewId },
      detail: { kind: review.kind, result_id: found.result_id },
    });
  }
  return (await reviewById(tx, r.reviewId))!;
}

/** Count held passes `artifactIds` of result `resultId`: approved, the result completed with the best held score. */
async function approveHeld(tx: Queryable, tenantId: string, resultId: string, artifactIds: string[], now: Date): Promise<void> {
  const held = await tx.query<{ id: string; score: number }>(
    `update artifacts set verification = verification || $3::text::jsonb, updated_at = clock_timestamp()
      where tenant_id = $1 and id = any($2::uuid[]) and verification->>'review' = 'required'
      returning id, (verification->>'score')::float8 as score`,
    [tenantId, artifactIds, JSON.stringify(holdDecision(true, now))],
  );
  if (!held.length) return;
  await applyToResult(tx, tenantId, resultId, { kind: 'pass', score: Math.max(...held.map((h) => Number(h.score) || 0)) });
}

/**
 * `svc review approve|reject <result_id>` (admin, as the owner): resolve every open review of the
 * result — approve upholds each one; reject overrides the result to a fail (the newest held
 * artifact, else the latest graded one). Returns how many were decided and the result's status
 * after, or undefined when nothing of the result was open.
 */
export async function decide(
  tx: Queryable,
  tenantId: string,
  resultId: string,
  decision: 'approve' | 'reject',
  now: Date,
): Promise<{ decided: number; status: string } | undefined> {
  const locked = await lockResult(tx, resultId).catch((err) => {
    if (err instanceof ReviewError) return undefined;
    throw err;
  });
  if (!locked || locked.tenant_id !== tenantId) return undefined;
  const open = await tx.query<{ id: string; kind: ReviewKind; artifact_id: string }>(
    `select id, kind, artifact_id from reviews where tenant_id = $1 and result_id = $2 and status = 'open' order by created_at desc, id desc for update`,
    [tenantId, resultId],
  );
  if (!open.length) return undefined;
  if (decision === 'approve') {
    for (const review of open) await resolveReview(tx, { reviewId: review.id, decision: 'uphold', reason: 'approved with svc review approve', by: null, now });
  } else {
    const held = open.find((o) => o.kind === 'injection');
    await applyOverride(tx, { resultId, artifactId: held?.artifact_id, passed: false, reason: 'rejected with svc review reject', by: null, now });
  }
  const [result] = await tx.query<{ status: string }>('select status from activity_results where tenant_id = $1 and id = $2', [tenantId, resultId]);
  return { decided: open.length, status: result!.status };
}
