/**
 * Reading the model's answer (model.ts's header, "Output" and "Score"): match it to the rubric's
 * criteria, clamp scores to 0–100, cut feedback and evidence, and compute the weighted score.
 */
import { z } from 'zod';
import { GraderError } from './failures.ts';
import type { Criterion, CriterionVerdict } from './types.ts';

const MAX_FEEDBACK = 4_000;
const MAX_EVIDENCE = 1_000;

const modelAnswer = z.object({
  criteria: z.array(z.object({ id: z.string(), met: z.boolean(), score: z.number().finite(), evidence: z.string() })),
  feedback: z.string(),
  // Optional when reading, so that a model that drops them still grades.
  injection_suspected: z.boolean().optional(),
  injection_evidence: z.string().optional(),
});

/** Weighted mean of criterion scores (0–100), 2 decimals; equal weights when all weights are 0. */
export function overallScore(verdicts: { weight: number; score: number }[]): number {
  const total = verdicts.reduce((s, v) => s + v.weight, 0);
  const mean =
    total > 0 ? verdicts.reduce((s, v) => s + v.weight * v.score, 0) / total : verdicts.reduce((s, v) => s + v.score, 0) / Math.max(verdicts.length, 1);
  return Math.round(Math.min(100, Math.max(0, mean)) * 100) / 100;
}

/** Match the model's answer to the criteria; throws `GraderError('invalid_output')`. */
export function readAnswer(
  content: string,
  criteria: Criterion[],
): { verdicts: CriterionVerdict[]; feedback: string; injection: { suspected: boolean; evidence: string } } {
  let parsed: z.infer<typeof modelAnswer>;
  try {
    parsed = modelAnswer.parse(JSON.parse(content));
  } catch {
    throw new GraderError('invalid_output', 'the model answer is not the requested JSON');
  }
  const verdicts = criteria.map((c) => {
    const a = parsed.criteria.find((x) => x.id === c.id);
    if (!a) throw new GraderError('invalid_output', `the model answer misses criterion ${c.id}`);
    return {
      ...c,
      met: a.met,
      score: Math.min(100, Math.max(0, Math.round(a.score * 100) / 100)),
      evidence: a.evidence.slice(0, MAX_EVIDENCE),
    };
  });
  return {
    verdicts,
    feedback: parsed.feedback.slice(0, MAX_FEEDBACK),
    injection: { suspected: parsed.injection_suspected === true, evidence: (parsed.injection_evidence ?? '').slice(0, MAX_EVIDENCE) },
  };
}
