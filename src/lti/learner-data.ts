/**
 * The LTI surface's part of a learner's erasure and export (issue #23, src/lib/learner-data.ts;
 * issue #22). An LTI learner is an identity `auth.identities(provider = 'lti:<tenant id>:<issuer>',
 * provider_id = the platform's sub)` (learners.ts): one per tenant, so erasing the learner from a
 * tenant deletes that tenant's LTI identities of theirs — with the platform's profile claims (name,
 * email) kept in `identity_data`. It runs before the identity surface, which then deletes the
 * account when nothing is left. LTI's own tables (keys, platforms, deployments, single-use values)
 * name no user.
 */
import type { Queryable } from '../db/index.ts';
import type { LearnerData, LearnerScope } from '../lib/learner-data.ts';
import { ltiProviderPrefix } from './learners.ts';


export const ltiLearnerData: LearnerData = {
  surface: 'lti',
  tables: {
    'auth.identities': "the learner's LTI identities of the tenant (provider lti:<tenant>:<issuer>) deleted, with the platform's profile claims",
  },
  async erase(tx: Queryable, s: LearnerScope) {
    const identities = await tx.query('delete from auth.identities where user_id = $1 and starts_with(provider, $2) returning id', [s.authUserId, ltiProviderPrefix(s.tenantId)]);
    return { lti_identities: identities.length };
  },
  async export(tx: Queryable, s: LearnerScope) {
    const identities = await tx.query(
      `select substr(provider, length($2) + 1) as issuer, provider_id as subject, identity_data as claims,
              to_json(last_sign_in_at) #>> '{}' as last_launch_at
         from auth.identities where user_id = $1 and starts_with(provider, $2) order by created_at`,
      [s.authUserId, ltiProviderPrefix(s.tenantId)],
    );
    return { identities };
  },
};
