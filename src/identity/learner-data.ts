/**
 * The identity surface's part of a learner's erasure and export (issue #23,
 * src/lib/learner-data.ts). Runs last (after every tenant-owned row is gone):
 *
 * - sessions bound to the tenant end (`auth.sessions.tenant_id`; their refresh tokens go by cascade);
 * - the IdP identity of the tenant's issuer (`provider = 'idp:<issuer>'`) goes unless another tenant
 *   the learner still belongs to trusts the same issuer;
 * - when the learner then belongs to no tenant and cannot sign in by password (an IdP learner),
 *   the account goes with everything hanging off it (identities, sessions, refresh tokens, OAuth
 *   consents and authorizations, public.users). An account with a password is someone's login:
 *   `svc user delete` removes it.
 */
import type { Queryable } from '../db/index.ts';
import type { LearnerData, LearnerScope } from '../lib/learner-data.ts';

export const identityLearnerData: LearnerData = {
  surface: 'identity',
  tables: {
    'auth.sessions': "the learner's sessions bound to the tenant deleted; every session when the account goes",
    'auth.refresh_tokens': 'deleted with their sessions (cascade)',
    'auth.identities': "the tenant issuer's identity deleted unless another of the learner's tenants trusts it",
    'auth.users': 'deleted when the learner is left in no tenant and has no password (svc user delete: always)',
    'auth.oauth_consents': 'deleted with the account (cascade)',
    'auth.oauth_authorizations': 'deleted with the account (cascade)',
    'public.users': 'deleted with the account (cascade)',
  },
  async erase(tx: Queryable, s: LearnerScope) {
    const sessions = (await tx.query('delete from auth.sessions where user_id = $1 and tenant_id = $2 returning id', [s.authUserId, s.tenantId])).length;
    const identities = (
      await tx.query(
        `delete from auth.identities i using tenant_idps p
          where p.tenant_id = $2 and i.user_id = $1 and i.provider = 'idp:' || p.issuer
            and not exists (select 1 from memberships m join tenant_idps o on o.tenant_id = m.tenant_id
                             where m.user_id = $3 and m.tenant_id <> $2 and o.issuer = p.issuer)
          returning i.id`,
        [s.authUserId, s.tenantId, s.userId],
      )
    ).length;
    const account = (
      await tx.query(
        `delete from auth.users au where au.id = $1 and au.encrypted_password is null
            and not exists (select 1 from memberships m where m.user_id = $2)
          returning au.id`,
        [s.authUserId, s.userId],
      )
    ).length;
    return { sessions, identities, account };
  },
  async export(tx: Queryable, s: LearnerScope) {
    const [account] = await tx.query(
      `select u.id as svc_user_id, a.email, to_json(a.created_at) #>> '{}' as created_at, to_json(a.last_sign_in_at) #>> '{}' as last_sign_in_at
         from users u join auth.users a on a.id = u.auth_user_id where u.id = $1`,
      [s.userId],
    );
    const identities = await tx.query(
      `select case when i.provider like 'idp:%' then substr(i.provider, 5) end as issuer, i.provider, i.provider_id as subject, i.email, i.identity_data as claims,
              to_json(i.last_sign_in_at) #>> '{}' as last_sign_in_at
         from auth.identities i where i.user_id = $1 order by i.created_at`,
      [s.authUserId],
    );
    return { account: account ?? null, identities };
  },
};
