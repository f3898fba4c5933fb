/**
 * A calibration report as `get_calibration_report` answers it (docs/judge.md): the run's figures
 * (statistics.ts), what it graded against, whether it is stale, the gate's state and the audited
 * grading-mode changes of the activity. Read as the database owner, after the caller's right to
 * see the activity was checked under RLS (`checkReportAccess`), since the tenant's thresholds
 * (judge_settings) are not readable by authors directly.
 *
 * `stale`: the activity's rubric version, the configured model (SVC_JUDGE_MODEL; not compared when
 * this process has none) or PROMPT_VERSION differs from the report's.
 */
import type { Queryable } from '../../db/index.ts';
import { PROMPT_VERSION } from '../grading/prompt.ts';
import { CalibrationNotFound, visibleActivity } from './examples.ts';
import { gateState, type ModeChange, type Thresholds } from './gate.ts';
import type { Figures } from './statistics.ts';

export interface CalibrationReport extends Partial<Figures> {
  id: string;
  activity_id: string;
  status: string;
  reason: string;
  repeats: number;
  rubric_version: number;
  model: string;
  prompt_version: string;
  /** When the report was made (the run's completion); null while the run is under way. */
  created_at: string | null;
  requested_at: string;
  progress: { graded: number; total: number };
  waiting: Record<string, unknown> | null;
  stale: boolean;
  gate: { thresholds: Thresholds; passes: boolean; live: boolean; examples: number };
  grading: { mode: 'gated' | 'live'; forced: ModeChange | null; changes: ModeChange[] };
}

const FIGURE_KEYS = [
  'n',
  'accuracy',
  'cohen_kappa',
  'false_pass_rate',
  'false_fail_rate',
  'score_mae',
  'leniency',
  'flip_rate',
  'criteria',
  'adversarial',
  'confusion',
  'disagreements',
  'cost',
] as const;

/** A run as read: the report's own columns, then what the report is computed from. */
interface RunRow
  extends Pick<
    CalibrationReport,
    'id' | 'activity_id' | 'status' | 'reason' | 'repeats' | 'rubric_version' | 'model' | 'prompt_version' | 'created_at' | 'requested_at'
  > {
  graded: number;
  total: number;
  note: { waiting?: Record<string, unknown> } | null;
  report: (Figures & { cost: unknown }) | null;
  activity_rubric_version: number;
}

/**
 * Check, as the caller (RLS), that activity `activityId` is theirs to author and that report
 * `reportId` (if given) is one of its runs. Returns the activity's tenant. Throws CalibrationNotFound.
 */
export async function checkReportAccess(tx: Queryable, activityId: string, reportId?: string): Promise<string> {
  const activity = await visibleActivity(tx, activityId);
  if (reportId) {
    const [r] = await tx.query('select 1 from calibration_runs where id = $1 and activity_id = $2', [reportId, activityId]);
    if (!r) throw new CalibrationNotFound(`report_id: calibration report ${reportId} not found for activity ${activityId}`);
  }
  return activity.tenant_id;
}

/**
 * The report `reportId` of activity `activityId` — by default the latest finished one, else the
 * latest run under way — or CalibrationNotFound when the activity has none. `model`: the
 * configured model (null: not compared for staleness).
 */
export async function calibrationReport(
  q: Queryable,
  tenantId: string,
  activityId: string,
  reportId: string | undefined,
  model: string | null,
): Promise<CalibrationReport> {
  const [run] = await q.query<RunRow>(
    `select r.id, r.activity_id, r.status, r.reason, r.repeats, r.rubric_version, r.model, r.prompt_version,
            to_json(r.completed_at) #>> '{}' as created_at, to_json(r.created_at) #>> '{}' as requested_at,
            r.graded, r.total, r.note, r.report, a.rubric_version as activity_rubric_version
       from calibration_runs r join activities a on a.id = r.activity_id and a.tenant_id = r.tenant_id
      where r.tenant_id = $1 and r.activity_id = $2 and ($3::uuid is null or r.id = $3)
      order by (r.status = 'done') desc, r.completed_at desc nulls last, r.created_at desc limit 1`,
    [tenantId, activityId, reportId ?? null],
  );
  if (!run) throw new CalibrationNotFound(`activity_id: activity ${activityId} has no calibration report yet (run_calibration makes one)`);
  const gate = await gateState(q, tenantId, activityId, {
    rubricVersion: run.activity_rubric_version,
    model: model ?? run.model,
    promptVersion: PROMPT_VERSION,
  });
  const changes = await q.query<ModeChange>(
    `select mode, forced, reason, changed_by, to_json(changed_at) #>> '{}' as changed_at
       from grading_mode_changes where tenant_id = $1 and activity_id = $2 order by changed_at desc, id desc limit 20`,
    [tenantId, activityId],
  );
  const stored: Partial<Figures> & { cost?: unknown } = run.report ?? {};
  // The figures in the order docs/judge.md lists them (jsonb keeps its own order).
  const figures = Object.fromEntries(FIGURE_KEYS.filter((k) => k in stored).map((k) => [k, stored[k]]));
  return {
    id: run.id,
    activity_id: run.activity_id,
    status: run.status,
    reason: run.reason,
    repeats: run.repeats,
    rubric_version: run.rubric_version,
    model: run.model,
    prompt_version: run.prompt_version,
    created_at: run.created_at,
    requested_at: run.requested_at,
    ...figures,
    progress: { graded: run.graded, total: run.total },
    waiting: run.note?.waiting ?? null,
    stale: run.rubric_version !== run.activity_rubric_version || (model !== null && run.model !== model) || run.prompt_version !== PROMPT_VERSION,
    gate: { thresholds: gate.thresholds, passes: gate.passes, live: gate.live, examples: gate.examples },
    grading: { mode: gate.mode?.mode ?? 'gated', forced: gate.mode?.forced && gate.mode.mode === 'live' ? gate.mode : null, changes },
  };
}
