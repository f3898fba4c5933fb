/**
 * Tenant memberships (`memberships(tenant_id, user_id, role)`, role 'author' | 'learner'): the
 * one place the service writes them.
 */
import type { Queryable } from '../db/index.ts';

/** Make svc user `userId` a learner of `tenantId` unless already a member (an author stays an author). */
export async function addLearner(q: Queryable, tenantId: string, userId: string): Promise<void> {
  await q.query(`insert into memberships (tenant_id, user_id, role) values ($1, $2, 'learner') on conflict do nothing`, [tenantId, userId]);
}

/** Give svc user `userId` `role` in `tenantId`, whatever it had (author grants and revocations). */
export async function setRole(q: Queryable, tenantId: string, userId: string, role: 'author' | 'learner'): Promise<void> {
  await q.query(
    `insert into memberships (tenant_id, user_id, role) values ($1, $2, $3)
     on conflict (tenant_id, user_id) do update set role = excluded.role`,
    [tenantId, userId, role],
  );
}
