/**
 * Calibration runs (issue #21): grade every example of an activity with exactly the production
 * path, and store the report.
 *
 * Request. `requestRun` inserts a `queued` run as the caller (RLS: authors of the tenant), one
 * open run per activity (a second request answers the one under way); `enqueueOpenRuns` then
 * puts a job for it on the grading queue (../queue/: the same durable pg-boss queue, job id = run
 * id, `{calibration_run_id, tenant_id}`), as the database owner, after the caller's transaction
 * committed. A run left without a job (the process died in between) is enqueued by the next
 * `enqueueOpenRuns` — at every worker start and backlog sweep.
 *
 * Automatic re-runs. A report is stale once the activity's rubric version, the configured model
 * or PROMPT_VERSION differs from its own (report.ts). `queueStaleRuns` queues a run (reason
 * `rubric_changed`, `model_changed` or `prompt_changed`) for every activity that has examples, a
 * run before and no open run, whose latest run differs: right after `update_activity` changed a
 * rubric (through the authoring tool), and at every worker start (the model and the prompt change
 * only with a new configuration or release, i.e. a restart).
 *
 * Run (the job's handler, `calibrationHandler`). On its first run the job fixes what it grades
 * against (the activity's rubric version now, the grader's model, PROMPT_VERSION) and which
 * examples (those existing then), then grades each example × repeat not graded yet, in order, with
 * ../grading/grade-job.ts `gradeArtifact` — the read, `Grader.prepare` and bounded attempts within
 * the tenant's model budget of a learner's submission; ledger rows name the run
 * (`model_calls.calibration_run_id`). Each grade is stored as it comes (calibration_grades), so a
 * run that stops resumes where it was:
 * - the tenant's budget spent, or the model down (transient failures) → the run is `waiting`
 *   (`note.waiting` says why and until when) and its job runs again then, as a submission would;
 * - a run near its time bound hands over to its next job run at once;
 * - a failure of the example itself (unreadable, invalid output, a refusal) is graded
 *   `{not_gradable: reason}` (a fail without a score in the figures).
 * When every grade is in: the figures (statistics.ts), the cost (the run's ledger rows), status
 * `done`; and if the activity's gate is now open, its held submissions are released (release.ts)
 * — one transaction with the job's completion.
 *
 * A pass that production would hold for review (possible prompt injection) counts as a fail here:
 * it would not let the learner through.
 */
import type { Deps } from '../../deps.ts';
import type { Db, Queryable } from '../../db/index.ts';
import { gradeArtifact, maxRunSeconds, nextRunDelaySeconds, type GradingRun, type Usage } from '../grading/grade-job.ts';
import { completeCall } from '../grading/ledger.ts';
import type { Grader } from '../grading/model.ts';
import { PROMPT_VERSION, rubricCriteria } from '../grading/prompt.ts';
import type { CalibrationJobData, GradingJob, GradingQueue, JobControl, JobOutcome } from '../queue/index.ts';
import type { ReadOptions } from '../read/index.ts';
import { gateState } from './gate.ts';
import { releaseHeld } from './release.ts';
import { calibrationFigures, type GradedExample, type RunGrade } from './statistics.ts';

export type RunReason = 'requested' | 'rubric_changed' | 'model_changed' | 'prompt_changed';

/** A run's state for the tool that waits on it. */
export interface RunProgress {
  id: string;
  status: 'queued' | 'running' | 'waiting' | 'done' | 'failed';
  graded: number;
  total: number;
  note: Record<string, unknown> | null;
}

/** True for a calibration run's job. */
export const isCalibrationJob = (job: GradingJob): job is GradingJob & { data: CalibrationJobData } => 'calibration_run_id' in job.data;

/**
 * Ask for a run of activity `activityId` (tenant `tenantId`) in the caller's transaction (RLS:
 * an author of the tenant). `model`: the configured model's name (fixed again when the run
 * starts). Returns the new run, or the open one (`created: false`).
 */
export async function requestRun(
  tx: Queryable,
  a: { tenantId: string; activityId: string; rubricVersion: number; repeats: number; model: string },
): Promise<{ id: string; created: boolean }> {
  const [row] = await tx.query<{ id: string }>(
    `insert into calibration_runs (tenant_id, activity_id, repeats, rubric_version, model, prompt_version, reason, requested_by)
     values ($1, $2, $3, $4, $5, $6, 'requested', public.current_itera_user_id())
     on conflict (tenant_id, activity_id) where status in ('queued', 'running', 'waiting') do nothing
     returning id`,
    [a.tenantId, a.activityId, a.repeats, a.rubricVersion, a.model, PROMPT_VERSION],
  );
  if (row) return { id: row.id, created: true };
  const [open] = await tx.query<{ id: string }>(
    `select id from calibration_runs where tenant_id = $1 and activity_id = $2 and status in ('queued', 'running', 'waiting')`,
    [a.tenantId, a.activityId],
  );
  // The open run finished between the insert and this read: insert again (now there is none open).
  return open ? { id: open.id, created: false } : requestRun(tx, a);
}

/**
 * Queue a run for every activity (of `scope`, or all) that has examples and an earlier run but no
 * open one, whose latest run was graded under another rubric version, model or prompt version
 * (header). As the database owner. Returns the runs queued.
 */
export async function queueStaleRuns(db: Queryable, model: string, scope: { tenantId?: string; activityId?: string } = {}): Promise<string[]> {
  const rows = await db.query<{ id: string }>(
    `insert into calibration_runs (tenant_id, activity_id, repeats, rubric_version, model, prompt_version, reason)
     select l.tenant_id, l.activity_id, l.repeats, act.rubric_version, $1, $2,
            case when l.rubric_version <> act.rubric_version then 'rubric_changed'
                 when l.model <> $1 then 'model_changed' else 'prompt_changed' end
       from (select distinct on (r.tenant_id, r.activity_id) r.tenant_id, r.activity_id, r.repeats, r.rubric_version, r.model, r.prompt_version, r.status
               from calibration_runs r
              where ($3::uuid is null or r.tenant_id = $3) and ($4::uuid is null or r.activity_id = $4)
              order by r.tenant_id, r.activity_id, r.created_at desc, r.id desc) l
       join activities act on act.id = l.activity_id and act.tenant_id = l.tenant_id
      where l.status in ('done', 'failed')
        and (l.rubric_version <> act.rubric_version or l.model <> $1 or l.prompt_version <> $2)
        and exists (select 1 from calibration_examples e where e.tenant_id = l.tenant_id and e.activity_id = l.activity_id)
     on conflict (tenant_id, activity_id) where status in ('queued', 'running', 'waiting') do nothing
     returning id`,
    [model, PROMPT_VERSION, scope.tenantId ?? null, scope.activityId ?? null],
  );
  return rows.map((r) => r.id);
}

/**
 * Put a job on `queue` for every open run (of `scope`) that has no live job, as the database
 * owner; wake a worker. Returns how many were enqueued.
 */
export async function enqueueOpenRuns(db: Db, queue: GradingQueue, scope: { tenantId?: string; activityId?: string; runId?: string } = {}): Promise<number> {
  const count = await db.transaction(async (tx) => {
    const open = await tx.query<{ id: string; tenant_id: string }>(
      `select r.id, r.tenant_id from calibration_runs r
        where r.status in ('queued', 'running', 'waiting')
          and ($1::uuid is null or r.tenant_id = $1) and ($2::uuid is null or r.activity_id = $2) and ($3::uuid is null or r.id = $3)
          and not exists (select 1 from pgboss.job j where j.id = r.id and j.state < 'completed')`,
      [scope.tenantId ?? null, scope.activityId ?? null, scope.runId ?? null],
    );
    for (const r of open) await queue.enqueue(tx, { calibration_run_id: r.id, tenant_id: r.tenant_id }, 0);
    return open.length;
  });
  if (count) queue.kick();
  return count;
}

/** The state of run `runId` of `tenantId` (as the owner), or undefined. */
export async function runProgress(q: Queryable, tenantId: string, runId: string): Promise<RunProgress | undefined> {
  const [row] = await q.query<RunProgress>('select id, status, graded, total, note from calibration_runs where tenant_id = $1 and id = $2', [tenantId, runId]);
  return row;
}

interface RunRow {
  id: string;
  tenant_id: string;
  activity_id: string;
  status: string;
  repeats: number;
  note: { example_ids?: string[] } | null;
  created_at: string;
  title: string;
  kind: string;
  spec: string;
  rubric: unknown;
  pass_threshold: number;
  rubric_version: number;
}

interface ExampleRow {
  id: string;
  kind: string;
  content: string | null;
  ref_url: string | null;
  repo_url: string | null;
  expected_passed: boolean;
  expected_score: number | null;
  expected_criteria: { id: string; met: boolean }[];
  adversarial: boolean;
}

/** Make the handler of calibration jobs for this process's `grader` (the run of the header). */
export function calibrationHandler(deps: Deps, grader: Grader, options: { lookup?: ReadOptions['lookup'] } = {}) {
  return async (job: GradingJob & { data: CalibrationJobData }, control: JobControl, signal: AbortSignal): Promise<JobOutcome> => {
    const { calibration_run_id: runId, tenant_id: tenantId } = job.data;
    const started = Date.now();
    const sliceMs = (maxRunSeconds(deps) * 1000) / 2;
    const run = await startRun(deps, grader, tenantId, runId);
    if (!run) {
      await deps.db.transaction((tx) => control.complete(tx, { skipped: 'run gone or finished' }));
      return { kind: 'gone' };
    }
    const activity = { title: run.title, kind: run.kind, spec: run.spec, rubric: run.rubric, pass_threshold: Number(run.pass_threshold) };
    const examples = await deps.db.query<ExampleRow>(
      `select id, kind, content, ref_url, repo_url, expected_passed, expected_score::float8 as expected_score, expected_criteria, adversarial
         from calibration_examples where tenant_id = $1 and id = any($2::uuid[]) order by created_at, id`,
      [tenantId, run.note?.example_ids ?? []],
    );
    const done = new Set(
      (
        await deps.db.query<{ k: string }>(`select example_id || '/' || repeat as k from calibration_grades where tenant_id = $1 and run_id = $2`, [
          tenantId,
          runId,
        ])
      ).map((r) => r.k),
    );
    for (const example of examples) {
      for (let repeat = 1; repeat <= run.repeats; repeat++) {
        if (done.has(`${example.id}/${repeat}`)) continue;
        if (Date.now() - started > sliceMs) return handOver(deps, control, tenantId, runId, 1, null);
        const usage: Usage = { calls: 0, prompt_tokens: 0, completion_tokens: 0 };
        const grading: GradingRun = { deps, tenantId, ledger: { calibrationRunId: runId }, artifact: example, activity, number: repeat, attempts: 0, usage };
        const graded = await gradeArtifact(grading, grader, signal, options.lookup);
        let grade: RunGrade;
        let callId: string | null = null;
        if (graded.kind === 'unreadable') grade = { not_gradable: 'unreadable' };
        else if (graded.kind === 'budget_exhausted') return handOver(deps, control, tenantId, runId, graded.delaySeconds, graded.note);
        else if (graded.kind === 'model_failed') {
          if (graded.transient) {
            const delay = nextRunDelaySeconds(
              1,
              deps.config.embed.judgeRetryDelaySeconds,
              deps.config.embed.judgeRetryMaxDelaySeconds,
              graded.last.retryAfterSeconds,
            );
            const retryAt = new Date(deps.now().getTime() + delay * 1000).toISOString();
            return handOver(deps, control, tenantId, runId, delay, { reason: graded.last.reason, retry_at: retryAt });
          }
          grade = { not_gradable: graded.last.reason };
        } else {
          const v = graded.verdict;
          const heldForReview = v.passed && v.injection.suspected;
          grade = {
            passed: v.passed && !heldForReview,
            score: v.score,
            criteria: v.criteria.map((c) => ({ id: c.id, met: c.met })),
            evidence:
              (heldForReview ? 'held for review (possible prompt injection); ' : '') + (v.criteria.find((c) => c.met !== v.passed)?.evidence ?? v.feedback),
          };
          callId = v.call_id;
        }
        await deps.db.transaction(async (tx) => {
          if (graded.kind === 'verdict') await completeCall(tx, tenantId, graded.call.id, graded.call.record);
          await tx.query(
            `insert into calibration_grades (tenant_id, run_id, example_id, repeat, outcome, call_id) values ($1, $2, $3, $4, $5::text::jsonb, $6)
             on conflict do nothing`,
            [tenantId, runId, example.id, repeat, JSON.stringify(grade), callId],
          );
          await tx.query(`update calibration_runs set graded = graded + 1, status = 'running', note = note - 'waiting' where tenant_id = $1 and id = $2`, [
            tenantId,
            runId,
          ]);
        });
      }
    }
    return complete(deps, grader, control, run, examples);
  };
}

/**
 * Fix what run `runId` grades against on its first job run (`queued` → `running`: the activity's
 * rubric version, the grader's model, PROMPT_VERSION, the examples existing now) — again, with
 * its grades so far dropped, when a process with another model or prompt version resumes it (a
 * report never mixes models). Undefined when the run is gone or finished.
 */
async function startRun(deps: Deps, grader: Grader, tenantId: string, runId: string): Promise<RunRow | undefined> {
  return deps.db.transaction(async (tx) => {
    const [run] = await tx.query<RunRow>(
      `select r.id, r.tenant_id, r.activity_id, r.status, r.repeats, r.note, to_json(r.created_at) #>> '{}' as created_at,
              a.title, a.kind, a.spec, a.rubric, a.pass_threshold, a.rubric_version
         from calibration_runs r join activities a on a.id = r.activity_id and a.tenant_id = r.tenant_id
        where r.tenant_id = $1 and r.id = $2 for update of r`,
      [tenantId, runId],
    );
    if (!run || run.status === 'done' || run.status === 'failed') return undefined;
    const [fixed] = await tx.query<{ model: string; prompt_version: string }>(
      'select model, prompt_version from calibration_runs where tenant_id = $1 and id = $2',
      [tenantId, runId],
    );
    if (run.status !== 'queued' && fixed!.model === grader.model && fixed!.prompt_version === PROMPT_VERSION) return run;
    // First job run — or a run resumed by a process with another model or prompt: (re)start it whole.
    await tx.query('delete from calibration_grades where tenant_id = $1 and run_id = $2', [tenantId, runId]);
    const ids = (
      await tx.query<{ id: string }>('select id from calibration_examples where tenant_id = $1 and activity_id = $2 order by created_at, id', [
        tenantId,
        run.activity_id,
      ])
    ).map((r) => r.id);
    const note = { example_ids: ids };
    await tx.query(
      `update calibration_runs set status = 'running', rubric_version = $3, model = $4, prompt_version = $5, total = $6, graded = 0, note = $7::text::jsonb
        where tenant_id = $1 and id = $2`,
      [tenantId, runId, run.rubric_version, grader.model, PROMPT_VERSION, ids.length * run.repeats, JSON.stringify(note)],
    );
    return { ...run, status: 'running', note };
  });
}

/** The run waits (`waiting` with `note.waiting`) or goes on in its next job run after `delaySeconds`. */
async function handOver(
  deps: Deps,
  control: JobControl,
  tenantId: string,
  runId: string,
  delaySeconds: number,
  waiting: Record<string, unknown> | null,
): Promise<JobOutcome> {
  await deps.db.transaction(async (tx) => {
    if (waiting) {
      await tx.query(
        `update calibration_runs set status = 'waiting', note = coalesce(note, '{}'::jsonb) || jsonb_build_object('waiting', $3::text::jsonb) where tenant_id = $1 and id = $2`,
        [tenantId, runId, JSON.stringify(waiting)],
      );
    }
    await control.retryLater(tx, delaySeconds);
  });
  return { kind: 'pending', reason: waiting ? String(waiting.reason) : 'running' };
}

/** Every grade is in: the figures, the cost, `done`; release the activity's held submissions if its gate is now open. */
async function complete(deps: Deps, grader: Grader, control: JobControl, run: RunRow, examples: ExampleRow[]): Promise<JobOutcome> {
  const { tenant_id: tenantId, id: runId } = run;
  await deps.db.transaction(async (tx) => {
    const grades = await tx.query<{ example_id: string; repeat: number; outcome: RunGrade }>(
      'select example_id, repeat, outcome from calibration_grades where tenant_id = $1 and run_id = $2 order by repeat',
      [tenantId, runId],
    );
    const graded: GradedExample[] = examples.map((e) => ({
      id: e.id,
      adversarial: e.adversarial,
      expected: { passed: e.expected_passed, score: e.expected_score === null ? null : Number(e.expected_score), criteria: e.expected_criteria },
      runs: grades.filter((g) => g.example_id === e.id).map((g) => g.outcome),
    }));
    const figures = calibrationFigures(
      graded,
      rubricCriteria(run.rubric).map((c) => c.id),
    );
    const [cost] = await tx.query<{ calls: number; prompt_tokens: number; completion_tokens: number }>(
      `select count(*)::int as calls, coalesce(sum(prompt_tokens), 0)::int as prompt_tokens, coalesce(sum(completion_tokens), 0)::int as completion_tokens
         from model_calls where tenant_id = $1 and calibration_run_id = $2`,
      [tenantId, runId],
    );
    await tx.query(
      `update calibration_runs set status = 'done', report = $3::text::jsonb, completed_at = clock_timestamp(), note = note - 'waiting'
        where tenant_id = $1 and id = $2`,
      [tenantId, runId, JSON.stringify({ ...figures, cost })],
    );
    // The gate under what the activity is graded with now (a rubric edited during the run makes this report stale).
    const [now] = await tx.query<{ rubric_version: number }>('select rubric_version from activities where id = $1 and tenant_id = $2', [
      run.activity_id,
      tenantId,
    ]);
    const gate = await gateState(tx, tenantId, run.activity_id, {
      rubricVersion: now?.rubric_version ?? -1,
      model: grader.model,
      promptVersion: PROMPT_VERSION,
    });
    if (gate.passes && gate.live) await releaseHeld(tx, tenantId, run.activity_id, gate.calibration);
    await control.complete(tx, { status: 'done' });
  });
  return { kind: 'pending', reason: 'done' };
}
