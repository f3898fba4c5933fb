/**
 * Borderline consistency (issue #21, opt-in per tenant): a verdict whose score lies within
 * `margin` points of the activity's pass mark is graded again, and the majority of pass/fail
 * over the runs decides. Language-model judges flip borderline items between identical runs, even
 * at temperature 0 (FIELD-NOTES "Judge calibration"); a majority of independent runs makes the
 * gate steadier exactly where one run is least trustworthy, at the cost of at most
 * `repeats − 1` extra calls for borderline work only.
 *
 * Settings (`judge_settings`, migration 0140; `svc judge consistency set|off|show`):
 * `consistency_margin` 0–100 points, null = off (the default: no row, or a null margin);
 * `consistency_repeats` 2 or 3 runs in all, default 3.
 *
 * Rule (`settleBorderline`, one call site in grade-job.ts, right after the first verdict):
 * 1. Borderline when |score − pass_threshold| ≤ margin (scores 0–100; both ends included). Only
 *    the first run's score decides whether the work is borderline; otherwise one call, as without
 *    the setting.
 * 2. Grade again with the same prepared request (same prompt, model, rubric, artifact), each run
 *    with the job's bounded attempts, each call reserved in the ledger and counted in the tenant's
 *    budget exactly like the first (ledger.ts; `usage` counts them), until a majority is certain
 *    (⌊repeats/2⌋ + 1 runs agree) or `repeats` runs are made. With 3: two agreeing runs stop at
 *    two calls; pass-fail-pass passes, fail-pass-fail fails. With 2: a disagreement is a tie, and
 *    a tie fails (as calibration's majority does: issue #21 "a tie is a fail") — the learner can
 *    submit again; a pass needs both runs.
 * 3. The recorded verdict is the first run that agrees with the majority (its criteria, feedback,
 *    score, `call_id`), with `consistency = {margin, repeats, runs: [{passed, score, call_id}],
 *    agreed}` (`agreed`: every run gave the same pass/fail). A possible prompt injection flagged
 *    on any run is kept on the recorded verdict (signals of every run), so a pass is held for
 *    review as today.
 * 4. A run that ends without a verdict ends the grading as such a run does today: the tenant's
 *    budget spent between runs → the submission waits, `pending` / `budget_exhausted`, and its
 *    next run (numbered after this one, which made calls) grades afresh — a majority is never
 *    decided on fewer runs than it needs (none can be certain at that point, and deciding on the
 *    runs made would turn a tie into a fail the learner did not earn); the model down → it waits
 *    and runs again; the artifact's failures (malformed output, refusals) → `not_gradable`. The
 *    calls already made stay in the ledger and in `usage`.
 *
 * Cost: a borderline submission costs 2 calls (runs agree) or 3 (they disagree, repeats 3)
 * instead of 1; work outside the margin costs 1.
 */
import type { Queryable } from '../../db/index.ts';
import type { Attempts } from './grade-job.ts';
import type { InjectionFlag } from './injection/index.ts';

/** Bounds of the settings (the table's check constraints say the same, migration 0140). */
export const CONSISTENCY_MARGIN_MAX = 100;
export const CONSISTENCY_REPEATS = [2, 3] as const;
export const CONSISTENCY_DEFAULT_REPEATS = 3;

/** A tenant's borderline-consistency setting; `margin` null = off. */
export interface ConsistencySettings {
  /** Points (0–100) either side of the pass mark within which a verdict is graded again; null = off. */
  margin: number | null;
  /** Runs in all for a borderline verdict: 2 or 3. */
  repeats: number;
}

/** One run of a borderline grading, as the verdict records it. */
export interface ConsistencyRun {
  passed: boolean;
  /** 0–100. */
  score: number;
  /** The ledger row (`model_calls.id`) of the call that gave it. */
  call_id: string;
}

/** `verification.consistency` of a verdict graded more than once. */
export interface ConsistencyRecord {
  margin: number;
  repeats: number;
  runs: ConsistencyRun[];
  /** Every run gave the same pass/fail. */
  agreed: boolean;
}

/** The setting of `tenantId` (the defaults — off, 3 — when it has no row). */
export async function consistencyOf(q: Queryable, tenantId: string): Promise<ConsistencySettings> {
  const [row] = await q.query<{ margin: string | number | null; repeats: number }>(
    'select consistency_margin as margin, consistency_repeats as repeats from judge_settings where tenant_id = $1',
    [tenantId],
  );
  return { margin: row?.margin == null ? null : Number(row.margin), repeats: row?.repeats ?? CONSISTENCY_DEFAULT_REPEATS };
}

/**
 * Set `tenantId`'s consistency (margin null = off), keeping its other judge settings (the
 * calibration gate's thresholds) as they are. Values are the caller's to validate (the bounds
 * above; the table's checks refuse anything else).
 */
export async function setConsistency(q: Queryable, tenantId: string, s: ConsistencySettings): Promise<ConsistencySettings> {
  await q.query(
    `insert into judge_settings (tenant_id, consistency_margin, consistency_repeats) values ($1, $2, $3)
     on conflict (tenant_id) do update
       set consistency_margin = excluded.consistency_margin, consistency_repeats = excluded.consistency_repeats, updated_at = now()`,
    [tenantId, s.margin, s.repeats],
  );
  return consistencyOf(q, tenantId);
}

/** Whether `score` lies within `margin` points of `passThreshold` (both ends included; all 0–100). */
const isBorderline = (score: number, passThreshold: number, margin: number): boolean => Math.abs(score - passThreshold) <= margin;

/**
 * The majority of `runs` out of `repeats`: `decided` once ⌊repeats/2⌋ + 1 runs agree or every
 * run is made; `passed` only when the passes reach that majority (a tie fails).
 */
export function majority(runs: readonly { passed: boolean }[], repeats: number): { decided: boolean; passed: boolean } {
  const need = Math.floor(repeats / 2) + 1;
  const passes = runs.filter((r) => r.passed).length;
  const fails = runs.length - passes;
  return { decided: passes >= need || fails >= need || runs.length >= repeats, passed: passes >= need };
}

/** What the hook needs of its run: the tenant's settings, the pass mark, and how to grade again and settle a ledger row. */
export interface BorderlineRun {
  /** The tenant's setting (consistencyOf), read only when there is a verdict. */
  settings: () => Promise<ConsistencySettings>;
  /** The activity's pass mark, 0–100. */
  passThreshold: number;
  /** One more grading with the same request (the job's bounded attempts, each reserved in the ledger). */
  again: () => Promise<Attempts>;
  /** Complete the ledger row of a call that gave a verdict which is not the recorded one. */
  complete: (call: Extract<Attempts, { kind: 'verdict' }>['call']) => Promise<void>;
}

/**
 * Steps 1–4 of the header for the first outcome `first` of a grading: `first` itself when it
 * is not a verdict, consistency is off or the score is not borderline; otherwise the majority's
 * verdict with `consistency` recorded, or the outcome of a run that gave no verdict. The ledger
 * rows of every verdict not returned are completed here (the returned one is completed in the
 * verdict's transaction, as today). Throws what `again` throws (an aborted run), after
 * completing the rows of the verdicts it holds.
 */
export async function settleBorderline(first: Attempts, run: BorderlineRun): Promise<Attempts> {
  if (first.kind !== 'verdict') return first;
  const { margin, repeats } = await run.settings();
  if (margin === null || !isBorderline(first.verdict.score, run.passThreshold, margin)) return first;

  const graded: Extract<Attempts, { kind: 'verdict' }>[] = [first];
  const settleAll = (keep?: (typeof graded)[number]) => Promise.all(graded.filter((g) => g !== keep).map((g) => run.complete(g.call)));
  while (
    !majority(
      graded.map((g) => g.verdict),
      repeats,
    ).decided
  ) {
    let next: Attempts;
    try {
      next = await run.again();
    } catch (err) {
      await settleAll();
      throw err;
    }
    if (next.kind !== 'verdict') {
      await settleAll();
      // A budget spent between runs: this run made calls, so it counts (the next run's ledger rows carry the next number).
      return next.kind === 'budget_exhausted' ? { ...next, note: { ...next.note, runs: next.note.runs + 1 } } : next;
    }
    graded.push(next);
  }

  const passed = majority(
    graded.map((g) => g.verdict),
    repeats,
  ).passed;
  const chosen = graded.find((g) => g.verdict.passed === passed)!;
  await settleAll(chosen);
  const consistency: ConsistencyRecord = {
    margin,
    repeats,
    runs: graded.map((g) => ({ passed: g.verdict.passed, score: g.verdict.score, call_id: g.verdict.call_id })),
    agreed: graded.every((g) => g.verdict.passed === graded[0]!.verdict.passed),
  };
  return { ...chosen, verdict: { ...chosen.verdict, injection: anyInjection(graded.map((g) => g.verdict.injection)), consistency } };
}

/** The injection flags of every run in one: suspected when any run suspected, with all their signals. */
function anyInjection(flags: InjectionFlag[]): InjectionFlag {
  return { suspected: flags.some((f) => f.suspected), signals: [...new Set(flags.flatMap((f) => f.signals))] };
}
