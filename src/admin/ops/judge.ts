/**
 * `svc review …`, `svc judge thresholds|consistency …` and `svc verdict show`: the judge's review
 * queue (src/embed/grading/review.ts), the calibration gate's thresholds (issue #21,
 * src/embed/calibration/gate.ts), borderline consistency (src/embed/grading/consistency.ts) and a
 * verdict with the model calls behind it. Registered in ../ops.ts.
 */
import { z } from 'zod';
import type { Queryable } from '../../db/index.ts';
import {
  CONSISTENCY_DEFAULT_REPEATS,
  CONSISTENCY_MARGIN_MAX,
  type ConsistencySettings,
  callsOf,
  consistencyOf,
  decide,
  listReviews,
  requestBody,
  setConsistency,
  setThresholds,
  thresholdsOf,
} from '../../embed/index.ts';
import { AdminError, slug, tenantId } from './shared.ts';

/** `--margin`: points either side of the pass mark, 0–100 (a number, or its decimal text from the CLI). */
const marginMessage = `a number of points from 0 to ${CONSISTENCY_MARGIN_MAX}`;
const consistencyMargin = z
  .union([z.number(), z.string().regex(/^\s*\d+(\.\d+)?\s*$/, marginMessage)], { error: marginMessage })
  .transform(Number)
  .pipe(z.number().min(0, marginMessage).max(CONSISTENCY_MARGIN_MAX, marginMessage));
/** `--repeats`: runs in all for a borderline verdict, 2 or 3. */
const consistencyRepeats = z
  .union([z.literal(2), z.literal(3), z.literal('2'), z.literal('3')], { error: '2 or 3 (runs in all, the first included)' })
  .transform(Number);

/** The answer of `svc judge consistency …`: the setting, and whether it is on. */
const consistencyJson = (tenant: string, s: ConsistencySettings) => ({ tenant, enabled: s.margin !== null, margin: s.margin, repeats: s.repeats });

export const judgeOps = {
  'review.list': {
    args: z.object({ tenant: slug }),
    // The open reviews of the queue (appeals and injection holds), oldest first; `submitted_at` kept for older scripts.
    run: async (q: Queryable, a: { tenant: string }) =>
      (await listReviews(q, { tenantId: await tenantId(q, a.tenant), status: 'open' })).map((r) => ({ ...r, submitted_at: r.created_at })),
  },
  'review.approve': {
    args: z.object({ result_id: z.uuid('a result id is a uuid') }),
    run: (q: Queryable, a: { result_id: string }) => review(q, a.result_id, 'approve'),
  },
  'review.reject': {
    args: z.object({ result_id: z.uuid('a result id is a uuid') }),
    run: (q: Queryable, a: { result_id: string }) => review(q, a.result_id, 'reject'),
  },
  // svc judge thresholds set|show: the calibration gate's thresholds of a tenant (issue #21, src/embed/calibration/gate.ts).
  'judge.thresholds.show': {
    args: z.object({ tenant: slug }),
    run: async (q: Queryable, a: { tenant: string }) => ({ tenant: a.tenant, ...(await thresholdsOf(q, await tenantId(q, a.tenant))) }),
  },
  'judge.thresholds.set': {
    args: z
      .object({
        tenant: slug,
        min_kappa: z.coerce.number().min(-1, '--min-kappa is between -1 and 1').max(1, '--min-kappa is between -1 and 1').optional(),
        max_false_pass_rate: z.coerce.number().min(0, '--max-false-pass-rate is between 0 and 1').max(1, '--max-false-pass-rate is between 0 and 1').optional(),
        require_adversarial_fail: z.boolean().optional(),
      })
      .refine(
        (a) => a.min_kappa !== undefined || a.max_false_pass_rate !== undefined || a.require_adversarial_fail !== undefined,
        'give at least one of --min-kappa, --max-false-pass-rate, --adversarial-must-fail',
      ),
    run: async (q: Queryable, a: { tenant: string; min_kappa?: number; max_false_pass_rate?: number; require_adversarial_fail?: boolean }) => {
      const { tenant, ...change } = a;
      const defined = Object.fromEntries(Object.entries(change).filter(([, v]) => v !== undefined));
      return { tenant, ...(await setThresholds(q, await tenantId(q, tenant), defined)) };
    },
  },
  // svc judge consistency set|off|show: borderline consistency (src/embed/grading/consistency.ts).
  'judge.consistency.set': {
    args: z.object({ tenant: slug, margin: consistencyMargin, repeats: consistencyRepeats.optional() }),
    run: async (q: Queryable, a: { tenant: string; margin: number; repeats?: number }) =>
      consistencyJson(a.tenant, await setConsistency(q, await tenantId(q, a.tenant), { margin: a.margin, repeats: a.repeats ?? CONSISTENCY_DEFAULT_REPEATS })),
  },
  'judge.consistency.off': {
    args: z.object({ tenant: slug }),
    run: async (q: Queryable, a: { tenant: string }) => {
      const id = await tenantId(q, a.tenant);
      return consistencyJson(a.tenant, await setConsistency(q, id, { ...(await consistencyOf(q, id)), margin: null }));
    },
  },
  'judge.consistency.show': {
    args: z.object({ tenant: slug }),
    run: async (q: Queryable, a: { tenant: string }) => consistencyJson(a.tenant, await consistencyOf(q, await tenantId(q, a.tenant))),
  },
  'verdict.show': {
    args: z.object({ artifact_id: z.uuid('an artifact id is a uuid'), with_request: z.boolean().optional() }),
    run: async (q: Queryable, a: { artifact_id: string; with_request?: boolean }) => {
      const [artifact] = await q.query<{ tenant_id: string; verification: Record<string, unknown> | null }>(
        'select tenant_id, verification from artifacts where id = $1',
        [a.artifact_id],
      );
      if (!artifact) throw new AdminError('not_found', `no artifact ${a.artifact_id}`);
      const calls = await callsOf(q, artifact.tenant_id, a.artifact_id);
      const requests: Record<string, unknown> = {};
      if (a.with_request) {
        for (const sha of new Set(calls.map((c) => c.request_sha256).filter((x): x is string => Boolean(x)))) {
          requests[sha] = JSON.parse((await requestBody(q, artifact.tenant_id, sha))!);
        }
      }
      return { artifact_id: a.artifact_id, verification: artifact.verification, calls, ...(a.with_request && { requests }) };
    },
  },
} as const;

/** Approve or reject the held submissions of a result (src/embed/grading/review.ts). */
async function review(q: Queryable, resultId: string, decision: 'approve' | 'reject') {
  const [result] = await q.query<{ tenant_id: string }>('select tenant_id from activity_results where id = $1', [resultId]);
  const done = result && (await decide(q, result.tenant_id, resultId, decision, new Date()));
  if (!done) throw new AdminError('not_found', `result ${resultId} has no submission awaiting review`);
  return { result_id: resultId, decision, ...done };
}
