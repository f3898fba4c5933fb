/**
 * `svc lti scores <tenant> [--failed] [--json]`: the tenant's score deliveries (the outbox,
 * migration 0152), newest first — what was owed to which placement and learner, and what became
 * of it: `queued` (waiting; after a failed attempt, `next_attempt_at` and `last_error` say when and
 * why), `sending`, `delivered` (the score as sent), `skipped` (nothing to report, or lower than a
 * pass already sent), `failed` (the platform refused it: `http_status`, `last_error`).
 */
import type { Queryable } from '../../db/index.ts';

/** One delivery as `svc lti scores` shows it. */
export interface ScoreDelivery {
  id: string;
  state: 'queued' | 'sending' | 'delivered' | 'failed' | 'skipped';
  activity_id: string;
  resource_link_id: string;
  context_id: string | null;
  svc_user_id: string;
  /** The learner's LTI `sub` (the score's userId). */
  user_id: string;
  grading_progress: string | null;
  score_given: number | null;
  lineitem_url: string | null;
  attempts: number;
  http_status: number | null;
  last_error: string | null;
  /** RFC 3339. */
  created_at: string;
  next_attempt_at: string | null;
  delivered_at: string | null;
}

/** The deliveries of tenant `tenantId`, newest first, at most `limit`; only `failed` ones with `failed`. */
export async function listScores(q: Queryable, tenantId: string, options: { failed?: boolean; limit?: number } = {}): Promise<ScoreDelivery[]> {
  return q.query<ScoreDelivery>(
    `select d.id, d.state, l.activity_id, l.resource_link_id, c.context_id, d.user_id as svc_user_id, d.subject as user_id,
            d.sent->>'gradingProgress' as grading_progress, (d.sent->>'scoreGiven')::float8 as score_given,
            d.lineitem_url, d.attempts, d.http_status, d.last_error,
            to_json(d.created_at) #>> '{}' as created_at,
            case when d.state = 'queued' then to_json(d.next_attempt_at) #>> '{}' end as next_attempt_at,
            to_json(d.delivered_at) #>> '{}' as delivered_at
       from lti_score_deliveries d
       join lti_resource_links l on l.tenant_id = d.tenant_id and l.id = d.link
       left join lti_contexts c on c.tenant_id = l.tenant_id and c.id = l.context
      where d.tenant_id = $1 and (not $2::boolean or d.state = 'failed')
      order by d.created_at desc, d.id desc
      limit $3`,
    [tenantId, options.failed ?? false, options.limit ?? 500],
  );
}
