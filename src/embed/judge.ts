/**
 * `POST /v1/embed/judge` — a learner submits an artifact for an activity; it is stored and
 * graded.
 *
 *   Authorization: Bearer <IdP token of the tenant | session access_token>
 *   body {tenant, activity_id, artifact: {kind, ref_url?, repo_url?, content?}}
 *   Idempotency-Key: <key> (optional)
 *   → 200 {status: passed | failed | not_gradable | pending, result_id, artifact_id, score?, passed?, criteria?, feedback?, reason?}
 *   (`criteria`: per-criterion met / score / feedback, grading/verdict-view.ts — the same view as GET /results/{id})
 *
 * 1. Authenticate: a session token of this service whose user is a member of the tenant, or
 *    else an IdP token of the tenant (learner created on first sight). Any failure → 401. A
 *    session bound to another tenant (an embed session's `tenant_id` claim) → 403 `forbidden`.
 *    `ref_url` / `repo_url` that are not http(s), carry credentials, or name a private address
 *    literally (unless SVC_FETCH_ALLOW_PRIVATE) → 400 before anything is written.
 * 2. One transaction: resolve the learner; with an `Idempotency-Key` (idempotency.ts), answer the
 *    submission that key already made, if any, and stop; count the submission against the learner's rate in
 *    the tenant (`learnerRate` per `learnerWindowSeconds`, SVC_JUDGE_LEARNER_*: beyond it 429
 *    `rate_limited` with `Retry-After`); find the activity in the tenant under its program's order lock in
 *    shared mode (migration 0131: a move or an archive of it commits before this read or waits
 *    for this submission) (else 404; archived, or under archived content — migration 0110 — 409
 *    `archived`), check the
 *    artifact's kind (else 400), upsert the learner's ActivityResult (one per learner and
 *    activity; `in_progress` while pending, a `completed` one stays completed), insert the
 *    Artifact (verification `{status: "pending"}`) and its grading job (queue/), and remember
 *    the key. A refusal leaves nothing written; a stored submission always has its job. A
 *    transaction PostgreSQL aborts as a deadlock victim or for serialization runs again
 *    (src/db/rerun.ts; the learner's rate then counts that submission once per run).
 * 3. No model configured in this process → `pending` at once (a process with a model grades it
 *    later). Otherwise wake a worker and wait for the outcome at most `judgeWaitMs`
 *    (SVC_JUDGE_WAIT); none by then (model slow or down, workers busy) → `pending`, and the job
 *    stays queued. Reading, grading, retries, budgets and recording the outcome (grading/verdict.ts:
 *    result, progress, the score rule) happen in the job (grading/grade-job.ts).
 *
 * The response's `status` and `score` are this attempt's: `passed` / `failed` with a score;
 * `not_gradable` (the model could not grade this artifact: not held against the learner) or
 * `failed` without a score (`reason: "model_unavailable"`) with a `reason` and feedback; or
 * `pending` with a `reason` (`queued`, `budget_exhausted`, `review_required`, `calibration_required` (held by the
 * calibration gate, calibration/gate.ts), or the model's
 * failure: `timeout`, `unreachable`, `model_error`, `rate_limited`). A failed attempt after a pass answers
 * `failed`, while the result stays completed.
 */
import { z } from 'zod';
import { rerunOnConflict } from '../db/rerun.ts';
import type { Deps } from '../deps.ts';
import { archived, invalidRequest, notFound } from './errors.ts';
import { refuseUrl } from '../http/outbound.ts';
import { storedOutcome } from './grading/grade-job.ts';
import type { IdpVerifier } from './idp.ts';
import { recall, remember, requestHash } from './idempotency.ts';
import { identifyCaller, sessionTenantId } from './learner.ts';
import type { GradingQueue, JobOutcome } from './queue/index.ts';
import { tenantSlug } from './session.ts';
import { criterionResult, verdictFields } from './grading/verdict-view.ts';
import { ARTIFACT_KINDS } from '../lib/artifact-kinds.ts';

/** Largest `artifact.content`, in UTF-8 bytes. */
export const MAX_CONTENT_BYTES = 256 * 1024;

const httpUrl = z
  .string()
  .max(2048)
  .refine((s) => URL.canParse(s) && /^https?:$/.test(new URL(s).protocol), 'must be an http(s) URL')
  .describe('An http(s) URL.');

export const judgeBody = z.object({
  tenant: tenantSlug,
  activity_id: z.uuid().describe('The activity, which must belong to the tenant.'),
  artifact: z
    .object({
      kind: z.enum(ARTIFACT_KINDS).describe("The kind of work; must equal the activity's kind."),
      ref_url: httpUrl.optional().describe('Where the work can be seen (fetched for grading).'),
      repo_url: httpUrl.optional().describe('The repository of the work: a git URL (cloned over http(s)) or a .tar.gz / .tar archive.'),
      content: z
        .string()
        .refine((s) => Buffer.byteLength(s, 'utf8') <= MAX_CONTENT_BYTES, `must be at most ${MAX_CONTENT_BYTES} bytes`)
        .optional()
        .describe('The work itself: text (Markdown, HTML, source, Mermaid, SVG, draw.io XML…) or a data: URL (an image for a diagram, a PDF).'),
    })
    .refine((a) => a.content !== undefined || a.ref_url !== undefined || a.repo_url !== undefined, {
      message: 'give at least one of content, ref_url, repo_url',
    }),
});
export type JudgeBody = z.infer<typeof judgeBody>;

export const judgeResponse = z.object({
  status: z
    .enum(['passed', 'failed', 'not_gradable', 'pending'])
    .describe("This submission's outcome; pending when not (yet) graded, not_gradable when the model could not grade this artifact."),
  result_id: z.uuid().describe("The learner's ActivityResult for the activity."),
  artifact_id: z.uuid().describe('The stored artifact of this submission.'),
  score: z.number().min(0).max(100).optional().describe('0–100, weighted by the rubric; only with a verdict (passed, failed).'),
  passed: z.boolean().optional().describe('Whether the score reached the pass threshold; only with a verdict.'),
  criteria: z.array(criterionResult).optional().describe('Per-criterion results (met, score, feedback); only with a verdict.'),
  feedback: z.string().optional().describe("The grader's feedback, or why there is no verdict; absent when pending."),
  reason: z
    .string()
    .optional()
    .describe(
      'Why there is no verdict (yet): pending → queued, budget_exhausted, review_required, calibration_required, timeout, unreachable, model_error, rate_limited; ' +
        'not_gradable → unreadable, invalid_output, refused, model_rejected; failed without a score → model_unavailable.',
    ),
});
export type JudgeResponse = z.infer<typeof judgeResponse>;

interface ActivityRow {
  id: string;
  tenant_id: string;
  lesson_id: string;
  program_id: string;
  title: string;
  kind: string;
  spec: string;
  rubric: unknown;
  pass_threshold: number;
  archived: boolean;
}

/** Counts a learner's submission in a tenant; throws 429 `rate_limited` (with Retry-After) beyond the rate. */
export type LearnerLimit = (tenantId: string, svcUserId: string) => Promise<void>;

/**
 * Handle one submission (steps above); `idempotencyKey` is the request's checked
 * `Idempotency-Key`. Returns the answer, and whether it replays an earlier submission.
 * Throws `ApiError` 400/401/403/404/409/422/429.
 */
export async function submitForJudgement(
  deps: Deps,
  services: { idps: IdpVerifier; queue: GradingQueue; limitLearner: LearnerLimit },
  token: string | undefined,
  body: JudgeBody,
  idempotencyKey?: string,
): Promise<{ answer: JudgeResponse; replayed: boolean }> {
  const caller = await identifyCaller(deps, services.idps, token, body.tenant);
  for (const field of ['ref_url', 'repo_url'] as const) {
    const value = body.artifact[field];
    const refusal = value === undefined ? undefined : refuseUrl(new URL(value), deps.config.fetchAllowPrivate);
    if (refusal) throw invalidRequest(`artifact.${field}: ${refusal}`);
  }

  // Step 1: the learner, the activity, the result and the artifact — all or nothing; run again
  // if PostgreSQL aborts it as a deadlock victim (its program lock meets a concurrent move's).
  const submission = await rerunOnConflict(() =>
    deps.db.transaction(async (tx) => {
      const { tenantId, svcUserId } =
        caller.kind === 'session'
          ? { tenantId: await sessionTenantId(tx, body.tenant, caller.svcUserId, caller.boundTenantId), svcUserId: caller.svcUserId }
          : await caller.verify(tx);
      const hash = idempotencyKey === undefined ? '' : requestHash(body);
      if (idempotencyKey !== undefined) {
        const earlier = await recall(tx, tenantId, svcUserId, idempotencyKey, hash);
        if (earlier) return { replayed: true as const, tenantId, resultId: earlier.resultId, artifactId: earlier.artifactId };
      }
      await services.limitLearner(tenantId, svcUserId);
      // The activity's program order lock, shared (migration 0131): a move or an archive of the
      // activity either waits for this submission (and then sees its result) or commits before
      // the read below, which then sees the activity's new lesson, program or archived state.
      await tx.query('select svc.lock_activity_program($1, $2)', [body.activity_id, tenantId]);
      const [activity] = await tx.query<ActivityRow>(
        `select id, tenant_id, lesson_id, program_id, title, kind, spec, rubric, pass_threshold, archived
         from activities where id = $1 and tenant_id = $2`,
        [body.activity_id, tenantId],
      );
      if (!activity) throw notFound(`activity ${body.activity_id} not found`);
      if (activity.archived) throw archived(`activity ${body.activity_id} is archived: it no longer accepts submissions`);
      if (activity.kind !== body.artifact.kind) {
        throw invalidRequest(`artifact.kind: this activity expects a ${activity.kind}, not a ${body.artifact.kind}`);
      }
      const [result] = await tx.query<{ id: string }>(
        `insert into activity_results (tenant_id, activity_id, lesson_id, program_id, user_id, status)
       values ($1, $2, $3, $4, $5, 'in_progress')
       on conflict (tenant_id, activity_id, user_id) do update
         set status = case when activity_results.status = 'completed' then 'completed' else 'in_progress' end,
             updated_at = clock_timestamp()
       returning id`,
        [tenantId, activity.id, activity.lesson_id, activity.program_id, svcUserId],
      );
      const [artifact] = await tx.query<{ id: string }>(
        `insert into artifacts (tenant_id, result_id, activity_id, user_id, kind, ref_url, repo_url, content, verification)
       values ($1, $2, $3, $4, $5, $6, $7, $8, '{"status": "pending"}'::jsonb)
       returning id`,
        [
          tenantId,
          result!.id,
          activity.id,
          svcUserId,
          body.artifact.kind,
          body.artifact.ref_url ?? null,
          body.artifact.repo_url ?? null,
          body.artifact.content ?? null,
        ],
      );
      await services.queue.enqueue(tx, { artifact_id: artifact!.id, tenant_id: tenantId });
      if (idempotencyKey !== undefined) await remember(tx, tenantId, svcUserId, idempotencyKey, hash, { resultId: result!.id, artifactId: artifact!.id });
      return { replayed: false as const, tenantId, resultId: result!.id, artifactId: artifact!.id };
    }),
  );
  const answer = (a: JudgeResponse) => ({ answer: a, replayed: submission.replayed });
  const pending: JudgeResponse = { status: 'pending', result_id: submission.resultId, artifact_id: submission.artifactId };
  if (submission.replayed) return answer(fromOutcome(pending, await storedOutcome(deps, submission.tenantId, submission.artifactId)));
  if (!services.queue.working) return answer({ ...pending, reason: 'queued' });

  // Step 2: wait for the verdict (a worker of this process grades it; queue/, grading/grade-job.ts).
  const waiting = services.queue.waitFor(submission.artifactId, deps.config.embed.judgeWaitMs);
  services.queue.kick();
  const outcome =
    (await waiting) ??
    // Not in time here: perhaps another process graded it.
    (await storedOutcome(deps, submission.tenantId, submission.artifactId));
  return answer(fromOutcome(pending, outcome));
}

/** The answer for `outcome` of the submission `pending` names. */
const fromOutcome = (pending: JudgeResponse, outcome: JobOutcome): JudgeResponse => ({ ...pending, ...verdictFields(outcome) });
