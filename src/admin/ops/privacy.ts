/**
 * `svc learner delete|export` and `svc retention show|set|run`: a learner's erasure and export
 * through the learner-data registry (../learner-data.ts), and how long a tenant keeps model
 * bodies, artifact content and tombstones (../retention.ts) — issues #14 and #23.
 * Registered in ../ops.ts.
 */
import { z } from 'zod';
import type { Db, Queryable } from '../../db/index.ts';
import { eraseLearnerData, exportLearnerData, isLearnerOf, learnerScope } from '../learner-data.ts';
import { type Days, retentionOf, runRetention, setRetention } from '../retention.ts';
import { AdminError, slug, tenantId } from './shared.ts';

/** A retention window: a positive whole number of days, or `forever` (null). */
const retentionDays = z
  .union([z.literal('forever'), z.number(), z.string().regex(/^\s*\d+\s*$/, 'a positive number of days, or forever')], {
    error: 'a positive number of days, or forever',
  })
  .transform((v) => (v === 'forever' ? null : Number(v)))
  .pipe(
    z
      .number()
      .int('a positive number of days, or forever')
      .min(1, 'a positive number of days, or forever')
      .max(36_500, 'at most 36500 days (or forever)')
      .nullable(),
  );

export const learnerOps = {
  'learner.delete': {
    args: z.object({ tenant: slug, svc_user_id: z.uuid('an svc_user_id is a uuid') }),
    run: async (q: Queryable, a: { tenant: string; svc_user_id: string }) => eraseLearner(q, await tenantId(q, a.tenant), a),
  },
  // svc learner export: everything held about a learner in a tenant (issue #23, src/admin/learner-data.ts).
  'learner.export': {
    args: z.object({ tenant: slug, svc_user_id: z.uuid('an svc_user_id is a uuid') }),
    run: async (q: Queryable, a: { tenant: string; svc_user_id: string }) => {
      const scope = await learnerIn(q, await tenantId(q, a.tenant), a);
      return { tenant: a.tenant, svc_user_id: a.svc_user_id, exported_at: new Date().toISOString(), ...(await exportLearnerData(q, scope)) };
    },
  },
} as const;

export const retentionOps = {
  // svc retention set|show|run: how long a tenant keeps model bodies, artifact content, tombstones (issue #23, retention.ts).
  'retention.show': {
    args: z.object({ tenant: slug }),
    run: async (q: Queryable, a: { tenant: string }) => ({ tenant: a.tenant, ...(await retentionOf(q, await tenantId(q, a.tenant))) }),
  },
  'retention.set': {
    args: z
      .object({ tenant: slug, artifact_content: retentionDays.optional(), model_bodies: retentionDays.optional(), tombstones: retentionDays.optional() })
      .refine(
        (a) => a.artifact_content !== undefined || a.model_bodies !== undefined || a.tombstones !== undefined,
        'give at least one of --artifact-content, --model-bodies, --tombstones',
      ),
    run: async (q: Queryable, a: { tenant: string; artifact_content?: Days; model_bodies?: Days; tombstones?: Days }) => {
      const change = {
        ...(a.artifact_content !== undefined && { artifact_content_days: a.artifact_content }),
        ...(a.model_bodies !== undefined && { model_bodies_days: a.model_bodies }),
        ...(a.tombstones !== undefined && { tombstones_days: a.tombstones }),
      };
      return { tenant: a.tenant, ...(await setRetention(q, await tenantId(q, a.tenant), change)) };
    },
  },
  'retention.run': {
    args: z.object({ tenant: slug.optional() }),
    /** Runs its own short transactions (batches): `runOp` hands it the database, not a transaction. */
    ownTransactions: true,
    run: async (db: Db, a: { tenant?: string }) => ({
      ...(a.tenant !== undefined && { tenant: a.tenant }),
      ...(await runRetention(db, { tenantId: a.tenant ? await tenantId(db, a.tenant) : undefined })),
    }),
  },
} as const;

/**
 * Erase a learner from one tenant (right to erasure, issues #14 and #23) through the learner-data
 * registry (src/admin/learner-data.ts): results, artifacts and their content, the model ledger's
 * bodies of their submissions, idempotency records, reviews and overrides, progress, membership,
 * sessions bound to the tenant and the tenant issuer's identity; the account when the learner is
 * left in no tenant and has no password. Tombstones (ids only) appear in /v1/deletions. Not found
 * when the user has no membership and no rows in the tenant.
 */
async function eraseLearner(q: Queryable, tenant: string, a: { tenant: string; svc_user_id: string }) {
  const scope = await learnerIn(q, tenant, a);
  const erased = await eraseLearnerData(q, scope);
  const { results, model_requests } = erased.embed!;
  const { progress, memberships } = erased.results!;
  return {
    tenant: a.tenant,
    svc_user_id: a.svc_user_id,
    deleted: { results, progress, learner: memberships! > 0, account: erased.identity!.account! > 0, model_requests },
    erased,
  };
}

/** The learner `a.svc_user_id` of tenant `tenant`; AdminError not_found when they are not one of its learners. */
async function learnerIn(q: Queryable, tenant: string, a: { tenant: string; svc_user_id: string }) {
  const scope = await learnerScope(q, tenant, a.svc_user_id);
  if (!scope || !(await isLearnerOf(q, scope))) throw new AdminError('not_found', `no learner ${a.svc_user_id} in "${a.tenant}"`);
  return scope;
}
