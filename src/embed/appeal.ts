/**
 * A learner's appeal of a verdict (issue #21 "Learner appeals"):
 *
 *   POST /v1/embed/results/{id}/appeal   {message}  (1..1000 characters)
 *   Authorization: Bearer <session access_token> (from POST /v1/embed/session)
 *
 * 1. Authenticate: a session token of this service (learner.ts `trySessionToken`), else 401.
 * 2. Validate: `message` 1..1000 characters after trimming (zod, routes.ts) → 400 `invalid_request`.
 * 3. As the learner (`asUser`, role `authenticated`, RLS as for the reads, migration 0090): the
 *    result must be one of their own — another learner's or another tenant's id is not there: 404
 *    `not_found` (never 403).
 * 4. Count the appeal against the learner's rate (learner-rate.ts `appealLimiter`: 429
 *    `rate_limited` with `Retry-After` beyond it), before anything is written.
 * 5. The result's latest submission must have a verdict: still pending (grading, or held for
 *    review) → 409 `verdict_pending`. An open appeal of the result already → 409 `appeal_open`.
 * 6. File the appeal in the review queue (`reviews`, kind `appeal`, on that latest artifact) —
 *    an insert RLS allows only for a result of the learner's own (migration 0142) — and answer 201
 *    with it. An author resolves it (MCP `resolve_review`, grading/review.ts); the learner sees the
 *    outcome in `GET /v1/embed/results/{id}` (`appeal`) and the player.
 */
import { z } from 'zod';
import { asUser, type Queryable } from '../db/index.ts';
import { isUniqueViolation } from '../db/errors.ts';
import type { Deps } from '../deps.ts';
import { ApiError } from '../http/api-errors.ts';
import { notFound, unauthorized } from './errors.ts';
import { MAX_REASON_CHARS } from './grading/override.ts';
import { outcomeOf } from './grading/verdict-view.ts';
import type { LearnerLimit } from './judge.ts';
import { trySessionToken } from './learner.ts';

export const appealBody = z
  .object({
    message: z
      .string('message: a string is required')
      .trim()
      .min(1, 'message: write why you ask for a review (1–1000 characters)')
      .max(MAX_REASON_CHARS, `message: at most ${MAX_REASON_CHARS} characters`)
      .describe('Why the learner asks for a review, 1–1000 characters.'),
  })
  .strict();

/** The learner's appeal of a result, as the learner sees it. */
export const appealView = z.object({
  id: z.uuid().describe('The review in the queue.'),
  status: z
    .enum(['open', 'upheld', 'overridden'])
    .describe('open until an instructor resolves it; upheld (the verdict stands) or overridden (the instructor changed it).'),
  message: z.string().describe("The learner's message."),
  created_at: z.string().describe('RFC 3339.'),
  resolved_at: z.string().optional().describe('RFC 3339, once resolved.'),
  reason: z.string().optional().describe("The instructor's reason, once resolved (when they gave one)."),
});
export type AppealView = z.infer<typeof appealView>;

const APPEAL_COLUMNS = `id, status, message, to_json(created_at) #>> '{}' as created_at, to_json(resolved_at) #>> '{}' as resolved_at, reason`;

const view = (row: Record<string, unknown>): AppealView => Object.fromEntries(Object.entries(row).filter(([, value]) => value !== null)) as AppealView;

/** The learner's latest appeal of result `resultId` (as the learner under RLS), or null. */
export async function appealOf(tx: Queryable, resultId: string): Promise<AppealView | null> {
  const [row] = await tx.query<Record<string, unknown>>(
    `select ${APPEAL_COLUMNS} from reviews
      where result_id = $1 and kind = 'appeal' and user_id = public.current_itera_user_id()
      order by created_at desc, id desc limit 1`,
    [resultId],
  );
  return row ? view(row) : null;
}

/** Steps 1–6 of the header; resolves to the filed appeal. */
export async function fileAppeal(deps: Deps, limit: LearnerLimit, token: string | undefined, resultId: string, message: string): Promise<AppealView> {
  const session = token === undefined ? undefined : await trySessionToken(deps, token);
  if (!session) throw unauthorized(token === undefined ? 'no bearer token' : 'not a session token of this service');
  try {
    return await asUser(deps.db, session.claims, async (tx) => {
      const [result] = await tx.query<{ tenant_id: string; user_id: string }>(
        'select tenant_id, user_id from activity_results where id = $1 and user_id = public.current_itera_user_id()',
        [resultId],
      );
      if (!result) throw notFound(`result ${resultId} not found`);
      await limit(result.tenant_id, result.user_id);
      const [latest] = await tx.query<{ id: string; verification: Record<string, unknown> | null }>(
        'select id, verification from artifacts where tenant_id = $1 and result_id = $2 order by created_at desc, id desc limit 1',
        [result.tenant_id, resultId],
      );
      if (!latest || outcomeOf(latest.verification).kind === 'pending') {
        throw new ApiError('verdict_pending', `result ${resultId} has no verdict yet: ask for a review once it is graded`);
      }
      const [open] = await tx.query('select 1 from reviews where tenant_id = $1 and result_id = $2 and kind = $3 and status = $4', [
        result.tenant_id,
        resultId,
        'appeal',
        'open',
      ]);
      if (open) throw appealOpen(resultId);
      const [row] = await tx.query<Record<string, unknown>>(
        `insert into reviews (tenant_id, kind, result_id, artifact_id, user_id, message)
         values ($1, 'appeal', $2, $3, $4, $5) returning ${APPEAL_COLUMNS}`,
        [result.tenant_id, resultId, latest.id, result.user_id, message],
      );
      return view(row!);
    });
  } catch (err) {
    if (isUniqueViolation(err)) throw appealOpen(resultId); // a concurrent appeal of the same result won
    throw err;
  }
}

const appealOpen = (resultId: string) => new ApiError('appeal_open', `result ${resultId} already has an open review request`);
