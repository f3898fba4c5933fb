/**
 * What a stored verification (`artifacts.verification`) means, in one place: for a waiting
 * request (`outcomeOf` → the queue's `JobOutcome`), and for the learner (`verdictFields`) — what
 * the judge's answer, `GET /v1/embed/results/{id}` and the player show of a grading: the status,
 * the score against the threshold, and per criterion whether it was met, its score and the
 * grader's words — plus, when present, the calibration behind the grading and an instructor's
 * override (when and why; issue #21). Provenance (model, hashes, ledger ids, what was read, who
 * overrode) stays internal (`svc verdict show`).
 */
import { z } from 'zod';
import type { JobOutcome } from '../queue/index.ts';

export const criterionResult = z.object({
  id: z.string().describe("The criterion id (the rubric entry's `id`, or c1, c2… by position)."),
  criterion: z.string().describe('What the criterion asks.'),
  weight: z.number().describe('Its weight in the score.'),
  met: z.boolean().describe('Whether the work meets it.'),
  score: z.number().min(0).max(100).describe('0–100.'),
  feedback: z.string().describe("The grader's evidence for this criterion."),
});
export type CriterionResult = z.infer<typeof criterionResult>;

/** The per-criterion results of a stored verification (`criteria` written by model.ts), or undefined. */
function criteriaOf(verification: Record<string, unknown> | null | undefined): CriterionResult[] | undefined {
  const list = verification?.criteria;
  if (!Array.isArray(list)) return undefined;
  return list.map((c: Record<string, unknown>) => ({
    id: String(c.id ?? ''),
    criterion: String(c.criterion ?? ''),
    weight: typeof c.weight === 'number' ? c.weight : 1,
    met: c.met === true,
    score: typeof c.score === 'number' ? c.score : 0,
    feedback: String(c.evidence ?? ''),
  }));
}

/**
 * `verification.calibration` as the learner sees it (issue #21): the calibration report behind the
 * grading (`report_id`, Cohen's kappa, false-pass rate, when it was made), or `status:
 * "uncalibrated"` (the activity has no calibration examples), or `status: "forced"` (an author
 * set the activity live without a passing report). Only these fields are shown: never who forced it.
 */
export const calibrationView = z.object({
  status: z.string().optional().describe('"uncalibrated", "forced", or absent when a report stands behind the verdict.'),
  report_id: z.string().optional(),
  cohen_kappa: z.number().nullable().optional().describe("Cohen's kappa of the report (−1..1)."),
  false_pass_rate: z.number().nullable().optional().describe('Share of expected fails the judge passed (0..1).'),
  created_at: z.string().optional().describe('RFC 3339, when the report was made.'),
});

/** `verification.override` as the learner sees it: when and why, not who (issue #21). */
export const overrideView = z.object({
  at: z.string().describe('RFC 3339.'),
  reason: z.string().describe("The instructor's reason."),
});

/** The learner's fields of stored `verification.calibration` (`calibrationView`), or undefined. */
function calibrationOf(v: Record<string, unknown> | null): z.infer<typeof calibrationView> | undefined {
  const c = v?.calibration as Record<string, unknown> | undefined;
  if (!c || typeof c !== 'object') return undefined;
  const pick: Record<string, unknown> = {};
  for (const key of ['status', 'report_id', 'created_at'] as const) if (typeof c[key] === 'string') pick[key] = c[key];
  for (const key of ['cohen_kappa', 'false_pass_rate'] as const) if (typeof c[key] === 'number' || c[key] === null) pick[key] = c[key];
  return pick;
}

export const attemptView = z.object({
  artifact_id: z.uuid().describe('The artifact of this attempt.'),
  status: z
    .enum(['pending', 'passed', 'failed', 'not_gradable'])
    .describe('pending until graded (also while held for review); passed / failed with a score; not_gradable when the grader could not grade it.'),
  score: z.number().min(0).max(100).optional().describe('0–100, weighted by the rubric (graded attempts).'),
  passed: z.boolean().optional().describe('Whether the score reached the pass threshold (graded attempts).'),
  criteria: z.array(criterionResult).optional().describe('Per-criterion results (graded attempts).'),
  feedback: z.string().optional().describe("The grader's overall feedback, or why there is no verdict."),
  reason: z.string().optional().describe("Why there is no verdict (yet), as in the judge's answer."),
  rubric_version: z
    .number()
    .int()
    .optional()
    .describe("The version of the activity's spec and rubric this attempt was graded against (absent until graded); editing them makes a new version."),
  submitted_at: z.string().describe('RFC 3339.'),
  calibration: calibrationView
    .optional()
    .describe('How the grading behind this verdict was calibrated, as stored with it (absent on verdicts from before calibration).'),
  override: overrideView.optional().describe("Present when an instructor overrode the model's verdict: status, passed and score above are theirs."),
});
export type AttemptView = z.infer<typeof attemptView>;

/** What the stored verification `v` means: graded, ended without a verdict, or still pending. */
export function outcomeOf(v: Record<string, unknown> | null): JobOutcome {
  const status = v?.status;
  if (v?.review === 'required') return { kind: 'pending', reason: 'review_required' };
  if ((status === 'passed' || status === 'failed') && typeof v!.score === 'number') {
    return { kind: 'graded', status, score: v!.score, feedback: String(v!.feedback ?? ''), criteria: criteriaOf(v) };
  }
  if (status === 'failed' || status === 'not_gradable') {
    return { kind: 'final', status, reason: String(v!.reason ?? 'unknown'), feedback: String(v!.feedback ?? '') };
  }
  return { kind: 'pending', reason: String(v?.reason ?? v?.error ?? 'queued') };
}

/** The learner-facing fields of outcome `o` (shared by the judge's answer and `attemptOf`). */
export function verdictFields(o: JobOutcome): Omit<AttemptView, 'artifact_id' | 'submitted_at'> {
  switch (o.kind) {
    case 'graded':
      return { status: o.status, score: o.score, passed: o.status === 'passed', criteria: o.criteria, feedback: o.feedback };
    case 'final':
      return { status: o.status, reason: o.reason, feedback: o.feedback };
    case 'pending':
      return { status: 'pending', reason: o.reason };
    default:
      return { status: 'pending' };
  }
}

/** The view of one attempt: artifact `artifactId`, submitted at `submittedAt`, with its stored `verification`. */
export function attemptOf(artifactId: string, submittedAt: string, verification: Record<string, unknown> | null): AttemptView {
  const calibration = calibrationOf(verification);
  return {
    artifact_id: artifactId,
    submitted_at: submittedAt,
    ...verdictFields(outcomeOf(verification)),
    ...(typeof verification?.rubric_version === 'number' ? { rubric_version: verification.rubric_version } : {}),
    ...(calibration && { calibration }),
    ...(isOverride(verification?.override) && { override: { at: verification.override.at, reason: verification.override.reason } }),
  };
}

const isOverride = (o: unknown): o is { at: string; reason: string } =>
  typeof o === 'object' && o !== null && typeof (o as { at?: unknown }).at === 'string' && typeof (o as { reason?: unknown }).reason === 'string';
