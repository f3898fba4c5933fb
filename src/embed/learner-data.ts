/**
 * The embed surface's part of a learner's erasure and export (issue #23, src/lib/learner-data.ts):
 * what the judge and the learner reads stored about a learner in a tenant.
 *
 * Erasure, in this order (one transaction, the caller's):
 * 1. the model ledger of their artifacts: the request bodies (`model_requests`, content-addressed
 *    per tenant — found through the artifacts' `model_calls.request_sha256`) are deleted unless a
 *    call of another artifact (or a calibration run) still uses the same body; the calls themselves
 *    go with the artifacts (foreign key, cascade). Hourly counts (`model_usage`) stay: they name no one.
 * 2. judge idempotency records, reviews (appeals with their message, injection holds) and verdict
 *    overrides (an author's reason may quote the work) of the learner's results;
 * 3. artifacts (content, verification) and activity results — migration 0100's triggers leave
 *    tombstones with ids only.
 * Progress rows are the results surface's (src/results/learner-data.ts).
 */
import type { Queryable } from '../db/index.ts';
import type { LearnerData, LearnerScope } from '../lib/learner-data.ts';

const count = async (tx: Queryable, sql: string, params: unknown[]) => (await tx.query(sql, params)).length;

export const embedLearnerData: LearnerData = {
  surface: 'embed',
  tables: {
    'public.activity_results': 'deleted (tombstone: ids only)',
    'public.artifacts': 'deleted with their content and verdicts (tombstone: ids only)',
    'public.model_calls': "the learner's artifacts' calls deleted (cascade); counts stay in model_usage",
    'public.model_requests': "bodies of the learner's calls deleted unless another call still uses them",
    'public.judge_idempotency_keys': 'deleted',
    'public.reviews': "the learner's appeals and holds deleted; an author's resolved_by is theirs (set null when an account goes)",
    'public.verdict_overrides': "overrides of the learner's results deleted; by_user_id names the author",
    'public.calibration_examples': "authors' examples (created_by names the author): not learner data",
    'public.calibration_runs': 'requested_by names the author: not learner data',
    'public.grading_mode_changes': 'changed_by names the author: not learner data',
  },

  async erase(tx: Queryable, s: LearnerScope) {
    const args = [s.tenantId, s.userId];
    const hashes = (
      await tx.query<{ sha: string }>(
        `select distinct c.request_sha256 as sha from model_calls c join artifacts a on a.tenant_id = c.tenant_id and a.id = c.artifact_id
          where a.tenant_id = $1 and a.user_id = $2 and c.request_sha256 is not null`,
        args,
      )
    ).map((r) => r.sha);
    const modelCalls = await count(
      tx,
      `delete from model_calls c using artifacts a where a.tenant_id = $1 and a.user_id = $2 and c.tenant_id = a.tenant_id and c.artifact_id = a.id returning c.id`,
      args,
    );
    const modelRequests = hashes.length
      ? await count(
          tx,
          `delete from model_requests r where r.tenant_id = $1 and r.sha256 = any($2::text[])
              and not exists (select 1 from model_calls c where c.tenant_id = r.tenant_id and c.request_sha256 = r.sha256)
            returning r.sha256`,
          [s.tenantId, hashes],
        )
      : 0;
    const idempotency = await count(tx, 'delete from judge_idempotency_keys where tenant_id = $1 and user_id = $2 returning key', args);
    const overrides = await count(
      tx,
      `delete from verdict_overrides o using activity_results r where r.tenant_id = $1 and r.user_id = $2 and o.tenant_id = r.tenant_id and o.result_id = r.id returning o.id`,
      args,
    );
    const reviews = await count(tx, 'delete from reviews where tenant_id = $1 and user_id = $2 returning id', args);
    const artifacts = await count(tx, 'delete from artifacts where tenant_id = $1 and user_id = $2 returning id', args);
    const results = await count(tx, 'delete from activity_results where tenant_id = $1 and user_id = $2 returning id', args);
    return { results, artifacts, model_calls: modelCalls, model_requests: modelRequests, idempotency_keys: idempotency, reviews, overrides };
  },

  async export(tx: Queryable, s: LearnerScope) {
    const args = [s.tenantId, s.userId];
    const rows = async (sql: string) => (await tx.query<{ j: unknown }>(sql, args)).map((r) => (typeof r.j === 'string' ? JSON.parse(r.j) : r.j));
    return {
      results: await rows(
        `select json_build_object('id', id, 'activity_id', activity_id, 'program_id', program_id, 'status', status, 'score', score::float8,
                'completed_at', completed_at, 'created_at', created_at, 'updated_at', updated_at) as j
           from activity_results where tenant_id = $1 and user_id = $2 order by created_at, id`,
      ),
      artifacts: await rows(
        `select json_build_object('id', id, 'result_id', result_id, 'activity_id', activity_id, 'kind', kind, 'content', content,
                'ref_url', ref_url, 'repo_url', repo_url, 'verification', verification, 'created_at', created_at) as j
           from artifacts where tenant_id = $1 and user_id = $2 order by created_at, id`,
      ),
      appeals: await rows(
        `select json_build_object('id', id, 'kind', kind, 'status', status, 'result_id', result_id, 'artifact_id', artifact_id,
                'message', message, 'created_at', created_at, 'resolved_at', resolved_at, 'reason', reason) as j
           from reviews where tenant_id = $1 and user_id = $2 order by created_at, id`,
      ),
    };
  },
};
