/**
 * Human override of a verdict (issue #21 "Human override"): an author of the result's tenant — or
 * an admin through `svc review reject` — replaces the judge's verdict on a learner's result. It is
 * the one way a pass can be undone, it applies at once, and it keeps both verdicts.
 *
 * `applyOverride` runs in the caller's transaction — as the author under RLS for the MCP tools
 * (migration 0142: authors read their tenants' results, artifacts and progress and may change only
 * what an override changes; anyone else finds no result), as the owner for the CLI:
 *
 * 1. Lock the result's artifacts, then the result row (`lockResult`): the order every writer of a
 *    result keeps (the grading locks its artifact, then the result: verdict.ts), so an override, a
 *    second override and a grading finishing meanwhile queue up instead of deadlocking.
 * 2. The artifact overridden: the one named (a review's), else the result's latest graded one (not
 *    `pending`; a pass held for review counts as graded). None → `no_verdict`.
 * 3. The artifact's `verification`: top-level `status` / `passed` / `score` become the override's
 *    (`score`: the one given, else the model's kept), a held pass leaves the hold (`review:
 *    "approved" | "rejected"`, `reviewed_at`), and `override = {by, at, reason, previous}` records
 *    who (svc_user_id of the author; null for an admin), when (RFC 3339), why, and `previous` —
 *    the model's own verdict `{status, passed, score}` (a second override keeps the model's, not the
 *    first override's: that one is in the audit). Everything else the judge wrote stays.
 *    Other held artifacts of the result leave the hold the same way. Submissions of the result the
 *    calibration gate holds (calibration/release.ts) were made before this decision: released
 *    later, their verdict is recorded (with `superseded_by_override`: this override's time) and
 *    leaves the result as decided here.
 * 4. The result: `completed` (completed_at kept, or now) when passed, `failed` (completed_at null)
 *    when not; `score` the one given, else the result's best score kept (a held pass, which never
 *    raised it, gives its own).
 * 5. Progress counts the activity once: +1 when the result becomes completed, −1 when a completed
 *    result is overridden to a fail; `last_activity_at` and `updated_at` move either way.
 * 6. The audit row (`verdict_overrides`: by, at, reason, result, artifact, before/after) and every
 *    open review of the result resolved `overridden` with the same reason.
 * The writes move `updated_at` of the result, the artifact and the progress row (migration 0020's
 * trigger), so the Results API's `updated_since` feed hands them out again.
 */
import { audit } from '../../audit/index.ts';
import type { Queryable } from '../../db/index.ts';
import { CALIBRATION_REQUIRED } from '../calibration/release.ts';
import { moveProgress } from './progress.ts';

/** Why a review or override was refused; the surfaces turn it into their own error. */
export class ReviewError extends Error {
  constructor(
    readonly code: 'not_found' | 'no_verdict' | 'already_resolved' | 'invalid',
    message: string,
  ) {
    super(message);
    this.name = 'ReviewError';
  }
}

/** The longest override or resolution reason, and appeal message, in characters. */
export const MAX_REASON_CHARS = 1000;

/** A verdict's top line: `previous` of an override. */
export interface VerdictLine {
  status: string;
  passed: boolean | null;
  /** 0–100, or null when the verdict had no score. */
  score: number | null;
}

/** What `verification.override` holds. */
export interface OverrideRecord {
  /** svc_user_id of the author; null for an admin (`svc review reject`). */
  by: string | null;
  /** RFC 3339. */
  at: string;
  reason: string;
  /** The model's verdict. */
  previous: VerdictLine;
}

export interface OverrideRequest {
  resultId: string;
  passed: boolean;
  /** 0–100; default: the model's score. */
  score?: number;
  /** 1..1000 characters. */
  reason: string;
  by: string | null;
  /** The artifact to override (a review's); default: the result's latest graded artifact. */
  artifactId?: string;
  now: Date;
}

export interface OverrideApplied {
  result_id: string;
  artifact_id: string;
  /** The result after: status, best score (0–100 or null), completed_at (RFC 3339 or null). */
  result: { status: 'completed' | 'failed'; score: number | null; completed_at: string | null };
  /** The artifact's verdict after. */
  verdict: { status: 'passed' | 'failed'; passed: boolean; score: number };
  override: OverrideRecord;
  /** The audit row. */
  audit_id: string;
  /** Open reviews of the result this override resolved. */
  resolved_reviews: string[];
}

interface ArtifactRow {
  id: string;
  verification: Record<string, unknown> | null;
}

export interface LockedResult {
  tenant_id: string;
  id: string;
  user_id: string;
  program_id: string;
  status: 'completed' | 'in_progress' | 'failed';
  score: number | null;
  completed_at: string | null;
  /** Its artifacts, newest first, locked. */
  artifacts: ArtifactRow[];
}

/**
 * Lock result `resultId` — its artifacts first, then its row (header, step 1) — as the caller
 * sees it. Throws `not_found` when the caller cannot lock it (unknown, another tenant's, or — under
 * RLS — not a result of a tenant the caller authors: locking needs migration 0142's update policies).
 */
export async function lockResult(tx: Queryable, resultId: string): Promise<LockedResult> {
  const [found] = await tx.query<{ tenant_id: string }>('select tenant_id from activity_results where id = $1', [resultId]);
  const artifacts = found
    ? await tx.query<ArtifactRow & { created_at: string }>(
        `select id, verification, created_at::text from artifacts where tenant_id = $1 and result_id = $2 order by id for update`,
        [found.tenant_id, resultId],
      )
    : [];
  const [row] = found
    ? await tx.query<Omit<LockedResult, 'artifacts'>>(
        `select tenant_id, id, user_id, program_id, status, score::float8 as score, to_json(completed_at) #>> '{}' as completed_at
           from activity_results where tenant_id = $1 and id = $2 for update`,
        [found.tenant_id, resultId],
      )
    : [];
  if (!row || artifacts.length === 0) throw new ReviewError('not_found', `result ${resultId} not found`);
  artifacts.sort((a, b) => (a.created_at < b.created_at ? 1 : a.created_at > b.created_at ? -1 : a.id < b.id ? 1 : -1));
  return { ...row, artifacts };
}

/** Whether stored verification `v` is a graded verdict (anything but pending; a held pass is graded). */
const isGraded = (v: Record<string, unknown> | null): boolean => v !== null && (v.status === 'passed' || v.status === 'failed' || v.status === 'not_gradable');

const numberOrNull = (x: unknown): number | null => (typeof x === 'number' ? x : null);

/** The model's verdict of `v`: an earlier override's `previous`, else its top line. */
function modelVerdict(v: Record<string, unknown>): VerdictLine {
  const earlier = (v.override as OverrideRecord | undefined)?.previous;
  if (earlier) return earlier;
  return { status: String(v.status), passed: typeof v.passed === 'boolean' ? v.passed : null, score: numberOrNull(v.score) };
}

/** The patch that takes a held artifact out of the hold: approved (it counts) or rejected. */
export const holdDecision = (approved: boolean, now: Date) =>
  approved ? { review: 'approved', reviewed_at: now.toISOString() } : { review: 'rejected', status: 'failed', passed: false, reviewed_at: now.toISOString() };

/** Apply an override (header). Throws `ReviewError` (not_found, no_verdict, invalid). */
export async function applyOverride(tx: Queryable, req: OverrideRequest): Promise<OverrideApplied> {
  const locked = await lockResult(tx, req.resultId);
  const target = req.artifactId ? locked.artifacts.find((a) => a.id === req.artifactId) : locked.artifacts.find((a) => isGraded(a.verification));
  if (!target || !isGraded(target.verification)) {
    throw new ReviewError('no_verdict', `result ${req.resultId} has no graded verdict yet: wait for the grading to finish`);
  }
  const v = target.verification!;
  const previous = modelVerdict(v);
  const score = req.score ?? numberOrNull(v.score) ?? previous.score;
  if (score === null) throw new ReviewError('invalid', 'score: required — the verdict has no score to keep (give 0–100)');
  const at = req.now.toISOString();
  const override: OverrideRecord = { by: req.by, at, reason: req.reason, previous };
  const status = req.passed ? 'passed' : 'failed';
  const before = { status: v.status, passed: v.passed ?? null, score: numberOrNull(v.score), result_status: locked.status, result_score: locked.score };

  // Step 3: the artifacts.
  const wasHeld = v.review === 'required';
  const next = { ...v, status, passed: req.passed, score, ...(wasHeld && holdDecision(req.passed, req.now)), override };
  await tx.query(`update artifacts set verification = $3::text::jsonb, updated_at = clock_timestamp() where tenant_id = $1 and id = $2`, [
    locked.tenant_id,
    target.id,
    JSON.stringify(next),
  ]);
  const otherHeld = locked.artifacts.filter((a) => a.id !== target.id && a.verification?.review === 'required').map((a) => a.id);
  if (otherHeld.length) {
    await tx.query(
      `update artifacts set verification = verification || $3::text::jsonb, updated_at = clock_timestamp() where tenant_id = $1 and id = any($2::uuid[])`,
      [locked.tenant_id, otherHeld, JSON.stringify(holdDecision(req.passed, req.now))],
    );
  }

  // Submissions of the result held by the calibration gate were made before this decision: once
  // released, their verdict is recorded but leaves the result as decided here (effect none).
  await tx.query(
    `update artifacts
        set verification = jsonb_set(jsonb_set(verification, '{held,effect}', '{"kind":"none"}'), '{held,verification,superseded_by_override}', to_jsonb($3::text)),
            updated_at = clock_timestamp()
      where tenant_id = $1 and result_id = $2 and verification->>'status' = 'pending' and verification->>'reason' = $4`,
    [locked.tenant_id, locked.id, at, CALIBRATION_REQUIRED],
  );

  // Steps 4 and 5: the result and progress.
  const resultScore = req.score ?? locked.score ?? (req.passed ? score : null);
  const [after] = await tx.query<OverrideApplied['result']>(
    `update activity_results
        set status = $3, completed_at = case when $4::boolean then coalesce(completed_at, now()) else null end,
            score = $5::numeric, updated_at = clock_timestamp()
      where tenant_id = $1 and id = $2
      returning status, score::float8 as score, to_json(completed_at) #>> '{}' as completed_at`,
    [locked.tenant_id, locked.id, req.passed ? 'completed' : 'failed', req.passed, resultScore],
  );
  const delta = req.passed && locked.status !== 'completed' ? 1 : !req.passed && locked.status === 'completed' ? -1 : 0;
  await moveProgress(tx, locked, delta);

  // Step 6: the audit and the queue.
  const [overrideRow] = await tx.query<{ id: string }>(
    `insert into verdict_overrides (tenant_id, result_id, artifact_id, by_user_id, reason, before, after, created_at)
     values ($1, $2, $3, $4, $5, $6::text::jsonb, $7::text::jsonb, $8) returning id`,
    [
      locked.tenant_id,
      locked.id,
      target.id,
      req.by,
      req.reason,
      JSON.stringify(before),
      JSON.stringify({ status, passed: req.passed, score, result_status: after!.status, result_score: after!.score }),
      at,
    ],
  );
  await audit(tx, {
    tenantId: locked.tenant_id,
    action: 'verdict.override',
    target: { type: 'activity_result', id: locked.id },
    detail: { artifact_id: target.id, override_id: overrideRow!.id, passed: req.passed, score },
  });
  const resolved = await tx.query<{ id: string }>(
    `update reviews set status = 'overridden', resolved_at = $3, resolved_by = $4, reason = $5
      where tenant_id = $1 and result_id = $2 and status = 'open' returning id`,
    [locked.tenant_id, locked.id, at, req.by, req.reason],
  );
  return {
    result_id: locked.id,
    artifact_id: target.id,
    result: after!,
    verdict: { status, passed: req.passed, score },
    override,
    audit_id: overrideRow!.id,
    resolved_reviews: resolved.map((r) => r.id),
  };
}
