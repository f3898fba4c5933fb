/**
 * One run of a grading job (../queue/index.ts): read the artifact once, ask the model with bounded
 * attempts within the tenant's budget, record the outcome. Runs in a worker of a process that
 * has a model, outside any request.
 *
 * 1. Load the submission (artifact, its activity). Gone, or no longer pending → complete the job
 *    (nothing to do; an outcome is recorded once).
 * 2. Read the artifact (read/index.ts) — once per run, whatever the number of model attempts.
 *    Nothing readable → `not_gradable` (`reason: "unreadable"`), without calling the model.
 * 3. Grade: up to `judgeAttempts` model calls with one prepared request (prompt.ts, model.ts). Each call is
 *    first reserved in the ledger within the tenant's budget (ledger.ts); a spent budget ends the
 *    run: the submission waits, `pending` with `reason: "budget_exhausted"` and `retry_at`, and
 *    runs again when the window that is full ends. Between attempts: exponential backoff with
 *    full jitter (`backoffMs`), or what `Retry-After` asks when it is at most `MAX_BACKOFF_MS`;
 *    a longer `Retry-After` ends the run and sets the next one's delay. The `openai` SDK's own
 *    retries (which honour `Retry-After` too) stay off (`maxRetries: 0`, model.ts): each of its
 *    retries would be a model call that the ledger never reserved nor the tenant's budget
 *    counted, and it would not retry the artifact's failures (malformed or truncated output),
 *    which an attempt here does. So the attempts stay ours, one ledger row each.
 *    Borderline consistency (consistency.ts, opt-in per tenant): a verdict within the tenant's
 *    margin of the pass mark is graded again (same request, same bounded attempts, each call in
 *    the ledger and the budget) and the majority of the runs decides.
 * Steps 2 and 3 are `gradeArtifact`, the one core a calibration run shares (../calibration/runs.ts).
 * 4. Outcome, in one transaction with the job's completion or its next run (verdict.ts):
 *    - a verdict → first meets its activity's calibration gate (../calibration/gate.ts): closed →
 *      held (`pending`, `calibration_required`, the verdict kept inside); open → recorded with
 *      `calibration` (a pass flagged as a possible prompt injection is held for review);
 *    - every attempt failed for the artifact's sake (malformed or truncated output, a refusal,
 *      a request refused for its content) → `not_gradable` with that reason: not held against
 *      the learner, and no further model calls;
 *    - otherwise the model is at fault (timeouts, connection, 5xx, 429): the submission stays
 *      `pending` (`error`, `attempted_at`, `runs`, `retry_at`) and runs again after
 *      `judgeRetryDelaySeconds × 2^(runs−1)` with jitter, at most `judgeRetryMaxDelaySeconds`,
 *      and at least what `Retry-After` asked — unless that would pass `judgeMaxAgeSeconds` after
 *      submission: then it ends `failed` with `reason: "model_unavailable"` (no score).
 *
 * The stored verification of a finished grading is the grader's `Verdict` (or the not-gradable
 * / unavailable record) plus provenance: `read` (what was read from each field), `runs`,
 * `rubric_version`, `usage` (calls and tokens of this grading, all runs), and the ledger's
 * `call_id` / `request_sha256` / `response_id` of the call that gave the verdict.
 */
import type { Deps } from '../../deps.ts';
import type { Queryable } from '../../db/index.ts';
import { PROMPT_VERSION, rubricCriteria, rubricHash } from './prompt.ts';
import type { CallRecord, GradedActivity, GradingRequest, SubmittedArtifact, Verdict } from './types.ts';
import type { Grader } from './model.ts';
import type { GraderError } from './failures.ts';
import { completeCall, reserveCall } from './ledger.ts';
import { CONSISTENCY_REPEATS, consistencyOf, settleBorderline, type ConsistencyRecord } from './consistency.ts';
import type { ArtifactJobData, GradingJob, JobControl, JobOutcome } from '../queue/index.ts';
import { readArtifact, Unreadable, type ArtifactView, type ReadOptions } from '../read/index.ts';
import { outcomeOf } from './verdict-view.ts';
import { recordOutcome, type Effect, type RecordedOutcome } from './verdict.ts';
import { gateState, lockGateIfCalibrated, type GateState } from '../calibration/gate.ts';
import { CALIBRATION_REQUIRED, holdForCalibration } from '../calibration/release.ts';
import { observeGradingJob } from '../../telemetry/instrument.ts';
import { judgeVerdicts } from '../../telemetry/metrics.ts';

/** Longest wait between two model attempts within a run, in milliseconds. */
export const MAX_BACKOFF_MS = 10_000;
/** Base of the exponential backoff between attempts, in milliseconds. */
const BASE_BACKOFF_MS = 500;

interface SubmissionRow {
  id: string;
  tenant_id: string;
  activity_id: string;
  reason: string | null;
  kind: string;
  ref_url: string | null;
  repo_url: string | null;
  content: string | null;
  status: string | null;
  runs: number | null;
  usage: Usage | null;
  created_at: string;
  title: string;
  activity_kind: string;
  spec: string;
  rubric: unknown;
  pass_threshold: number;
  rubric_version: number;
}

/** Model calls and tokens spent on one submission (all runs). */
export interface Usage {
  calls: number;
  prompt_tokens: number;
  completion_tokens: number;
}

/**
 * The longest a grading run may take with these settings, in seconds: reading, every attempt and
 * its backoff — for each of up to 3 gradings of a borderline verdict (consistency.ts) — and a
 * margin. A run still going then is aborted (its job runs again).
 */
export function maxRunSeconds(deps: Pick<Deps, 'config'>): number {
  const e = deps.config.embed;
  const modelMs = deps.config.judge?.timeoutMs ?? 60_000;
  // A borderline verdict may be graded up to the most repeats in all (consistency.ts).
  const gradings = Math.max(...CONSISTENCY_REPEATS);
  return Math.ceil((e.fetchTimeoutMs + gradings * (e.judgeAttempts * modelMs + (e.judgeAttempts - 1) * MAX_BACKOFF_MS)) / 1000) + 5;
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });

/**
 * Wait before attempt `n + 1` (n ≥ 1) after `err`, in milliseconds: what `Retry-After` asked, or
 * exponential backoff with full jitter (uniform in [0, 500 ms × 2^(n−1)], AWS Architecture Blog
 * "Exponential Backoff and Jitter"), at most `MAX_BACKOFF_MS`. A `Retry-After` longer than that
 * is returned as is: the caller ends the run instead of sleeping.
 */
export function backoffMs(n: number, err: GraderError, random = Math.random): number {
  if (err.retryAfterSeconds !== undefined) return Math.round(err.retryAfterSeconds * 1000);
  return Math.round(random() * Math.min(MAX_BACKOFF_MS, BASE_BACKOFF_MS * 2 ** (n - 1)));
}

/**
 * Seconds before run `runs + 1` after a run the model failed: `base × 2^(runs−1)` capped at
 * `max`, with "equal jitter" (uniform in [half, whole]) so many waiting submissions do not come
 * back at once, and at least `retryAfterSeconds`.
 */
export function nextRunDelaySeconds(runs: number, base: number, max: number, retryAfterSeconds = 0, random = Math.random): number {
  const capped = Math.min(max, base * 2 ** Math.max(0, runs - 1));
  return Math.max(retryAfterSeconds, capped / 2 + random() * (capped / 2));
}

const addUsage = (a: Usage, calls: number, prompt: number, completion: number): Usage => ({
  calls: a.calls + calls,
  prompt_tokens: a.prompt_tokens + prompt,
  completion_tokens: a.completion_tokens + completion,
});

/** Make the handler of grading jobs for this process's `grader`: the four steps of the header. */
export function gradingHandler(deps: Deps, grader: Grader, options: { lookup?: ReadOptions['lookup'] } = {}) {
  const handle = gradeOne(deps, grader, options);
  return (job: GradingJob, control: JobControl, signal: AbortSignal): Promise<JobOutcome> => observeGradingJob(job, () => handle(job, control, signal));
}

function gradeOne(deps: Deps, grader: Grader, options: { lookup?: ReadOptions['lookup'] }) {
  return async (job: GradingJob, control: JobControl, signal: AbortSignal): Promise<JobOutcome> => {
    const { artifact_id: artifactId, tenant_id: tenantId } = job.data as ArtifactJobData;

    // Step 1: the submission (one held by the calibration gate is graded already: nothing to do).
    const s = await loadSubmission(deps, tenantId, artifactId);
    if (s?.status !== 'pending' || s.reason === CALIBRATION_REQUIRED) {
      await deps.db.transaction((tx) => control.complete(tx, { skipped: s ? 'already graded' : 'artifact gone' }));
      return s ? storedOutcome(deps, tenantId, artifactId) : { kind: 'gone' };
    }
    const run: RunContext = {
      deps,
      control,
      tenantId,
      artifactId,
      ledger: { artifactId },
      artifact: s,
      submission: s,
      number: (s.runs ?? 0) + 1,
      attempts: 0,
      usage: s.usage ?? { calls: 0, prompt_tokens: 0, completion_tokens: 0 },
      activity: { title: s.title, kind: s.activity_kind, spec: s.spec, rubric: s.rubric, pass_threshold: Number(s.pass_threshold) },
    };

    // Steps 2 and 3: read once, then grade with bounded attempts within the tenant's budget.
    const graded = await gradeArtifact(run, grader, signal, options.lookup);

    // Step 4: the outcome.
    if (graded.kind === 'unreadable') return recordUnreadable(run, graded.error);
    if (graded.kind === 'budget_exhausted') return wait(run, graded.note, graded.delaySeconds);
    if (graded.kind === 'verdict') return recordVerdict(run, graded, graded.view, graded.request);
    return recordModelFailure(run, grader, graded.request, graded);
  };
}

/**
 * One grading of one artifact by the production path, for a learner's submission (gradeOne) and
 * for a calibration example (../calibration/runs.ts) alike: whom the ledger rows are for, the
 * artifact, its activity as graded, the run's number and what it has spent so far.
 */
export interface GradingRun {
  deps: Deps;
  tenantId: string;
  /** Whom each model call's ledger row names (migration 0141): the learner's artifact or a calibration run. */
  ledger: { artifactId: string } | { calibrationRunId: string };
  artifact: SubmittedArtifact;
  activity: GradedActivity;
  /** This run's number (1 for the first); the ledger's `run`. */
  number: number;
  /** Model calls reserved in this run so far (the ledger's `attempt` numbers them; a borderline re-grading continues them). */
  attempts: number;
  /** Calls and tokens so far, this run's included (`attempt` adds to it). */
  usage: Usage;
}

/** What `gradeArtifact` came to: nothing readable, or the attempts' outcome with the view and request behind it. */
export type Graded = { kind: 'unreadable'; error: Unreadable } | (Attempts & { view: ArtifactView; request: GradingRequest });

/**
 * Steps 2 and 3 of the header, the one core of every grading: read `run.artifact` once
 * (read/index.ts: readers, size and time caps, the outbound guard), prepare one request with
 * `grader.prepare` (prompt, model, rubric, injection signals), then `attempt` it within the
 * tenant's budget. Throws when `signal` aborts the run without a verdict.
 */
export async function gradeArtifact(run: GradingRun, grader: Grader, signal: AbortSignal, lookup?: ReadOptions['lookup']): Promise<Graded> {
  const view = await readOnce(run, signal, lookup);
  if (view instanceof Unreadable) return { kind: 'unreadable', error: view };
  const request = grader.prepare(run.activity, run.artifact, view);
  const first = await attempt(run, grader, request, signal);
  // Borderline consistency (consistency.ts), for learners' gradings and calibration's alike: a
  // borderline verdict is graded again and the majority decides.
  const graded = await settleBorderline(first, {
    settings: () => consistencyOf(run.deps.db, run.tenantId),
    passThreshold: run.activity.pass_threshold,
    again: () => attempt(run, grader, request, signal),
    complete: (call) => completeCall(run.deps.db, run.tenantId, call.id, call.record),
  });
  return { ...graded, view, request };
}

/** One run of one job: the submission and what the run has spent so far. */
interface RunContext extends GradingRun {
  control: JobControl;
  artifactId: string;
  submission: SubmissionRow;
}

/** What every recorded outcome says of its provenance. */
const provenance = (run: RunContext) => ({ prompt_version: PROMPT_VERSION, rubric_version: run.submission.rubric_version, runs: run.number, usage: run.usage });

/** Step 1: the artifact `artifactId` of `tenantId` with its activity, or undefined when gone. */
async function loadSubmission(deps: Deps, tenantId: string, artifactId: string): Promise<SubmissionRow | undefined> {
  const [s] = await deps.db.query<SubmissionRow>(
    `select a.id, a.tenant_id, a.activity_id, a.verification->>'reason' as reason, a.kind, a.ref_url, a.repo_url, a.content,
            a.verification->>'status' as status, (a.verification->>'runs')::int as runs, a.verification->'usage' as usage,
            to_json(a.created_at) #>> '{}' as created_at,
            act.title, act.kind as activity_kind, act.spec, act.rubric, act.pass_threshold, act.rubric_version
       from artifacts a join activities act on act.id = a.activity_id
      where a.id = $1 and a.tenant_id = $2`,
    [artifactId, tenantId],
  );
  return s;
}

/** Step 2: the artifact as the grader sees it, or the `Unreadable` that says why nothing could be read. */
async function readOnce(run: GradingRun, signal: AbortSignal, lookup: ReadOptions['lookup']): Promise<ArtifactView | Unreadable> {
  const e = run.deps.config.embed;
  try {
    return await readArtifact(run.artifact, {
      allowPrivate: run.deps.config.fetchAllowPrivate,
      timeoutMs: e.fetchTimeoutMs,
      maxBytes: e.fetchMaxBytes,
      inputBytes: e.judgeInputBytes,
      vision: e.judgeVision,
      signal,
      lookup,
    });
  } catch (err) {
    if (!(err instanceof Unreadable) || signal.aborted) throw err;
    return err;
  }
}

/** What step 3's attempts came to (`consistency` when a borderline verdict was graded more than once: consistency.ts). */
export type Attempts =
  | { kind: 'verdict'; verdict: Verdict & { call_id: string; response_id: string | null; consistency?: ConsistencyRecord }; call: LedgerEntry }
  | { kind: 'budget_exhausted'; note: { reason: string; runs: number } & Record<string, unknown>; delaySeconds: number }
  | { kind: 'model_failed'; last: GraderError; transient: boolean };

/**
 * Step 3: up to `judgeAttempts` model calls with one prepared request, each first reserved in the
 * ledger within the tenant's budget; full-jitter backoff between them (`backoffMs`), or what
 * `Retry-After` asks up to `MAX_BACKOFF_MS` (a longer one ends the attempts). Adds to `run.usage`.
 * Throws when the run is aborted without a verdict.
 */
async function attempt(run: GradingRun, grader: Grader, request: GradingRequest, signal: AbortSignal): Promise<Attempts> {
  const { deps, tenantId } = run;
  const e = deps.config.embed;
  let last: GraderError | undefined;
  let transient = false;
  for (let n = 1; n <= e.judgeAttempts && !signal.aborted; n++) {
    const slot = await reserveCall(deps.db, deps.now(), e.tenantBudget, {
      tenantId,
      ...run.ledger,
      run: run.number,
      attempt: ++run.attempts,
      model: grader.model,
      request,
    });
    if ('exhausted' in slot) {
      const { limit, retryAt } = slot.exhausted;
      const delaySeconds = (retryAt.getTime() - deps.now().getTime()) / 1000 + Math.random() * 30;
      return {
        kind: 'budget_exhausted',
        note: { reason: 'budget_exhausted', limit, retry_at: retryAt.toISOString(), runs: run.number - 1, usage: run.usage },
        delaySeconds,
      };
    }
    const result = await grader.call(request, deps.now, signal);
    run.usage = addUsage(run.usage, 1, result.record.promptTokens, result.record.completionTokens);
    if ('verdict' in result) {
      // Its ledger row is completed in the verdict's transaction (one round trip fewer).
      return {
        kind: 'verdict',
        verdict: { ...result.verdict, call_id: slot.id, response_id: result.record.responseId ?? null },
        call: { id: slot.id, record: result.record },
      };
    }
    await completeCall(deps.db, tenantId, slot.id, result.record);
    last = result.error;
    transient ||= last.transient;
    if (n < e.judgeAttempts) {
      const pause = backoffMs(n, last);
      if (pause > MAX_BACKOFF_MS) break; // the model asked for a longer pause: the next run honours it
      await sleep(pause, signal);
    }
  }
  if (signal.aborted || !last) throw new Error('grading run aborted');
  return { kind: 'model_failed', last, transient };
}

/** Step 4, nothing readable: `not_gradable` / `unreadable`, without a model call. */
function recordUnreadable(run: RunContext, err: Unreadable): Promise<JobOutcome> {
  return finish(
    run,
    {
      status: 'not_gradable',
      reason: 'unreadable',
      feedback: `Your work could not be read: ${err.message}. Check the link or the file and submit again.`,
      detail: err.message,
      model: null,
      rubric_hash: rubricHash(rubricCriteria(run.activity.rubric), run.activity.pass_threshold),
      artifact_hash: null,
      graded_at: run.deps.now().toISOString(),
      ...provenance(run),
    },
    { kind: 'none' },
  );
}

/** Step 4, a verdict: recorded; a pass flagged as a possible prompt injection is held for review. */
function recordVerdict(run: RunContext, graded: Extract<Attempts, { kind: 'verdict' }>, view: ArtifactView, request: GradingRequest): Promise<JobOutcome> {
  const { verdict } = graded;
  const held = verdict.passed && verdict.injection.suspected;
  return finish(
    run,
    { ...verdict, read: view.sources, request_sha256: request.sha256, ...provenance(run), ...(held && { review: 'required' }) },
    held ? { kind: 'hold' } : verdict.passed ? { kind: 'pass', score: verdict.score } : { kind: 'fail', score: verdict.score },
    graded.call,
    true,
  );
}

/**
 * Step 4, no verdict: `not_gradable` when every failure was the artifact's; otherwise the model
 * is at fault and the submission waits for the next run — or ends `failed` / `model_unavailable`
 * when that run would come after `judgeMaxAgeSeconds`.
 */
function recordModelFailure(
  run: RunContext,
  grader: Grader,
  request: GradingRequest,
  graded: Extract<Attempts, { kind: 'model_failed' }>,
): Promise<JobOutcome> {
  const { deps, submission } = run;
  const e = deps.config.embed;
  const failure = graded.last;
  const common = {
    model: grader.model,
    rubric_hash: request.rubricHash,
    artifact_hash: request.artifactHash,
    request_sha256: request.sha256,
    graded_at: deps.now().toISOString(),
  };
  if (!graded.transient) {
    return finish(
      run,
      {
        status: 'not_gradable',
        reason: failure.reason,
        feedback: 'Your work could not be graded automatically. It is not counted against you; check that it is what the activity asks for and submit again.',
        detail: failure.message,
        ...common,
        ...provenance(run),
      },
      { kind: 'none' },
    );
  }
  const delay = nextRunDelaySeconds(run.number, e.judgeRetryDelaySeconds, e.judgeRetryMaxDelaySeconds, failure.retryAfterSeconds);
  const deadline = new Date(submission.created_at).getTime() + e.judgeMaxAgeSeconds * 1000;
  if (deps.now().getTime() + delay * 1000 > deadline) {
    return finish(
      run,
      {
        status: 'failed',
        reason: 'model_unavailable',
        feedback: `Your work could not be graded: the grading model did not answer for ${Math.round(e.judgeMaxAgeSeconds / 3600)} hours. Please submit again.`,
        detail: failure.message,
        ...common,
        ...provenance(run),
      },
      { kind: 'fail', score: null },
    );
  }
  const retryAt = new Date(deps.now().getTime() + delay * 1000).toISOString();
  return wait(
    run,
    { reason: failure.reason, error: failure.reason, attempted_at: deps.now().toISOString(), retry_at: retryAt, runs: run.number, usage: run.usage },
    delay,
  );
}

/**
 * Keep the submission pending with `note` (its `reason` is what the judge answers) and queue the
 * job's next run after `delaySeconds`, in one transaction.
 */
async function wait(run: RunContext, note: { reason: string; runs: number } & Record<string, unknown>, delaySeconds: number): Promise<JobOutcome> {
  const { deps, control, tenantId, artifactId } = run;
  await deps.db.transaction(async (tx: Queryable) => {
    await tx.query(
      `update artifacts set verification = $3::text::jsonb, updated_at = clock_timestamp()
        where id = $1 and tenant_id = $2 and verification->>'status' = 'pending'`,
      [artifactId, tenantId, JSON.stringify({ status: 'pending', ...note })],
    );
    await control.retryLater(tx, delaySeconds);
  });
  return { kind: 'pending', reason: note.reason };
}

/** A ledger row and what its call did. */
interface LedgerEntry {
  id: string;
  record: CallRecord;
}

/**
 * Record the outcome and complete the job — and the ledger row of the call that gave the
 * verdict, if any — in one transaction; the outcome for a waiting request. A verdict (`gated`)
 * first meets its activity's calibration gate (../calibration/gate.ts), in that transaction under
 * the gate's lock: closed → held (`pending`, `calibration_required`, ../calibration/release.ts);
 * open → recorded with `verification.calibration` saying what stood behind it.
 */
async function finish(
  run: RunContext,
  verification: RecordedOutcome & Record<string, unknown>,
  effect: Effect,
  call?: LedgerEntry,
  gated = false,
): Promise<JobOutcome> {
  const { deps, control, tenantId, artifactId } = run;
  const recorded = await deps.db.transaction(async (tx) => {
    if (call) await completeCall(tx, tenantId, call.id, call.record);
    if (gated) {
      const gate = await gateOf(tx, run, String(verification.model));
      if (!gate.live) {
        const held = await holdForCalibration(tx, tenantId, artifactId, verification, effect, deps.now());
        await control.complete(tx, held ? { status: 'pending', reason: CALIBRATION_REQUIRED } : { skipped: 'already graded' });
        return held ? ('held' as const) : false;
      }
      verification = { ...verification, calibration: gate.calibration };
    }
    const ok = await recordOutcome(tx, tenantId, artifactId, verification, effect);
    await control.complete(tx, ok ? { status: verification.status } : { skipped: 'already graded' });
    return ok;
  });
  if (recorded === 'held') return { kind: 'pending', reason: CALIBRATION_REQUIRED };
  if (!recorded) return storedOutcome(deps, tenantId, artifactId);
  judgeVerdicts.inc({ outcome: verification.status });
  return outcomeOf(verification);
}

/**
 * The calibration gate of the run's activity now (../calibration/gate.ts): an activity without
 * examples costs one indexed probe (`uncalibrated`); one with examples is read after its gate lock
 * is taken, so a release (which takes it too) cannot slip between the read and the hold.
 */
async function gateOf(tx: Queryable, run: RunContext, model: string): Promise<Pick<GateState, 'live' | 'calibration'>> {
  const activityId = run.submission.activity_id;
  if (!(await lockGateIfCalibrated(tx, run.tenantId, activityId))) return { live: true, calibration: { status: 'uncalibrated' } };
  return gateState(tx, run.tenantId, activityId, { rubricVersion: run.submission.rubric_version, model, promptVersion: PROMPT_VERSION });
}

/** The outcome stored in the artifact's verification (graded, ended, or still pending). */
export async function storedOutcome(deps: Pick<Deps, 'db'>, tenantId: string, artifactId: string): Promise<JobOutcome> {
  const [row] = await deps.db.query<{ v: Record<string, unknown> | null }>('select verification as v from artifacts where id = $1 and tenant_id = $2', [
    artifactId,
    tenantId,
  ]);
  if (!row) return { kind: 'gone' };
  return outcomeOf(row.v);
}
