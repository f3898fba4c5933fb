/**
 * The calibration gate (issue #21 "The gate"): whether an activity grades learners live, and
 * what stood behind each verdict (`verification.calibration`).
 *
 * An activity without calibration examples grades as before; its verdicts say
 * `{status: "uncalibrated"}`. An activity with examples grades learners live only while its latest
 * non-stale report (a `done` calibration run graded under the activity's current rubric version,
 * the configured model and PROMPT_VERSION) meets the tenant's thresholds (judge_settings,
 * migration 0140; no row = the defaults): `cohen_kappa ≥ min_kappa`, `false_pass_rate ≤
 * max_false_pass_rate` (a report with no expected-fail example has no false-pass rate and does not
 * pass: nothing showed that the judge can fail work) and, with `require_adversarial_fail`, no
 * adversarial example graded pass. Its verdicts then say `{report_id, cohen_kappa,
 * false_pass_rate, created_at}` of that report. Otherwise learners' submissions are held
 * (release.ts) — unless an author forced the activity live (`set_grading {mode: "live", force:
 * true, reason}`, audited in grading_mode_changes, migration 0141): its verdicts then say
 * `{status: "forced", report_id, cohen_kappa, false_pass_rate, created_at, forced_at, forced_by,
 * reason}` (the report fields of the latest non-stale report, or null).
 *
 * Race with a release: the judge reads the gate and holds a submission in the transaction that
 * records it, under the activity's gate lock (`lockGate`), which a release takes too; so a
 * submission is either held before a release (and released by it) or recorded after it (live).
 */
import type { Queryable } from '../../db/index.ts';

/** The tenant's gate thresholds (judge_settings; defaults when it has no row). */
export interface Thresholds {
  min_kappa: number;
  max_false_pass_rate: number;
  require_adversarial_fail: boolean;
}

export const DEFAULT_THRESHOLDS: Thresholds = { min_kappa: 0.6, max_false_pass_rate: 0.1, require_adversarial_fail: true };

/** What stood behind a verdict (`verification.calibration`; header). */
export type Calibration =
  | { report_id: string; cohen_kappa: number | null; false_pass_rate: number | null; created_at: string }
  | { status: 'uncalibrated' }
  | {
      status: 'forced';
      report_id: string | null;
      cohen_kappa: number | null;
      false_pass_rate: number | null;
      created_at: string | null;
      forced_at: string;
      forced_by: string | null;
      reason: string;
    };

/** The figures of a report the gate judges. */
export interface GatedReport {
  id: string;
  cohen_kappa: number | null;
  false_pass_rate: number | null;
  adversarial: { n: number; passed: number };
  created_at: string;
}

/** The latest change of an activity's grading mode (set_grading), or null: `gated`. */
export interface ModeChange {
  mode: 'gated' | 'live';
  forced: boolean;
  reason: string;
  changed_by: string | null;
  changed_at: string;
}

/** The gate of one activity now. */
export interface GateState {
  examples: number;
  mode: ModeChange | null;
  thresholds: Thresholds;
  /** The latest non-stale report, or null. */
  report: GatedReport | null;
  /** That report meets the thresholds. */
  passes: boolean;
  /** Learners' verdicts are recorded (not held). */
  live: boolean;
  /** What a verdict recorded now says stood behind it. */
  calibration: Calibration;
}

/** What the activity is graded under now (a report is stale once one of these differs from its own). */
export interface GradingVersions {
  rubricVersion: number;
  model: string;
  promptVersion: string;
}

/** Namespace of the per-activity gate lock (key: hashtext(activity id)). */
const GATE_LOCK = 7314;

/** Take the activity's gate lock until the end of the transaction (header: race with a release). */
export async function lockGate(q: Queryable, activityId: string): Promise<void> {
  await q.query('select pg_advisory_xact_lock($1, hashtext($2))', [GATE_LOCK, activityId]);
}

/**
 * If activity `activityId` has calibration examples, take its gate lock (as `lockGate`) and
 * return true; otherwise return false without a lock. One statement: the judge's path for an
 * activity without examples costs this one indexed probe.
 */
export async function lockGateIfCalibrated(q: Queryable, tenantId: string, activityId: string): Promise<boolean> {
  const rows = await q.query(
    `select 1 from (select 1 from calibration_examples where tenant_id = $1 and activity_id = $2 limit 1) e
       cross join lateral (select pg_advisory_xact_lock($3, hashtext($4))) l`,
    [tenantId, activityId, GATE_LOCK, activityId],
  );
  return rows.length > 0;
}

/** Whether `report` meets `t` (header). */
function meetsThresholds(report: Pick<GatedReport, 'cohen_kappa' | 'false_pass_rate' | 'adversarial'>, t: Thresholds): boolean {
  return (
    report.cohen_kappa !== null &&
    report.cohen_kappa >= t.min_kappa &&
    report.false_pass_rate !== null &&
    report.false_pass_rate <= t.max_false_pass_rate &&
    (!t.require_adversarial_fail || report.adversarial.passed === 0)
  );
}

const GATE_SQL = `
  select (select count(*)::int from calibration_examples e where e.tenant_id = $1 and e.activity_id = $2) as examples,
         (select json_build_object('mode', m.mode, 'forced', m.forced, 'reason', m.reason, 'changed_by', m.changed_by,
                                   'changed_at', to_json(m.changed_at) #>> '{}')
            from grading_mode_changes m where m.tenant_id = $1 and m.activity_id = $2
           order by m.changed_at desc, m.id desc limit 1) as mode,
         (select json_build_object('id', r.id, 'cohen_kappa', r.report->'cohen_kappa', 'false_pass_rate', r.report->'false_pass_rate',
                                   'adversarial', r.report->'adversarial', 'created_at', to_json(r.completed_at) #>> '{}')
            from calibration_runs r
           where r.tenant_id = $1 and r.activity_id = $2 and r.status = 'done'
             and r.rubric_version = $3 and r.model = $4 and r.prompt_version = $5
           order by r.completed_at desc limit 1) as report,
         (select json_build_object('min_kappa', s.min_kappa, 'max_false_pass_rate', s.max_false_pass_rate,
                                   'require_adversarial_fail', s.require_adversarial_fail)
            from judge_settings s where s.tenant_id = $1) as thresholds`;

/** The gate of activity `activityId` of `tenantId` under `v` (one statement; rules in the header). */
export async function gateState(q: Queryable, tenantId: string, activityId: string, v: GradingVersions): Promise<GateState> {
  const [row] = await q.query<{ examples: number; mode: ModeChange | null; report: GatedReport | null; thresholds: Record<string, unknown> | null }>(GATE_SQL, [
    tenantId,
    activityId,
    v.rubricVersion,
    v.model,
    v.promptVersion,
  ]);
  const thresholds = row!.thresholds ? thresholdsFrom(row!.thresholds) : DEFAULT_THRESHOLDS;
  const report = row!.report;
  const passes = report !== null && meetsThresholds(report, thresholds);
  const mode = row!.mode;
  const forced = mode?.mode === 'live' && mode.forced;
  const examples = Number(row!.examples);
  const live = examples === 0 || passes || forced;
  const figures = {
    report_id: report?.id ?? null,
    cohen_kappa: report?.cohen_kappa ?? null,
    false_pass_rate: report?.false_pass_rate ?? null,
    created_at: report?.created_at ?? null,
  };
  const calibration: Calibration =
    examples === 0
      ? { status: 'uncalibrated' }
      : passes
        ? { report_id: report!.id, cohen_kappa: report!.cohen_kappa, false_pass_rate: report!.false_pass_rate, created_at: report!.created_at }
        : { status: 'forced', ...figures, forced_at: mode?.changed_at ?? '', forced_by: mode?.changed_by ?? null, reason: mode?.reason ?? '' };
  return { examples, mode, thresholds, report, passes, live, calibration };
}

/** Numbers of a judge_settings row (numeric columns come back as text on PostgreSQL). */
function thresholdsFrom(row: Record<string, unknown>): Thresholds {
  return {
    min_kappa: Number(row.min_kappa),
    max_false_pass_rate: Number(row.max_false_pass_rate),
    require_adversarial_fail: Boolean(row.require_adversarial_fail),
  };
}

/** The thresholds of `tenantId` (defaults when it has no judge_settings row). */
export async function thresholdsOf(q: Queryable, tenantId: string): Promise<Thresholds> {
  const [row] = await q.query<Record<string, unknown>>(
    'select min_kappa, max_false_pass_rate, require_adversarial_fail from judge_settings where tenant_id = $1',
    [tenantId],
  );
  return row ? thresholdsFrom(row) : { ...DEFAULT_THRESHOLDS };
}

/**
 * Change some of `tenantId`'s thresholds (`svc judge thresholds set`); the others keep their value.
 * Returns the thresholds now. Values are checked by the caller (src/admin/ops/judge.ts) and by 0140's checks.
 */
export async function setThresholds(q: Queryable, tenantId: string, change: Partial<Thresholds>): Promise<Thresholds> {
  const next = { ...(await thresholdsOf(q, tenantId)), ...change };
  await q.query(
    `insert into judge_settings (tenant_id, min_kappa, max_false_pass_rate, require_adversarial_fail) values ($1, $2, $3, $4)
     on conflict (tenant_id) do update
       set min_kappa = excluded.min_kappa, max_false_pass_rate = excluded.max_false_pass_rate,
           require_adversarial_fail = excluded.require_adversarial_fail, updated_at = now()`,
    [tenantId, next.min_kappa, next.max_false_pass_rate, next.require_adversarial_fail],
  );
  return next;
}
