/**
 * The embed surface's public entry point: everything another surface (app, admin, the player,
 * authoring, and LTI to come) may use of `/v1/embed`, its judge and its grading queue. Other
 * surfaces import from here, never from the rooms behind it (STYLE.md §8), so the rooms can
 * change without touching them:
 *
 * - the plugin `embedRoutes` (`/v1/embed`) and the grading queue's name (`GRADING_QUEUE`, for
 *   the readiness and shutdown wiring);
 * - the judge's request limits the player mirrors (`MAX_CONTENT_BYTES`) and the tenant slug schema;
 * - author grants (`svc author grant|revoke`), embed origins (`svc embed origins`, the player's
 *   `frame-ancestors`);
 * - the review queue (`svc review`; MCP `list_reviews`, `resolve_review`), overrides (MCP
 *   `override_verdict`) and the model-call ledger (`svc judge calls`);
 * - borderline consistency's per-tenant setting (`svc judge consistency`).
 *
 * Rooms: `grading/` (prompt, model call, answer, failures, injection signals, the grading run,
 * ledger and budget, verdicts, review), `queue/` (the durable grading queue), `read/` (reading an
 * artifact per kind); the files at the top are the HTTP surface and who is calling (README.md).
 */
export { default as embedRoutes } from './routes.ts';
export { embedLearnerData } from './learner-data.ts';
export { GRADING_QUEUE } from './queue/index.ts';
export { MAX_CONTENT_BYTES } from './judge.ts';
export { tenantSlug } from './session.ts';
export { grantByEmail, grantBySubject, revokeByEmail, revokeBySubject } from './author-grants.ts';
export { addOrigin, frameAncestors, listOrigins, normalizeOrigin, removeOrigin, tenantOrigins } from './origins.ts';
export { decide, listReviews, resolveReview, type Review, type ReviewStatus } from './grading/review.ts';
export { applyOverride, MAX_REASON_CHARS, ReviewError, type OverrideApplied } from './grading/override.ts';
export { callsOf, requestBody } from './grading/ledger.ts';
export { CONSISTENCY_DEFAULT_REPEATS, CONSISTENCY_MARGIN_MAX, consistencyOf, setConsistency, type ConsistencySettings } from './grading/consistency.ts';
// Judge calibration (issue #21; calibration/README.md): the judge's services created once by the
// app, examples, runs, reports, the gate and its thresholds.
export { createJudgeServices, type JudgeServices } from './services.ts';
export {
  addExample,
  awaitRun,
  calibrationReport,
  CalibrationInputError,
  CalibrationNotFound,
  checkReportAccess,
  deleteExample,
  listExamples,
  releaseIfOpen,
  requestRun,
  setGradingMode,
  setThresholds,
  thresholdsOf,
  type CalibrationReport,
  type Example,
  type ExampleInput,
  type RunProgress,
  type Thresholds,
} from './calibration/index.ts';
// The outbound guard (SSRF-safe fetch), for the LTI tool's fetches of platform URLs (issue #22, src/lti/).
// What the LTI instructor preview shows as learners see it (issue #22, src/lti/preview.ts): the
// spec rendered as the player gets it, the rubric's criteria, and an attempt's verdict in words.
export { playerActivity } from './reads.ts';
export { attemptOf } from './grading/verdict-view.ts';
