/**
 * The learner-data registry (issue #23; DESIGN §9): every surface that stores rows about a learner
 * contributes one `LearnerData` (src/lib/learner-data.ts), and erasure and export run them all,
 * in this order — tenant-owned rows first (embed: results, artifacts, the model ledger, reviews;
 * results: progress, membership), the account last (identity). test/admin/learner-data.test.ts
 * reads the database catalog and fails when a table that names a user is declared by no surface,
 * so a new table cannot be forgotten.
 *
 * LTI (src/lti) erases its learners' identities of the tenant before the identity surface runs;
 * roster rows (NRPS, not built yet) will join its `LearnerData`.
 */
import { embedLearnerData } from '../embed/index.ts';
import { identityLearnerData } from '../identity/index.ts';
import { ltiLearnerData } from '../lti/index.ts';
import type { Queryable } from '../db/index.ts';
import type { LearnerData, LearnerScope } from '../lib/learner-data.ts';
import { resultsLearnerData } from '../results/index.ts';

/** The surfaces, in erasure order (the account's surface last). */
export const SURFACES: readonly LearnerData[] = [embedLearnerData, resultsLearnerData, ltiLearnerData, identityLearnerData];

/**
 * Tables that name a user but hold nothing of a learner's to erase, with why (the catalog test
 * accepts them as covered).
 */
export const NOT_LEARNER_DATA: Record<string, string> = {
  'public.audit_events': 'the audit log: ids only (actor_id, target_id), append-only by design',
};

/** The scope of `userId` (svc_user_id) in `tenantId`, or undefined when there is no such user. */
export async function learnerScope(q: Queryable, tenantId: string, userId: string): Promise<LearnerScope | undefined> {
  const [row] = await q.query<{ auth_user_id: string }>('select auth_user_id from users where id = $1', [userId]);
  return row && { tenantId, userId, authUserId: row.auth_user_id };
}

/** True when the learner has a membership or any result, artifact or progress row in the tenant. */
export async function isLearnerOf(q: Queryable, s: LearnerScope): Promise<boolean> {
  const [row] = await q.query<{ found: boolean }>(
    `select exists (select 1 from memberships where tenant_id = $1 and user_id = $2)
         or exists (select 1 from activity_results where tenant_id = $1 and user_id = $2)
         or exists (select 1 from progress where tenant_id = $1 and user_id = $2) as found`,
    [s.tenantId, s.userId],
  );
  return row!.found;
}

/** Erase the learner of `s` from its tenant through every surface; counts by surface. */
export async function eraseLearnerData(tx: Queryable, s: LearnerScope): Promise<Record<string, Record<string, number>>> {
  const out: Record<string, Record<string, number>> = {};
  for (const surface of SURFACES) out[surface.surface] = await surface.erase(tx, s);
  return out;
}

/** Everything every surface holds about the learner of `s` in its tenant. */
export async function exportLearnerData(tx: Queryable, s: LearnerScope): Promise<Record<string, Record<string, unknown>>> {
  const out: Record<string, Record<string, unknown>> = {};
  for (const surface of SURFACES) out[surface.surface] = await surface.export(tx, s);
  return out;
}

/** The tenants where svc user `userId` has a membership or rows. */
export async function tenantsOf(q: Queryable, userId: string): Promise<string[]> {
  return (
    await q.query<{ tenant_id: string }>(
      `select tenant_id from memberships where user_id = $1
       union select tenant_id from activity_results where user_id = $1
       union select tenant_id from progress where user_id = $1
       union select tenant_id from reviews where user_id = $1`,
      [userId],
    )
  ).map((r) => r.tenant_id);
}

/**
 * Erase every tenant's rows of svc user `userId` (all surfaces but the account's), before the
 * account itself is deleted (`svc user delete`: the cascade from auth.users takes the rest).
 * Returns the tenants erased.
 */
export async function eraseEveryTenant(tx: Queryable, userId: string, authUserId: string): Promise<string[]> {
  const tenants = await tenantsOf(tx, userId);
  for (const tenantId of tenants) {
    for (const surface of SURFACES) if (surface.surface !== 'identity') await surface.erase(tx, { tenantId, userId, authUserId });
  }
  return tenants;
}
