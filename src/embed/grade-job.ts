/**
 * One run of a grading job (queue.ts): read the artifact, ask the model with bounded retries,
 * record the outcome. Runs in a worker of a process that has a model, outside any request.
 *
 * 1. Load the submission (artifact, its activity). Gone, or no longer pending → complete the job
 *    (nothing to do; a verdict is recorded once).
 * 2. Read the artifact (read/index.ts). Nothing readable → a `failed` verdict whose feedback says
 *    why (`reason: "unreadable"`), without calling the model.
 * 3. Grade: up to `judgeAttempts` model calls; timeouts, HTTP errors, rate limits (waiting what
 *    `retry-after` asks, at most `MAX_BACKOFF_MS`) and malformed output are retried after a
 *    short backoff (0.5 s, 1 s, 2 s …).
 * 4. A verdict → in one transaction: record it (verdict.ts: artifact, result, progress) and
 *    complete the job. Every attempt failed → in one transaction: note the error in the
 *    artifact's verification (`{status: "pending", error, attempted_at, runs}`) and queue the
 *    job's next run after `judgeRetryDelaySeconds` (queue.ts `retryLater`), until the model is back.
 *
 * The stored verification of a graded artifact is the grader's `Verdict` plus `read` (what was
 * read from each field) and `runs` (how many job runs it took).
 */
import type { Deps } from '../deps.ts';
import { GraderError, PROMPT_VERSION, rubricCriteria, rubricHash, type Grader, type Verdict } from './grader.ts';
import type { GradingJob, JobControl, JobOutcome } from './queue.ts';
import { readArtifact, Unreadable, type ArtifactView, type ReadOptions } from './read/index.ts';
import { recordVerdict } from './verdict.ts';

/** Longest wait between two model attempts, in milliseconds. */
export const MAX_BACKOFF_MS = 10_000;

interface SubmissionRow {
  id: string;
  tenant_id: string;
  kind: string;
  ref_url: string | null;
  repo_url: string | null;
  content: string | null;
  status: string | null;
  runs: number | null;
  title: string;
  activity_kind: string;
  spec: string;
  rubric: unknown;
  pass_threshold: number;
}

/** The job lease for these settings, in seconds: reading, every attempt and its backoff, and a margin. */
export function leaseSeconds(deps: Pick<Deps, 'config'>): number {
  const e = deps.config.embed;
  const modelMs = deps.config.judge?.timeoutMs ?? 60_000;
  return Math.ceil((e.fetchTimeoutMs + e.judgeAttempts * modelMs + (e.judgeAttempts - 1) * MAX_BACKOFF_MS) / 1000) + 5;
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
  });

/** Backoff before attempt `n + 1` (n ≥ 1) after `err`, in milliseconds. */
export function backoffMs(n: number, err: GraderError): number {
  if (err.retryAfterSeconds !== undefined) return Math.min(MAX_BACKOFF_MS, err.retryAfterSeconds * 1000);
  return Math.min(MAX_BACKOFF_MS, 500 * 2 ** (n - 1));
}

/** Make the handler of grading jobs for this process's `grader`. */
export function gradingHandler(deps: Deps, grader: Grader, options: { lookup?: ReadOptions['lookup'] } = {}) {
  return async (job: GradingJob, control: JobControl, signal: AbortSignal): Promise<JobOutcome> => {
    const { artifact_id: artifactId, tenant_id: tenantId } = job.data;
    // Step 1: the submission.
    const [s] = await deps.db.query<SubmissionRow>(
      `select a.id, a.tenant_id, a.kind, a.ref_url, a.repo_url, a.content,
              a.verification->>'status' as status, (a.verification->>'runs')::int as runs,
              act.title, act.kind as activity_kind, act.spec, act.rubric, act.pass_threshold
         from artifacts a join activities act on act.id = a.activity_id
        where a.id = $1 and a.tenant_id = $2`,
      [artifactId, tenantId],
    );
    if (!s || s.status !== 'pending') {
      await deps.db.transaction((tx) => control.complete(tx, { skipped: s ? 'already graded' : 'artifact gone' }));
      if (!s) return { kind: 'gone' };
      return storedOutcome(deps, tenantId, artifactId);
    }
    const runs = (s.runs ?? 0) + 1;
    const activity = { title: s.title, kind: s.activity_kind, spec: s.spec, rubric: s.rubric, pass_threshold: Number(s.pass_threshold) };
    const e = deps.config.embed;

    // Step 2: read.
    let view: ArtifactView;
    try {
      view = await readArtifact(s, {
        allowPrivate: deps.config.fetchAllowPrivate,
        timeoutMs: e.fetchTimeoutMs,
        maxBytes: e.fetchMaxBytes,
        inputBytes: e.judgeInputBytes,
        vision: e.judgeVision,
        signal,
        lookup: options.lookup,
      });
    } catch (err) {
      if (!(err instanceof Unreadable) || signal.aborted) throw err;
      const criteria = rubricCriteria(activity.rubric);
      const verdict = {
        status: 'failed' as const,
        score: 0,
        passed: false,
        criteria: [],
        feedback: `Your work could not be read: ${err.message}.`,
        reason: 'unreadable',
        detail: err.message,
        injection: { suspected: false, signals: [] },
        model: null,
        prompt_version: PROMPT_VERSION,
        rubric_hash: rubricHash(criteria, activity.pass_threshold),
        artifact_hash: null,
        graded_at: deps.now().toISOString(),
        runs,
      };
      return finish(deps, control, tenantId, artifactId, verdict);
    }

    // Step 3: grade, with bounded retries.
    let verdict: Verdict | undefined;
    let last: GraderError | undefined;
    for (let n = 1; n <= e.judgeAttempts && !signal.aborted; n++) {
      try {
        verdict = await grader.grade(activity, s, view, deps.now, signal);
        break;
      } catch (err) {
        if (!(err instanceof GraderError)) throw err;
        last = err;
        if (n < e.judgeAttempts) await sleep(backoffMs(n, err), signal);
      }
    }
    if (signal.aborted && !verdict) throw new Error('grading run aborted');

    // Step 4: record.
    if (verdict) return finish(deps, control, tenantId, artifactId, { ...verdict, read: view.sources, runs });
    const reason = last?.reason ?? 'timeout';
    await deps.db.transaction(async (tx) => {
      await tx.query(
        `update artifacts
            set verification = jsonb_build_object('status', 'pending', 'error', $3::text, 'attempted_at', $4::text, 'runs', $5::int),
                updated_at = clock_timestamp()
          where id = $1 and tenant_id = $2 and verification->>'status' = 'pending'`,
        [artifactId, tenantId, reason, deps.now().toISOString(), runs],
      );
      await control.retryLater(tx);
    });
    return { kind: 'pending', reason };
  };
}

/** Record `verdict` and complete the job, in one transaction; the outcome for a waiting request. */
async function finish(
  deps: Deps,
  control: JobControl,
  tenantId: string,
  artifactId: string,
  verdict: { status: 'passed' | 'failed'; passed: boolean; score: number; feedback: string } & Record<string, unknown>,
): Promise<JobOutcome> {
  const recorded = await deps.db.transaction(async (tx) => {
    const ok = await recordVerdict(tx, tenantId, artifactId, verdict);
    await control.complete(tx, ok ? { status: verdict.status } : { skipped: 'already graded' });
    return ok;
  });
  if (!recorded) return storedOutcome(deps, tenantId, artifactId);
  return { kind: 'graded', status: verdict.status, score: verdict.score, feedback: verdict.feedback };
}

/** The outcome stored in the artifact's verification (graded, or still pending). */
export async function storedOutcome(deps: Pick<Deps, 'db'>, tenantId: string, artifactId: string): Promise<JobOutcome> {
  const [row] = await deps.db.query<{ v: { status?: string; score?: number; feedback?: string; error?: string } | null }>(
    'select verification as v from artifacts where id = $1 and tenant_id = $2',
    [artifactId, tenantId],
  );
  const v = row?.v;
  if (!row) return { kind: 'gone' };
  if (v && (v.status === 'passed' || v.status === 'failed')) {
    return { kind: 'graded', status: v.status, score: Number(v.score ?? 0), feedback: String(v.feedback ?? '') };
  }
  return { kind: 'pending', reason: v?.error ?? 'not graded yet' };
}
