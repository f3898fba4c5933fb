/**
 * Overrides and the review queue (issue #21): `override_verdict`, `list_reviews`, `resolve_review`.
 *
 * Authors of the result's tenant only, as the caller under RLS like every tool here (tool.ts):
 * migration 0142 lets an author read and change their tenants' learners' results, artifacts,
 * progress and reviews — and no one else — so another tenant's result or review, or a learner's own
 * result, is simply not found. The logic is the embed surface's (src/embed/grading/override.ts,
 * review.ts), reached through its front door.
 */
import { z } from 'zod';
import type { Queryable } from '../db/index.ts';
import { applyOverride, listReviews, MAX_REASON_CHARS, resolveReview, ReviewError } from '../embed/index.ts';
import { NotFound, ToolFailure } from './errors.ts';
import { decodeCursor, DEFAULT_LIMIT, NEXT_CURSOR, page, pageInput } from './cursor.ts';
import { PG_TIMESTAMP_RE, UUID_RE } from '../lib/ids.ts';
import { tenantSlug, uuid } from './records.ts';
import type { ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import { defineTool, READ, type AnyTool } from './tool.ts';

/** A decision on a learner's verdict: it overwrites the verdict (destructive) and is audited each time (not idempotent). */
const DECIDE: ToolAnnotations = { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false };

const reason = (what: string) => z.string().trim().min(1).max(MAX_REASON_CHARS).describe(`${what} (1–${MAX_REASON_CHARS} characters)`);
const score = z.number().min(0).max(100).describe("Score 0–100; default: keep the model's score");

const verdictLine = z.object({ status: z.string(), passed: z.boolean().nullable(), score: z.number().nullable() });

const overrideOutput = z.object({
  result_id: z.uuid(),
  artifact_id: z.uuid().describe('The artifact whose verdict was overridden.'),
  result: z.object({
    status: z.enum(['completed', 'failed']),
    score: z.number().nullable().describe("The result's score after, 0–100."),
    completed_at: z.string().nullable().describe('RFC 3339; null once a pass is undone.'),
  }),
  verdict: z.object({ status: z.enum(['passed', 'failed']), passed: z.boolean(), score: z.number() }).describe("The artifact's verdict after."),
  override: z
    .object({ by: z.string().nullable(), at: z.string(), reason: z.string(), previous: verdictLine.describe("The model's verdict.") })
    .describe('What verification.override now holds.'),
  audit_id: z.uuid().describe('The audit row of this override.'),
  resolved_reviews: z.array(z.uuid()).describe('Open reviews of the result this override resolved.'),
});

const reviewOutput = z.object({
  id: z.uuid(),
  kind: z.enum(['appeal', 'injection']).describe('appeal: a learner asked for a review; injection: a pass held as a possible prompt injection.'),
  status: z.enum(['open', 'upheld', 'overridden']),
  result_id: z.uuid(),
  artifact_id: z.uuid(),
  activity_id: z.uuid(),
  activity_title: z.string(),
  svc_user_id: z.uuid().describe('The learner.'),
  message: z.string().optional().describe("The learner's message (appeals)."),
  signals: z.array(z.string()).optional().describe('What flagged the submission (injection holds).'),
  score: z.number().optional().describe("The model's score, 0–100."),
  created_at: z.string(),
  resolved_at: z.string().optional(),
  resolved_by: z.uuid().optional().describe('svc_user_id of the author who resolved it (absent for an admin).'),
  reason: z.string().optional(),
});

/** The caller's svc_user_id. */
async function me(tx: Queryable): Promise<string | null> {
  const [row] = await tx.query<{ id: string | null }>('select public.current_itera_user_id() as id');
  return row?.id ?? null;
}

/** A `ReviewError` of the embed surface as this surface's failure. */
function failure(err: unknown): unknown {
  if (!(err instanceof ReviewError)) return err;
  if (err.code === 'not_found') return new NotFound(`${err.message} (or not in a tenant you are an author of)`);
  return new ToolFailure(err.message);
}

const overrideVerdict = defineTool({
  name: 'override_verdict',
  title: 'Override a verdict',
  description:
    "Replace the judge's verdict on a learner's result with yours, at once: the result becomes completed (passed) or failed, " +
    'progress counts the activity once (and no longer, when a pass is overridden to a fail — the one way a pass can be undone), ' +
    "and the Results API feed shows the change. The model's verdict is kept (verification.override.previous), the override is audited, " +
    'and open reviews of the result are resolved. The learner sees "Reviewed by your instructor" with your reason. ' +
    "Needs the author role in the result's tenant.",
  input: z.strictObject({
    result_id: uuid('Id of the ActivityResult'),
    passed: z.boolean().describe('Your verdict: true = pass'),
    score: score.optional(),
    reason: reason('Why; the learner sees it'),
  }),
  output: overrideOutput,
  annotations: DECIDE,
  run: async ({ result_id, passed, score: given, reason: why }, tx) => {
    const applied = await applyOverride(tx, { resultId: result_id, passed, score: given, reason: why, by: await me(tx), now: new Date() }).catch((err) => {
      throw failure(err);
    });
    return { structured: { ...applied }, summary: `overrode result ${result_id}: ${applied.verdict.status}, the result is ${applied.result.status}` };
  },
});

const listReviewsTool = defineTool({
  name: 'list_reviews',
  title: 'List the review queue',
  description:
    "The review queue of the tenants you author, oldest first: learners' appeals of verdicts and passes held as possible prompt injections. " +
    'Filter by tenant (slug) and status (default: all). Resolve one with resolve_review. ' +
    'Pages: pass `next_cursor` back as `cursor`; it is null on the last page.',
  input: z.strictObject({
    tenant: tenantSlug('Only this tenant (slug)').optional(),
    status: z.enum(['open', 'upheld', 'overridden']).optional().describe('Only reviews in this status'),
    ...pageInput(),
  }),
  output: z.object({ reviews: z.array(reviewOutput).describe('This page of reviews'), ...NEXT_CURSOR }),
  annotations: READ,
  run: async ({ tenant, status, cursor, limit = DEFAULT_LIMIT }, tx) => {
    const after = cursor === undefined ? undefined : decodeCursor('list_reviews', cursor, [PG_TIMESTAMP_RE, UUID_RE]);
    let tenantId: string | undefined;
    if (tenant !== undefined) {
      const [row] = await tx.query<{ id: string }>('select id from tenants where slug = $1 and id in (select public.current_author_tenant_ids())', [tenant]);
      if (!row) throw new NotFound(`tenant not found: ${tenant} (or you are not an author of it)`);
      tenantId = row.id;
    }
    const rows = await listReviews(tx, { tenantId, status, authorOnly: true, after: after && { createdAt: after[0]!, id: after[1]! } }, limit + 1);
    const { items, next_cursor } = page(rows, limit, (r) => [r.created_at, r.id]);
    return { structured: { reviews: items, next_cursor }, summary: `${items.length} review(s)${next_cursor ? ', more on the next page' : ''}` };
  },
});

const resolveReviewTool = defineTool({
  name: 'resolve_review',
  title: 'Resolve a review',
  description:
    'Decide an open review once. decision "uphold" keeps the model\'s verdict (a pass held as possible prompt injection then counts); ' +
    '"override" replaces it as override_verdict does (`passed` required, `score` optional). The learner sees the outcome and your reason. ' +
    "Needs the author role in the review's tenant.",
  input: z.strictObject({
    review_id: uuid('Id of the review (list_reviews)'),
    decision: z.enum(['uphold', 'override']).describe('uphold: the verdict stands; override: replace it'),
    passed: z.boolean().optional().describe('Your verdict (required with override, refused with uphold)'),
    score: score.optional(),
    reason: reason('Why; the learner sees it'),
  }),
  output: reviewOutput,
  annotations: DECIDE,
  run: async ({ review_id, decision, passed, score: given, reason: why }, tx) => {
    const review = await resolveReview(tx, { reviewId: review_id, decision, passed, score: given, reason: why, by: await me(tx), now: new Date() }).catch(
      (err) => {
        throw failure(err);
      },
    );
    return { structured: { ...review }, summary: `review ${review_id} ${review.status}` };
  },
});

/** override_verdict, list_reviews, resolve_review. */
export const reviewTools: AnyTool[] = [overrideVerdict, listReviewsTool, resolveReviewTool];
