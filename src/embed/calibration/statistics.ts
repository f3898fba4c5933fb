/**
 * The figures of a calibration report, computed from the instructor's expected grades and the
 * judge's grades of the same examples. Pure functions: no database, no clock.
 *
 * Definitions (docs/judge.md "What each figure means"):
 * - An example's verdict with `repeats` > 1 is the majority of its runs' pass/fail; a tie is a
 *   fail. Its score is the mean of its runs' scores; a criterion is met when most runs met it
 *   (a tie: not met). A run that could not grade the example (`not_gradable`) counts as a fail
 *   without a score.
 * - Adversarial examples are expected fails in every figure (and also counted in `adversarial`).
 * - `accuracy` = examples whose verdict equals the expected one ÷ n.
 * - `cohen_kappa` (Cohen, J. (1960). "A coefficient of agreement for nominal scales",
 *   Educational and Psychological Measurement 20(1): 37–46): κ = (p_o − p_e) / (1 − p_e), with
 *   p_o the observed agreement and p_e the agreement expected by chance from each rater's
 *   marginal shares: p_e = Σ_k (rowₖ/n)(colₖ/n). When p_e = 1 — both raters put every example in
 *   the same single class (the other class is empty for both) — κ is 0/0, undefined by the
 *   formula. The convention used here: κ = 1 when observed agreement is perfect (p_o = 1, which
 *   p_e = 1 implies), else 0; the gate never rests on it alone, since such a table has no
 *   expected-fail example and so no `false_pass_rate` (gate.ts). n = 0 → null.
 * - `false_pass_rate` = expected-fail examples graded pass ÷ expected-fail examples;
 *   `false_fail_rate` = expected-pass examples graded fail ÷ expected-pass examples; null when the
 *   denominator is 0.
 * - `score_mae` = mean |score − expected score| over examples with an expected score and a score;
 *   `leniency` = mean score − mean expected score over the same examples (> 0: the judge is more
 *   generous than the instructor); both null when no example has both.
 * - `flip_rate` = share of examples whose runs did not all agree on pass/fail (0 with one run).
 * - `criteria`: per rubric criterion, over the examples whose expected grade names it:
 *   `agreement` (share where met equals the expected met) and `cohen_kappa` (as above); null when
 *   no example names it.
 * Figures are rounded to 4 decimals.
 */

/** One graded run of an example: a verdict (score 0–100, criteria met) or `not_gradable`. */
export type RunGrade = { passed: boolean; score: number; criteria: { id: string; met: boolean }[]; evidence: string } | { not_gradable: string };

/** An example as the statistics need it: what the instructor expects, and each run's grade. */
export interface GradedExample {
  id: string;
  adversarial: boolean;
  expected: { passed: boolean; score?: number | null; criteria?: { id: string; met: boolean }[] };
  runs: RunGrade[];
}

/** An example's verdict over its runs (majority, a tie fails). */
export interface ExampleVerdict {
  passed: boolean;
  /** Mean of the runs' scores, 0–100; null when no run had a score. */
  score: number | null;
  criteria: Map<string, boolean>;
  /** The runs did not all agree on pass/fail. */
  flipped: boolean;
  /** The evidence of the first run that agrees with the verdict (or why it could not be graded). */
  evidence: string;
}

export interface CriterionFigures {
  id: string;
  agreement: number | null;
  cohen_kappa: number | null;
}

export interface Figures {
  n: number;
  accuracy: number | null;
  cohen_kappa: number | null;
  false_pass_rate: number | null;
  false_fail_rate: number | null;
  score_mae: number | null;
  leniency: number | null;
  flip_rate: number | null;
  criteria: CriterionFigures[];
  adversarial: { n: number; passed: number };
  confusion: Confusion;
  disagreements: {
    example_id: string;
    expected: { passed: boolean; score: number | null };
    got: { passed: boolean; score: number | null };
    evidence: string;
  }[];
}

/**
 * A 2×2 confusion table of (expected, got): `tp` expected pass graded pass, `fn` expected pass
 * graded fail, `fp` expected fail graded pass, `tn` expected fail graded fail.
 */
export interface Confusion {
  tp: number;
  fn: number;
  fp: number;
  tn: number;
}

const round = (x: number | null) => (x === null ? null : Math.round(x * 10_000) / 10_000);
const ratio = (num: number, den: number) => (den === 0 ? null : num / den);
const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : null);

/** Cohen's kappa of a 2×2 table (definition and the p_e = 1 convention in the header); null when empty. */
export function cohenKappa(t: Confusion): number | null {
  const n = t.tp + t.fn + t.fp + t.tn;
  if (n === 0) return null;
  const po = (t.tp + t.tn) / n;
  const pe = ((t.tp + t.fn) * (t.tp + t.fp) + (t.fp + t.tn) * (t.fn + t.tn)) / (n * n);
  if (pe === 1) return po === 1 ? 1 : 0;
  return (po - pe) / (1 - pe);
}

/** The confusion table of pairs (expected, got). */
export function confusionOf(pairs: [expected: boolean, got: boolean][]): Confusion {
  const t: Confusion = { tp: 0, fn: 0, fp: 0, tn: 0 };
  for (const [e, g] of pairs) {
    if (e && g) t.tp++;
    else if (e) t.fn++;
    else if (g) t.fp++;
    else t.tn++;
  }
  return t;
}

/** An example's verdict over its runs (header: majority, a tie fails; mean score). */
export function exampleVerdict(runs: RunGrade[]): ExampleVerdict {
  const passes = runs.filter((r) => 'passed' in r && r.passed).length;
  const passed = passes * 2 > runs.length;
  const scores = runs.flatMap((r) => ('score' in r ? [r.score] : []));
  const met = new Map<string, number>();
  for (const r of runs) if ('criteria' in r) for (const c of r.criteria) met.set(c.id, (met.get(c.id) ?? 0) + (c.met ? 1 : 0));
  const criteria = new Map([...met].map(([id, k]) => [id, k * 2 > runs.length] as const));
  const agreeing = runs.find((r) => ('passed' in r ? r.passed === passed : !passed)) ?? runs[0];
  const evidence = !agreeing ? '' : 'evidence' in agreeing ? agreeing.evidence : `not gradable: ${agreeing.not_gradable}`;
  return { passed, score: mean(scores), criteria, flipped: passes > 0 && passes < runs.length, evidence };
}

/** Every figure of a report for `examples` (definitions in the header). `criterionIds`: the rubric's, in order. */
export function calibrationFigures(examples: GradedExample[], criterionIds: string[]): Figures {
  const graded = examples.map((e) => ({ e, expectedPass: e.expected.passed && !e.adversarial, v: exampleVerdict(e.runs) }));
  const n = graded.length;
  const confusion = confusionOf(graded.map((g) => [g.expectedPass, g.v.passed]));
  const scored = graded.filter((g) => typeof g.e.expected.score === 'number' && g.v.score !== null);
  const criteria = criterionIds.map((id): CriterionFigures => {
    const pairs = graded.flatMap((g): [boolean, boolean][] => {
      const expected = g.e.expected.criteria?.find((c) => c.id === id);
      return expected ? [[expected.met, g.v.criteria.get(id) ?? false]] : [];
    });
    const t = confusionOf(pairs);
    return { id, agreement: round(ratio(t.tp + t.tn, pairs.length)), cohen_kappa: round(cohenKappa(t)) };
  });
  const adversarial = graded.filter((g) => g.e.adversarial);
  const meanScore = mean(scored.map((g) => g.v.score!));
  const meanExpected = mean(scored.map((g) => g.e.expected.score!));
  return {
    n,
    accuracy: round(ratio(confusion.tp + confusion.tn, n)),
    cohen_kappa: round(cohenKappa(confusion)),
    false_pass_rate: round(ratio(confusion.fp, confusion.fp + confusion.tn)),
    false_fail_rate: round(ratio(confusion.fn, confusion.tp + confusion.fn)),
    score_mae: round(mean(scored.map((g) => Math.abs(g.v.score! - g.e.expected.score!)))),
    leniency: meanScore === null || meanExpected === null ? null : round(meanScore - meanExpected),
    flip_rate: round(ratio(graded.filter((g) => g.v.flipped).length, n)),
    criteria,
    adversarial: { n: adversarial.length, passed: adversarial.filter((g) => g.v.passed).length },
    confusion,
    disagreements: graded
      .filter((g) => g.v.passed !== g.expectedPass)
      .map((g) => ({
        example_id: g.e.id,
        expected: { passed: g.expectedPass, score: g.e.expected.score ?? null },
        got: { passed: g.v.passed, score: round(g.v.score) },
        evidence: g.v.evidence,
      })),
  };
}
