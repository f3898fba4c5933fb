/**
 * A learner's result → the score the platform gets (Assignment and Grade Services 2.0 §3.4, the
 * Score publish service, `application/vnd.ims.lis.v1.score+json`). Pure functions; the delivery
 * (deliver.ts) adds `userId`, the timestamp and the never-lower rule.
 *
 * The input is the snapshot the outbox trigger took at commit (migration 0152): the result's
 * status and best score, and the result's latest artifact's verification. Mapping (docs/lti.md
 * "Grades back"):
 *
 * | latest submission | gradingProgress | activityProgress | scoreGiven |
 * |---|---|---|---|
 * | waiting for the judge (`pending`) | Pending | Submitted | — |
 * | held by the calibration gate (`pending`, `calibration_required`) | PendingManual | Submitted | — |
 * | a pass held for review (`review: required`) | PendingManual | Submitted | — |
 * | passed or failed (verdict, override, review decision, release) | FullyGraded | Completed | the result's score (best) |
 * | not gradable, or failed without a score (`model_unavailable`) | Failed | Submitted | — |
 *
 * `comment` is the verdict's overall feedback (FullyGraded only; not when the score stands for an
 * earlier pass than the latest verdict). `scoreMaximum` is always 100
 * (scores are 0–100 across the service), so `scoreGiven` is the result's score itself.
 */

/** The outbox snapshot (migration 0152, `lti_score_deliveries.snapshot`). */
export interface ScoreSnapshot {
  result_status: 'completed' | 'in_progress' | 'failed';
  /** The result's best score 0–100, or null. */
  result_score: number | null;
  /** The result's latest artifact, or null. */
  artifact: {
    id: string;
    status: string | null;
    reason: string | null;
    review: string | null;
    score: number | null;
    feedback: string | null;
  } | null;
}

export type GradingProgress = 'FullyGraded' | 'Pending' | 'PendingManual' | 'Failed' | 'NotReady';
export type ActivityProgress = 'Initialized' | 'Started' | 'InProgress' | 'Submitted' | 'Completed';

/** A score before delivery: everything but `userId` and `timestamp`. */
export interface ScoreDraft {
  scoreGiven?: number;
  scoreMaximum: 100;
  activityProgress: ActivityProgress;
  gradingProgress: GradingProgress;
  comment?: string;
  /** The result is a pass (completed) and this is its final grade: later scores may not go below it. */
  pass: boolean;
}

/** The AGS score as sent (AGS 2.0 §3.4.1). */
export interface AgsScore {
  userId: string;
  scoreGiven?: number;
  scoreMaximum: 100;
  activityProgress: ActivityProgress;
  gradingProgress: GradingProgress;
  /** RFC 3339 with a time zone (UTC, milliseconds), strictly increasing per line item and learner. */
  timestamp: string;
  comment?: string;
}

/** The media type of a score (AGS 2.0 §3.4). */
export const SCORE_MEDIA_TYPE = 'application/vnd.ims.lis.v1.score+json';
/** Longest `comment` sent, in characters. */
export const MAX_COMMENT_CHARS = 4000;

/** The score for `s` (table in the header), or null when there is nothing to say (no submission). */
export function scoreFor(s: ScoreSnapshot): ScoreDraft | null {
  const a = s.artifact;
  if (!a?.status) return null;
  const waiting = (gradingProgress: GradingProgress): ScoreDraft => ({ scoreMaximum: 100, activityProgress: 'Submitted', gradingProgress, pass: false });
  if (a.status === 'pending') return waiting(a.reason === 'calibration_required' ? 'PendingManual' : 'Pending');
  if (a.status === 'passed' && a.review === 'required') return waiting('PendingManual');
  if (a.status === 'not_gradable') return waiting('Failed');
  if (a.status === 'passed' || a.status === 'failed') {
    const score = s.result_score ?? a.score;
    if (score === null || score === undefined) return waiting('Failed');
    const given = Math.min(100, Math.max(0, Math.round(Number(score) * 100) / 100));
    return {
      scoreGiven: given,
      scoreMaximum: 100,
      activityProgress: 'Completed',
      gradingProgress: 'FullyGraded',
      // The feedback is the latest verdict's: sent only when that verdict is the one the score stands
      // for (a failed retake of a passed activity keeps the pass's score, not the retake's words).
      ...(a.feedback && (a.status === 'passed') === (s.result_status === 'completed') ? { comment: a.feedback.slice(0, MAX_COMMENT_CHARS) } : {}),
      pass: s.result_status === 'completed',
    };
  }
  return null;
}

/**
 * The never-lower rule (issue #22): once a pass was delivered to a line item for a learner with
 * `passSent` (its scoreGiven), a later score with a lower or missing `scoreGiven` is not sent.
 * Returns the reason to skip, or undefined to send.
 */
export function belowSentPass(draft: ScoreDraft, passSent: number | null): string | undefined {
  if (passSent === null) return undefined;
  if (draft.scoreGiven === undefined) return `a pass (${passSent}) was already sent; a ${draft.gradingProgress} score without scoreGiven would hide it`;
  if (draft.scoreGiven < passSent) return `a pass (${passSent}) was already sent; ${draft.scoreGiven} is lower`;
  return undefined;
}

/**
 * The timestamp of the next score to a line item for a learner: `at`, or 1 ms after the last one
 * sent when `at` is not later (AGS 2.0 §3.4.1: the platform ignores a score not newer than the last).
 */
export function nextTimestamp(at: Date, lastSent: string | null): string {
  const last = lastSent ? Date.parse(lastSent) : NaN;
  const t = Number.isFinite(last) && at.getTime() <= last ? last + 1 : at.getTime();
  return new Date(t).toISOString();
}
