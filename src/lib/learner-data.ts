/**
 * The shape of one surface's part in erasing and exporting a learner (issue #23; DESIGN §9:
 * "each surface erases its own rows through one registry, so a new table cannot be forgotten").
 * Each surface that stores rows about a learner exports one `LearnerData`; the registry
 * (src/admin/learner-data.ts) runs them in order, and test/admin/learner-data.test.ts fails when
 * a table of the database that names a user is declared by no surface.
 */
import type { Queryable } from '../db/index.ts';

/** Whom an erasure or export is about: a learner (svc_user_id) in one tenant. */
export interface LearnerScope {
  tenantId: string;
  /** svc_user_id (public.users.id). */
  userId: string;
  /** The account's auth.users id. */
  authUserId: string;
}

export interface LearnerData {
  /** The surface's folder: `embed`, `results`, `identity`, `lti`… */
  surface: string;
  /**
   * Every table (schema-qualified) of the surface that holds a learner's data or names a user,
   * and what erasure does to it, in a few words ("deleted", "kept: ids only", "author's, not the learner's").
   */
  tables: Record<string, string>;
  /**
   * Erase the learner's rows of this surface in `scope.tenantId`, in the caller's transaction (as
   * the database owner); returns how many rows of each kind went. Surfaces run in registry order.
   */
  erase(tx: Queryable, scope: LearnerScope): Promise<Record<string, number>>;
  /** The learner's rows of this surface in the tenant, as plain JSON (for `svc learner export`). */
  export(tx: Queryable, scope: LearnerScope): Promise<Record<string, unknown>>;
}
