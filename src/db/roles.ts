/**
 * Running SQL under row-level security (DESIGN §5).
 *
 * `asUser` — one transaction that sets `request.jwt.claims` to the verified claims and
 * switches to the `authenticated` role, the way PostgREST does; the RLS policies of
 * migrations/0001 then decide every read and write. `asResultsTenant` — one transaction as
 * the read-only `svc_results` role with `svc.tenant_id` set, so the results API sees exactly
 * one tenant even if a query forgot its WHERE clause. Both settings are transaction-local.
 */
import type { Db, Queryable } from './types.ts';

export function asUser<T>(db: Db, claims: object, fn: (tx: Queryable) => Promise<T>): Promise<T> {
  return db.transaction(async (tx) => {
    await tx.query(`select set_config('request.jwt.claims', $1, true), set_config('role', 'authenticated', true)`, [JSON.stringify(claims)]);
    return fn(tx);
  });
}

export function asResultsTenant<T>(db: Db, tenantId: string, fn: (tx: Queryable) => Promise<T>): Promise<T> {
  return db.transaction(async (tx) => {
    await tx.query(`select set_config('svc.tenant_id', $1, true), set_config('role', 'svc_results', true)`, [tenantId]);
    return fn(tx);
  });
}
