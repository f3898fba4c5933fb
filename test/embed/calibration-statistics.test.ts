/**
 * The calibration figures (src/embed/calibration/statistics.ts) against a textbook example of
 * Cohen's kappa, a confusion table computed by hand, the conventions of the degenerate cases, and
 * properties checked on seeded random inputs (a small xorshift generator: the same cases every run).
 */
import { describe, expect, it } from 'vitest';
import { calibrationFigures, cohenKappa, confusionOf, exampleVerdict, type GradedExample, type RunGrade } from '../../src/embed/calibration/statistics.ts';

const pass = (score = 90, criteria: { id: string; met: boolean }[] = []): RunGrade => ({ passed: true, score, criteria, evidence: 'ok' });
const fail = (score = 10, criteria: { id: string; met: boolean }[] = []): RunGrade => ({ passed: false, score, criteria, evidence: 'missing' });

describe("Cohen's kappa", () => {
  it('the textbook example: 50 items, 20 yes/yes, 5 yes/no, 10 no/yes, 15 no/no → p_o 0.7, p_e 0.5, κ 0.4', () => {
    // Wikipedia "Cohen's kappa", worked example (from Cohen's definition, 1960)
    expect(cohenKappa({ tp: 20, fn: 5, fp: 10, tn: 15 })).toBeCloseTo(0.4, 12);
  });

  it('a hand-computed table: tp 45, fn 15, fp 25, tn 15 → p_o 0.6, p_e 0.54, κ 0.1304', () => {
    // p_e = (60·70 + 40·30) / 100² = 0.54; κ = 0.06 / 0.46
    expect(cohenKappa({ tp: 45, fn: 15, fp: 25, tn: 15 })).toBeCloseTo(0.06 / 0.46, 12);
  });

  it('degenerate tables: both raters in one class → 1; opposite single classes → 0; empty → null', () => {
    expect(cohenKappa({ tp: 7, fn: 0, fp: 0, tn: 0 })).toBe(1);
    expect(cohenKappa({ tp: 0, fn: 0, fp: 0, tn: 4 })).toBe(1);
    expect(cohenKappa({ tp: 0, fn: 3, fp: 0, tn: 0 })).toBe(0);
    expect(cohenKappa({ tp: 0, fn: 0, fp: 0, tn: 0 })).toBeNull();
  });
});

describe('report figures', () => {
  it('a hand-computed report: rates, score error, leniency, adversarial, disagreements', () => {
    const examples: GradedExample[] = [
      { id: 'p1', adversarial: false, expected: { passed: true, score: 80 }, runs: [pass(90)] },
      { id: 'p2', adversarial: false, expected: { passed: true, score: 70 }, runs: [fail(40)] },
      { id: 'f1', adversarial: false, expected: { passed: false, score: 30 }, runs: [pass(75)] },
      { id: 'f2', adversarial: false, expected: { passed: false }, runs: [fail(20)] },
      { id: 'adv', adversarial: true, expected: { passed: false }, runs: [pass(100)] },
    ];
    const f = calibrationFigures(examples, []);
    // tp 1 (p1), fn 1 (p2), fp 2 (f1, adv), tn 1 (f2): p_o = 0.4, p_e = (2·3 + 3·2)/25 = 0.48, κ = −0.08/0.52
    expect(f.confusion).toEqual({ tp: 1, fn: 1, fp: 2, tn: 1 });
    expect(f.accuracy).toBe(0.4);
    expect(f.cohen_kappa).toBe(-0.1538);
    expect(f.false_pass_rate).toBe(0.6667);
    expect(f.false_fail_rate).toBe(0.5);
    // |90−80|, |40−70|, |75−30| → 85/3; leniency (90+40+75)/3 − (80+70+30)/3 = 25/3
    expect(f.score_mae).toBe(28.3333);
    expect(f.leniency).toBe(8.3333);
    expect(f.adversarial).toEqual({ n: 1, passed: 1 });
    expect(f.disagreements.map((d) => d.example_id)).toEqual(['p2', 'f1', 'adv']);
    expect(f.flip_rate).toBe(0);
  });

  it('null rates when a class is missing; not_gradable is a fail without a score', () => {
    const f = calibrationFigures([{ id: 'x', adversarial: false, expected: { passed: true, score: 50 }, runs: [{ not_gradable: 'unreadable' }] }], []);
    expect(f).toMatchObject({ n: 1, accuracy: 0, false_pass_rate: null, false_fail_rate: 1, score_mae: null, leniency: null });
    expect(f.disagreements[0]!.evidence).toBe('not gradable: unreadable');
  });

  it('repeats: the majority decides, a tie fails, flips are counted; criteria by majority', () => {
    expect(exampleVerdict([pass(), fail(), pass()])).toMatchObject({ passed: true, flipped: true });
    expect(exampleVerdict([pass(), fail()])).toMatchObject({ passed: false, flipped: true, score: 50 });
    expect(exampleVerdict([fail(), fail(), fail()])).toMatchObject({ passed: false, flipped: false });
    const c = (met: boolean) => [{ id: 'c1', met }];
    const f = calibrationFigures(
      [
        { id: 'a', adversarial: false, expected: { passed: true, criteria: c(true) }, runs: [pass(90, c(true)), pass(90, c(false)), pass(90, c(true))] },
        { id: 'b', adversarial: false, expected: { passed: false, criteria: c(false) }, runs: [fail(10, c(false)), pass(90, c(true)), fail(10, c(true))] },
      ],
      ['c1', 'c2'],
    );
    expect(f.flip_rate).toBe(0.5);
    // a: met (2 of 3) as expected; b: met (2 of 3), expected unmet → agreement 0.5, κ 0 (p_o 0.5, p_e 0.5)
    expect(f.criteria).toEqual([
      { id: 'c1', agreement: 0.5, cohen_kappa: 0 },
      { id: 'c2', agreement: null, cohen_kappa: null },
    ]);
  });
});

/** xorshift32: a seeded generator in [0, 1). */
function random(seed: number) {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}

describe('properties (500 seeded random cases)', () => {
  it('κ ≤ 1 and ≥ −1; κ = 1 iff every item agrees (n > 0); symmetric in the raters; rates in [0, 1]', () => {
    const r = random(21);
    for (let i = 0; i < 500; i++) {
      const n = 1 + Math.floor(r() * 40);
      const pairs: [boolean, boolean][] = Array.from({ length: n }, () => [r() < 0.5, r() < (i % 3 === 0 ? 0.9 : 0.5)]);
      const t = confusionOf(pairs);
      const k = cohenKappa(t)!;
      expect(k).toBeLessThanOrEqual(1 + 1e-12);
      expect(k).toBeGreaterThanOrEqual(-1 - 1e-12);
      expect(k === 1).toBe(t.fn + t.fp === 0);
      // swapping the raters swaps fn and fp: κ is unchanged
      expect(cohenKappa({ tp: t.tp, fn: t.fp, fp: t.fn, tn: t.tn })).toBeCloseTo(k, 12);
      const examples: GradedExample[] = pairs.map(([e, g], j) => ({
        id: String(j),
        adversarial: !e && r() < 0.2,
        expected: { passed: e, score: Math.round(r() * 100) },
        runs: [g ? pass(Math.round(r() * 100)) : fail(Math.round(r() * 100))],
      }));
      const f = calibrationFigures(examples, []);
      for (const v of [f.accuracy, f.false_pass_rate, f.false_fail_rate, f.flip_rate]) if (v !== null) expect(v >= 0 && v <= 1).toBe(true);
      expect(f.accuracy).toBeCloseTo((t.tp + t.tn) / n, 4);
      expect(f.disagreements.length).toBe(t.fn + t.fp);
      expect(Math.abs(f.leniency!)).toBeLessThanOrEqual(f.score_mae! + 1e-4);
    }
  });

  it('a model that agrees with every expected grade: accuracy 1, κ 1, both rates 0 (or null)', () => {
    const r = random(7);
    for (let i = 0; i < 200; i++) {
      const n = 1 + Math.floor(r() * 20);
      const examples: GradedExample[] = Array.from({ length: n }, (_, j) => {
        const e = r() < 0.5;
        return { id: String(j), adversarial: false, expected: { passed: e }, runs: [e ? pass() : fail()] };
      });
      const f = calibrationFigures(examples, []);
      expect(f.accuracy).toBe(1);
      expect(f.cohen_kappa).toBe(1);
      expect([0, null]).toContain(f.false_pass_rate);
      expect([0, null]).toContain(f.false_fail_rate);
    }
  });
});
