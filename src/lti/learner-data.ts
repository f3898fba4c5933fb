/**
 * The LTI surface's part of a learner's erasure and export (issue #23, src/lib/learner-data.ts;
 * issue #22). An LTI learner is an identity `auth.identities(provider = 'lti:<tenant id>:<issuer>',
 * provider_id = the platform's sub)` (learners.ts): one per tenant, so erasing the learner from a
 * tenant deletes that tenant's LTI identities of theirs — with the platform's profile claims (name,
 * email) kept in `identity_data`. It runs before the identity surface, which then deletes the
 * account when nothing is left. The learner's course memberships (`lti_context_members`, from
 * launches and rosters) go too, and so do the scores owed or sent to the platforms for them
 * (`lti_score_deliveries`, with their LTI `sub`). LTI's other tables (keys, platforms, deployments,
 * single-use values, courses, placements, line items) name no user.
 */
import type { Queryable } from '../db/index.ts';
import type { LearnerData, LearnerScope } from '../lib/learner-data.ts';
import { ltiProviderPrefix } from './learners.ts';

export const ltiLearnerData: LearnerData = {
  surface: 'lti',
  tables: {
    'auth.identities': "the learner's LTI identities of the tenant (provider lti:<tenant>:<issuer>) deleted, with the platform's profile claims",
    'public.lti_context_members': "the learner's course memberships in the tenant (from launches and NRPS rosters) deleted",
    'public.lti_score_deliveries': 'the scores owed or sent to the LMS for the learner (with their LTI sub) deleted',
  },
  async erase(tx: Queryable, s: LearnerScope) {
    const identities = await tx.query('delete from auth.identities where user_id = $1 and starts_with(provider, $2) returning id', [
      s.authUserId,
      ltiProviderPrefix(s.tenantId),
    ]);
    const members = await tx.query('delete from lti_context_members where tenant_id = $1 and user_id = $2 returning context', [s.tenantId, s.userId]);
    const scores = await tx.query('delete from lti_score_deliveries where tenant_id = $1 and user_id = $2 returning id', [s.tenantId, s.userId]);
    return { lti_identities: identities.length, lti_context_members: members.length, lti_score_deliveries: scores.length };
  },
  async export(tx: Queryable, s: LearnerScope) {
    const identities = await tx.query(
      `select substr(provider, length($2) + 1) as issuer, provider_id as subject, identity_data as claims,
              to_json(last_sign_in_at) #>> '{}' as last_launch_at
         from auth.identities where user_id = $1 and starts_with(provider, $2) order by created_at`,
      [s.authUserId, ltiProviderPrefix(s.tenantId)],
    );
    const courses = await tx.query(
      `select c.context_id, c.title, m.roles, m.source, to_json(m.updated_at) #>> '{}' as updated_at
         from lti_context_members m join lti_contexts c on c.tenant_id = m.tenant_id and c.id = m.context
        where m.tenant_id = $1 and m.user_id = $2 order by c.context_id`,
      [s.tenantId, s.userId],
    );
    const scores = await tx.query(
      `select l.resource_link_id, l.activity_id, d.subject as user_id, d.state, d.sent as score, d.lineitem_url,
              to_json(d.created_at) #>> '{}' as created_at, to_json(d.delivered_at) #>> '{}' as delivered_at
         from lti_score_deliveries d join lti_resource_links l on l.tenant_id = d.tenant_id and l.id = d.link
        where d.tenant_id = $1 and d.user_id = $2 order by d.created_at, d.id`,
      [s.tenantId, s.userId],
    );
    return { identities, courses, scores };
  },
};
