/**
 * `POST /v1/embed/judge` — a learner submits an artifact for an activity; it is stored and
 * graded.
 *
 *   Authorization: Bearer <IdP token of the tenant | session access_token>
 *   body {tenant, activity_id, artifact: {kind, ref_url?, repo_url?, content?}}
 *   → 200 {status: passed | failed | pending, result_id, artifact_id, score?, feedback?}
 *
 * 1. Authenticate: a session token of this service whose user is a member of the tenant, or
 *    else an IdP token of the tenant (learner created on first sight). Any failure → 401.
 * 2. Step 1, one transaction: resolve the learner, find the activity in the tenant (else 404),
 *    check the artifact's kind (else 400), upsert the learner's ActivityResult (one per learner
 *    and activity; `in_progress` while pending, a `completed` one stays completed) and insert
 *    the Artifact (verification `{status: "pending"}`). A refusal leaves nothing written.
 * 3. No model configured → `pending`. Otherwise grade outside any transaction (grader.ts,
 *    bounded by the judge's timeout). A failed model call → `pending`; the artifact's
 *    verification records `{status: "pending", error, attempted_at}` and the result stays
 *    in_progress. (A later issue adds a durable job queue that retries pending artifacts.)
 * 4. Step 3, one transaction: store the verdict in the artifact; the result becomes `completed`
 *    on a pass (completed_at set on the first pass) or `failed` (never undoing a pass); its score
 *    is the best of all attempts; progress(tenant, user, program) gets `last_activity_at`, and
 *    `completed_count + 1` only on the result's first transition to completed (the result row is
 *    locked, so concurrent passes count once).
 *
 * The response's `status` and `score` are this attempt's verdict (a failed attempt after a pass
 * answers `failed`, while the result stays completed).
 */
import type { FastifyBaseLogger } from 'fastify';
import { z } from 'zod';
import type { Queryable } from '../db/index.ts';
import type { Deps } from '../deps.ts';
import { invalidRequest, notFound, unauthorized } from './errors.ts';
import { refuseUrl } from './fetch-page.ts';
import { GraderError, type Grader, type Verdict } from './grader.ts';
import { findTenantIdp, type IdpVerifier } from './idp.ts';
import { findOrCreateIdpLearner, memberTenantId, trySessionToken } from './learner.ts';
import { tenantSlug } from './session.ts';

/** Largest `artifact.content`, in UTF-8 bytes. */
export const MAX_CONTENT_BYTES = 256 * 1024;
const KINDS = ['diagram', 'document', 'site', 'repo'] as const;

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
      kind: z.enum(KINDS).describe("The kind of work; must equal the activity's kind."),
      ref_url: httpUrl.optional().describe('Where the work can be seen (fetched for grading).'),
      repo_url: httpUrl.optional().describe('The repository of the work (not fetched).'),
      content: z
        .string()
        .refine((s) => Buffer.byteLength(s, 'utf8') <= MAX_CONTENT_BYTES, `must be at most ${MAX_CONTENT_BYTES} bytes`)
        .optional()
        .describe('The work itself, as text (markdown, source, diagram source…).'),
    })
    .refine((a) => a.content !== undefined || a.ref_url !== undefined || a.repo_url !== undefined, {
      message: 'give at least one of content, ref_url, repo_url',
    }),
});
export type JudgeBody = z.infer<typeof judgeBody>;

export const judgeResponse = z.object({
  status: z.enum(['passed', 'failed', 'pending']).describe("This submission's verdict; pending when not (yet) graded."),
  result_id: z.uuid().describe("The learner's ActivityResult for the activity."),
  artifact_id: z.uuid().describe('The stored artifact of this submission.'),
  score: z.number().min(0).max(100).optional().describe('0–100, weighted by the rubric; absent when pending.'),
  feedback: z.string().optional().describe("The grader's feedback; absent when pending."),
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
}

type Caller = { kind: 'session'; svcUserId: string } | { kind: 'idp'; verify: (tx: Queryable) => Promise<{ tenantId: string; svcUserId: string }> };

/** Authenticate the bearer token for tenant `slug` (no writes yet); throws 401. */
async function identifyCaller(deps: Deps, idps: IdpVerifier, token: string | undefined, slug: string): Promise<Caller> {
  if (!token) throw unauthorized('no bearer token');
  const session = await trySessionToken(deps, token);
  if (session) return { kind: 'session', svcUserId: session.user.svc_user_id };
  const idp = await findTenantIdp(deps.db, slug);
  if (!idp) throw unauthorized(`tenant "${slug}" is unknown or has no IdP`);
  const claims = await idps.verify(token, idp);
  return {
    kind: 'idp',
    verify: async (tx) => ({ tenantId: idp.tenantId, svcUserId: (await findOrCreateIdpLearner(tx, deps, idp, claims)).svc_user_id }),
  };
}

/** Handle one submission (steps above). Throws `ApiError` 400/401/404. */
export async function submitForJudgement(
  deps: Deps,
  services: { idps: IdpVerifier; grader: Grader | null; log: FastifyBaseLogger },
  token: string | undefined,
  body: JudgeBody,
): Promise<JudgeResponse> {
  const caller = await identifyCaller(deps, services.idps, token, body.tenant);
  for (const field of ['ref_url', 'repo_url'] as const) {
    const value = body.artifact[field];
    const refusal = value === undefined ? undefined : refuseUrl(new URL(value), deps.config.fetchAllowPrivate);
    if (refusal) throw invalidRequest(`artifact.${field}: ${refusal}`);
  }

  // Step 1: the learner, the activity, the result and the artifact — all or nothing.
  const submission = await deps.db.transaction(async (tx) => {
    const { tenantId, svcUserId } =
      caller.kind === 'session'
        ? { tenantId: await memberTenantId(tx, body.tenant, caller.svcUserId), svcUserId: caller.svcUserId }
        : await caller.verify(tx);
    const [activity] = await tx.query<ActivityRow>(
      `select id, tenant_id, lesson_id, program_id, title, kind, spec, rubric, pass_threshold
         from activities where id = $1 and tenant_id = $2`,
      [body.activity_id, tenantId],
    );
    if (!activity) throw notFound(`activity ${body.activity_id} not found`);
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
    return { tenantId, svcUserId, activity, resultId: result!.id, artifactId: artifact!.id };
  });
  const pending: JudgeResponse = { status: 'pending', result_id: submission.resultId, artifact_id: submission.artifactId };
  if (!services.grader) return pending;

  // Step 2: grade, outside any transaction.
  let verdict: Verdict;
  try {
    verdict = await services.grader.grade(submission.activity, body.artifact, deps.now);
  } catch (err) {
    // Whatever went wrong while grading, the submission is stored: answer pending, never 5xx.
    if (!(err instanceof GraderError)) services.log.error({ err }, 'embed: unexpected error while grading');
    const reason = err instanceof GraderError ? err.reason : 'internal_error';
    await deps.db.query(
      `update artifacts set verification = jsonb_build_object('status', 'pending', 'error', $3::text, 'attempted_at', $4::text),
              updated_at = clock_timestamp()
        where id = $1 and tenant_id = $2`,
      [submission.artifactId, submission.tenantId, reason, deps.now().toISOString()],
    );
    return pending;
  }

  // Step 3: the verdict, the result and progress — one transaction.
  await deps.db.transaction((tx) => recordVerdict(tx, submission, verdict));
  return {
    status: verdict.status,
    result_id: submission.resultId,
    artifact_id: submission.artifactId,
    score: verdict.score,
    feedback: verdict.feedback,
  };
}

/** Step 3 (see the header): store `verdict` and update the result and progress. */
async function recordVerdict(
  tx: Queryable,
  s: { tenantId: string; svcUserId: string; activity: ActivityRow; resultId: string; artifactId: string },
  verdict: Verdict,
): Promise<void> {
  await tx.query(
    `update artifacts set verification = $3::text::jsonb, updated_at = clock_timestamp() where id = $1 and tenant_id = $2`,
    [s.artifactId, s.tenantId, JSON.stringify(verdict)],
  );
  const [before] = await tx.query<{ status: string }>(
    'select status from activity_results where id = $1 and tenant_id = $2 for update',
    [s.resultId, s.tenantId],
  );
  const firstCompletion = verdict.passed && before!.status !== 'completed';
  await tx.query(
    `update activity_results
        set status = case when $3::boolean or status = 'completed' then 'completed' else 'failed' end,
            completed_at = case when $3::boolean and completed_at is null then now() else completed_at end,
            score = greatest(coalesce(score, 0), $4::numeric),
            updated_at = clock_timestamp()
      where id = $1 and tenant_id = $2`,
    [s.resultId, s.tenantId, verdict.passed, verdict.score],
  );
  await tx.query(
    `insert into progress (tenant_id, user_id, program_id, completed_count, last_activity_at)
     values ($1, $2, $3, $4, now())
     on conflict (tenant_id, user_id, program_id) do update
       set completed_count = progress.completed_count + excluded.completed_count,
           last_activity_at = excluded.last_activity_at,
           updated_at = clock_timestamp()`,
    [s.tenantId, s.svcUserId, s.activity.program_id, firstCompletion ? 1 : 0],
  );
}
