/**
 * Judge calibration tools (issue #21; docs/judge.md): add_calibration_example,
 * list_calibration_examples, delete_calibration_example, run_calibration,
 * get_calibration_report, set_grading. They call the embed surface's calibration room through
 * src/embed/index.ts.
 *
 * Each runs as the caller under RLS like every authoring tool (tool.ts): only authors of the
 * activity's tenant see or change examples, runs, reports and grading modes (migration 0141); an
 * unknown activity, example or report — or another tenant's — is "not found". Bad input is an
 * `isError` result naming the field, and nothing is stored or charged. What must happen as the
 * service after the caller's transaction committed (enqueueing the run and waiting for it,
 * reading the tenant's thresholds, releasing held submissions) is the answer's `afterCommit`.
 *
 * run_calibration waits for the run at most `wait_seconds` (default 60), sending
 * `notifications/progress` (examples × repeats graded of all) when the call has a progressToken;
 * a run not finished by then answers its id and state (read it later with get_calibration_report).
 * In a process without a model the run is queued and answered at once (`status: "queued"`): a
 * process with one grades it, as it grades learners' submissions.
 */
import { z } from 'zod';
import { ARTIFACT_KINDS } from '../lib/artifact-kinds.ts';
import {
  addExample,
  awaitRun,
  CalibrationInputError,
  CalibrationNotFound,
  calibrationReport,
  checkReportAccess,
  deleteExample,
  listExamples,
  releaseIfOpen,
  requestRun,
  setGradingMode,
} from '../embed/index.ts';
import { invalidArguments, ToolFailure } from './errors.ts';
import { CREATE, defineTool, DELETE, READ, type AnyTool, type ToolAnswer, type ToolContext } from './tool.ts';

/** Longest run_calibration waits for its run by default, in seconds. */
export const DEFAULT_WAIT_SECONDS = 60;

/** Run `fn`, turning the calibration room's input and not-found errors into isError results. */
async function calibrating<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof CalibrationInputError || err instanceof CalibrationNotFound) throw new ToolFailure(err.message);
    throw err;
  }
}

const artifact = z
  .strictObject({
    kind: z.enum(ARTIFACT_KINDS).describe("The kind of work; must equal the activity's kind"),
    content: z.string().optional().describe('The work itself, as a learner would submit it (text, or a data: URL); at most 256 KiB'),
    ref_url: z.string().max(2048).optional().describe('Where the work can be seen (http(s); fetched when graded)'),
    repo_url: z.string().max(2048).optional().describe('The repository of the work (http(s) git URL or .tar.gz archive)'),
  })
  .describe('The graded work, with the same fields and limits as a learner submission');

const expected = z
  .strictObject({
    passed: z.boolean().describe('Whether this work should pass'),
    score: z.number().min(0).max(100).optional().describe('The score you would give, 0–100 (for score_mae and leniency)'),
    criteria: z
      .array(
        z.strictObject({
          id: z
            .string()
            .min(1)
            .max(64)
            .describe("A criterion id of the activity's rubric (get_activity shows them: the rubric entry's id, or c1, c2… in order)"),
          met: z.boolean(),
        }),
      )
      .max(100)
      .optional()
      .describe('Per rubric criterion, whether the work meets it (for per-criterion agreement)'),
  })
  .describe('Your grade of the work');

const ExampleRecord = z.object({
  id: z.string(),
  activity_id: z.string(),
  artifact: z.object({ kind: z.string(), content: z.string().nullable(), ref_url: z.string().nullable(), repo_url: z.string().nullable() }),
  expected: z.object({ passed: z.boolean(), score: z.number().nullable(), criteria: z.array(z.object({ id: z.string(), met: z.boolean() })) }),
  adversarial: z.boolean(),
  note: z.string().nullable(),
  created_at: z.string(),
});

const addCalibrationExample = defineTool({
  name: 'add_calibration_example',
  title: 'Add a calibration example',
  description:
    "Add graded work you vouch for to an activity's calibration set: the work (same kind and limits as a learner's submission) and your grade " +
    '(passed, optional score and per-criterion met). Mark work that must fail — for instance work that tries to talk the grader into a pass — ' +
    'as adversarial. Examples are never shown to learners. Once an activity has examples, learners are graded live only while its latest ' +
    "calibration report meets the tenant's thresholds (run_calibration). Needs the author role in the activity's tenant.",
  input: z.strictObject({
    activity_id: z.uuid().describe('The activity the example calibrates'),
    artifact,
    expected,
    adversarial: z.boolean().optional().describe('Work that must fail (expected.passed must be false); default false'),
    note: z.string().max(2000).optional().describe('Why you graded it so (for you and other authors)'),
  }),
  output: ExampleRecord,
  annotations: CREATE,
  run: (args, tx, ctx) =>
    calibrating(async (): Promise<ToolAnswer> => {
      const example = await addExample(tx, args, ctx.deps.config.fetchAllowPrivate);
      return {
        structured: example as unknown as Record<string, unknown>,
        summary: `added calibration example ${example.id} to activity ${example.activity_id}`,
      };
    }),
});

const listCalibrationExamples = defineTool({
  name: 'list_calibration_examples',
  title: 'List calibration examples',
  description: "The calibration examples of an activity, oldest first, with your expected grades. Needs the author role in the activity's tenant.",
  input: z.strictObject({ activity_id: z.uuid().describe('The activity') }),
  output: z.object({ activity_id: z.string(), examples: z.array(ExampleRecord) }),
  annotations: READ,
  run: (args, tx) =>
    calibrating(async () => {
      const examples = await listExamples(tx, args.activity_id);
      return { structured: { activity_id: args.activity_id, examples }, summary: `${examples.length} calibration example(s) of activity ${args.activity_id}` };
    }),
});

/**
 * An answer that, once the caller's transaction has committed, releases the submissions the gate
 * of `activityId` holds if it is open now (`releaseIfOpen`, as the owner) and answers
 * `answer(released)`.
 */
const releasingAfterCommit = (
  ctx: ToolContext,
  tenantId: string,
  activityId: string,
  answer: (released: number) => { structured: Record<string, unknown>; summary: string },
): ToolAnswer => ({
  structured: {},
  summary: '',
  afterCommit: async () => answer(await releaseIfOpen(ctx.deps.db, tenantId, activityId, ctx.deps.config.judge?.model ?? null)),
});

const deleteCalibrationExample = defineTool({
  name: 'delete_calibration_example',
  title: 'Delete a calibration example',
  description:
    'Delete a calibration example. Reports already made keep their figures. When it was the last one, the activity grades live again and the submissions the gate held are released (`released`). Needs the author role in its tenant.',
  input: z.strictObject({ id: z.uuid().describe('The calibration example') }),
  output: z.object({ id: z.string(), activity_id: z.string(), deleted: z.literal(true), released: z.number() }),
  annotations: DELETE,
  run: (args, tx, ctx) =>
    calibrating(async (): Promise<ToolAnswer> => {
      const { tenant_id: tenantId, ...row } = await deleteExample(tx, args.id);
      // Without examples the gate is open: what it held is released, as set_grading does.
      return releasingAfterCommit(ctx, tenantId, row.activity_id, (released) => ({
        structured: { ...row, deleted: true, released },
        summary: `deleted calibration example ${row.id}${released ? `; ${released} held submission(s) released` : ''}`,
      }));
    }),
});

const Report = z
  .object({
    id: z.string().describe('The report (calibration run) id'),
    activity_id: z.string(),
    status: z.string().describe('queued, running, waiting (budget spent or model down: it resumes), done, failed'),
    created_at: z.string().nullable().describe('When the report was made; null while the run is under way'),
    stale: z.boolean().describe("The activity's rubric version, the model or the prompt version changed since: a new run is queued automatically"),
    progress: z.object({ graded: z.number(), total: z.number() }).describe('Example × repeat gradings done, of all'),
  })
  .passthrough();

/** The answer of a report read as the service (after the caller's check). */
async function reportAnswer(ctx: ToolContext, tenantId: string, activityId: string, reportId?: string): Promise<ToolAnswer> {
  const report = await calibrating(() => calibrationReport(ctx.deps.db, tenantId, activityId, reportId, ctx.deps.config.judge?.model ?? null));
  const figures =
    report.status === 'done'
      ? `kappa ${report.cohen_kappa}, false pass rate ${report.false_pass_rate}, gate ${report.gate.passes ? 'passes' : 'fails'}`
      : `${report.progress.graded}/${report.progress.total} graded`;
  return {
    structured: report as unknown as Record<string, unknown>,
    summary: `calibration report ${report.id} of activity ${activityId} (${report.status}${report.stale ? ', stale' : ''}): ${figures}`,
  };
}

const runCalibration = defineTool({
  name: 'run_calibration',
  title: 'Run calibration',
  description:
    "Grade every calibration example of an activity with the production judge (same prompt, model, rubric and checks), counted against the tenant's " +
    "model budget, and make a report (agreement, Cohen's kappa, false pass/fail rates, leniency, flip rate with repeats). `repeats` 2–3 grades each " +
    'example that many times (majority verdict) to measure how often verdicts flip. Waits for the run up to wait_seconds (progress notifications ' +
    'with a progressToken), else answers the queued run; read it with get_calibration_report. One run at a time per activity.',
  input: z.strictObject({
    activity_id: z.uuid().describe('The activity to calibrate'),
    repeats: z.number().int().min(1).max(3).optional().describe('How many times each example is graded, 1–3 (default 1)'),
    wait_seconds: z.number().int().min(0).max(120).optional().describe(`How long to wait for the report, in seconds (default ${DEFAULT_WAIT_SECONDS})`),
  }),
  output: Report,
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  run: (args, tx, ctx) =>
    calibrating(async (): Promise<ToolAnswer> => {
      const tenantId = await checkReportAccess(tx, args.activity_id);
      const [examples] = await tx.query<{ n: number }>('select count(*)::int as n from calibration_examples where activity_id = $1', [args.activity_id]);
      if (!examples!.n) throw invalidArguments(`activity_id: activity ${args.activity_id} has no calibration examples (add_calibration_example)`);
      const [{ rubric_version: rubricVersion }] = (await tx.query<{ rubric_version: number }>('select rubric_version from activities where id = $1', [
        args.activity_id,
      ])) as [{ rubric_version: number }];
      // Without a model here the run is queued all the same (its model is fixed when a process with one starts it).
      const run = await requestRun(tx, {
        tenantId,
        activityId: args.activity_id,
        rubricVersion,
        repeats: args.repeats ?? 1,
        model: ctx.deps.config.judge?.model ?? '',
      });
      return {
        structured: { id: run.id },
        summary: '',
        afterCommit: async () => {
          const judge = ctx.judge;
          if (judge) await judge.catchUpCalibration({ activityId: args.activity_id });
          if (judge?.queue.working) {
            const progress = ctx.progress;
            const wait = (args.wait_seconds ?? DEFAULT_WAIT_SECONDS) * 1000;
            await awaitRun(ctx.deps, tenantId, run.id, wait, progress && ((p) => progress(p.graded, p.total, `graded ${p.graded} of ${p.total}`)));
          }
          return reportAnswer(ctx, tenantId, args.activity_id, run.id);
        },
      };
    }),
});

const getCalibrationReport = defineTool({
  name: 'get_calibration_report',
  title: 'Read a calibration report',
  description:
    "An activity's calibration report — the latest finished one, or report_id — with its figures, whether it is stale, the gate (the tenant's " +
    'thresholds and whether the report passes them) and the audited grading-mode changes (set_grading). Needs the author role in the tenant.',
  input: z.strictObject({
    activity_id: z.uuid().describe('The activity'),
    report_id: z.uuid().optional().describe('A report of that activity (run_calibration answers its id); default: the latest finished one'),
  }),
  output: Report,
  annotations: READ,
  run: (args, tx, ctx) =>
    calibrating(async (): Promise<ToolAnswer> => {
      const tenantId = await checkReportAccess(tx, args.activity_id, args.report_id);
      return { structured: {}, summary: '', afterCommit: () => reportAnswer(ctx, tenantId, args.activity_id, args.report_id) };
    }),
});

const setGrading = defineTool({
  name: 'set_grading',
  title: "Set an activity's grading mode",
  description:
    'mode "live" with force: true lets learners\' verdicts through although no passing calibration report stands behind them (held submissions are ' +
    'released at once); each such verdict records that it was forced, with your reason. mode "gated" returns the activity to the calibration gate. ' +
    'Audited: who, when and why (get_calibration_report shows it). Needs the author role in the tenant.',
  input: z.strictObject({
    activity_id: z.uuid().describe('The activity'),
    mode: z.enum(['live', 'gated']).describe('live (with force) or gated'),
    force: z.boolean().optional().describe('Required true with mode "live"'),
    reason: z.string().trim().min(1).max(2000).describe('Why (stored with the change)'),
  }),
  output: z.object({
    activity_id: z.string(),
    mode: z.string(),
    forced: z.boolean(),
    reason: z.string(),
    changed_by: z.string().nullable(),
    changed_at: z.string(),
    released: z.number(),
  }),
  // appends an audited change; the same call twice leaves the same mode
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  run: (args, tx, ctx) =>
    calibrating(async (): Promise<ToolAnswer> => {
      if (args.mode === 'live' && args.force !== true)
        throw invalidArguments('force: mode "live" without a passing calibration report needs force: true (and a reason)');
      const { tenantId, change } = await setGradingMode(tx, { activityId: args.activity_id, mode: args.mode, force: args.force === true, reason: args.reason });
      return releasingAfterCommit(ctx, tenantId, args.activity_id, (released) => ({
        structured: { activity_id: args.activity_id, ...change, released },
        summary: `activity ${args.activity_id} is ${change.mode}${change.forced ? ' (forced)' : ''}; ${released} held submission(s) released`,
      }));
    }),
});

export const calibrationTools: AnyTool[] = [
  addCalibrationExample,
  listCalibrationExamples,
  deleteCalibrationExample,
  runCalibration,
  getCalibrationReport,
  setGrading,
];
