/**
 * The results surface's part of a learner's erasure and export (issue #23,
 * src/lib/learner-data.ts): progress rows and the membership (the learner of `/v1/learners`).
 * Their deletion leaves tombstones in `deletions` (migration 0100), which carry ids only
 * (`svc_user_id`, `program_id`) — what a partner needs to drop its copy.
 */
import type { Queryable } from '../db/index.ts';
import type { LearnerData, LearnerScope } from '../lib/learner-data.ts';

export const resultsLearnerData: LearnerData = {
  surface: 'results',
  tables: {
    'public.progress': 'deleted (tombstone: ids only)',
    'public.memberships': 'deleted (tombstone `learner`: the svc_user_id only)',
    'public.deletions': 'kept: tombstones carry ids only (svc_user_id, program_id); removed by retention (not built yet)',
  },
  async erase(tx: Queryable, s: LearnerScope) {
    const args = [s.tenantId, s.userId];
    const progress = (await tx.query('delete from progress where tenant_id = $1 and user_id = $2 returning id', args)).length;
    const memberships = (await tx.query('delete from memberships where tenant_id = $1 and user_id = $2 returning user_id', args)).length;
    return { progress, memberships };
  },
  async export(tx: Queryable, s: LearnerScope) {
    const args = [s.tenantId, s.userId];
    const [membership] = await tx.query<{ role: string; created_at: string }>(
      `select role, to_json(created_at) #>> '{}' as created_at from memberships where tenant_id = $1 and user_id = $2`,
      args,
    );
    const progress = await tx.query(
      `select program_id, completed_count, to_json(last_activity_at) #>> '{}' as last_activity_at from progress
        where tenant_id = $1 and user_id = $2 order by program_id`,
      args,
    );
    return { membership: membership ?? null, progress };
  },
};
