/**
 * Authorship for identity-provider users (issue #6 "Session": an internal teacher whom an admin
 * granted authorship, by email or IdP subject, gets author rights in that tenant).
 *
 * Grants live in `embed_author_grants` (migration 0040), per tenant, by IdP subject
 * (issuer + `sub`) or by email, and may name someone who has not signed in yet:
 * - `grantBySubject` / `revokeBySubject` record or delete a subject grant and, when the subject
 *   has signed in before, make its user an author (or a learner again) in the tenant at once;
 * - `grantByEmail` / `revokeByEmail` do the same for an email grant, which IdP users match when
 *   their token's `email` equals it and `email_verified` is true (the tenant trusts its IdP to
 *   vouch for the address); revoking also demotes the tenant's IdP users that carry the email;
 * - `applyGrants` runs at every embed sign-in, in its transaction: a matching grant makes the
 *   user an author of the tenant.
 * Every function runs in the caller's transaction as the database owner.
 */
import type { Queryable } from '../db/index.ts';
import { normaliseEmail } from '../identity/index.ts';
import type { IdpClaims } from './idp.ts';
import { setRole } from '../lib/memberships.ts';

/** `auth.identities.provider` of an IdP (the same rule as learner.ts). */
const provider = (issuer: string) => `idp:${issuer}`;

/** The svc user of an IdP subject, or undefined when it never signed in. */
async function subjectUser(q: Queryable, issuer: string, subject: string): Promise<string | undefined> {
  const [row] = await q.query<{ id: string }>(
    `select u.id from auth.identities i join users u on u.auth_user_id = i.user_id where i.provider = $1 and i.provider_id = $2`,
    [provider(issuer), subject],
  );
  return row?.id;
}

/** Grant authorship in `tenantId` to IdP subject (`issuer`, `subject`). Returns its user id when it signed in before. */
export async function grantBySubject(q: Queryable, tenantId: string, issuer: string, subject: string): Promise<{ svc_user_id: string | null }> {
  await q.query(
    `insert into embed_author_grants (tenant_id, issuer, subject) values ($1, $2, $3)
     on conflict (tenant_id, issuer, subject) where subject is not null do nothing`,
    [tenantId, issuer, subject],
  );
  const userId = await subjectUser(q, issuer, subject);
  if (userId) await setRole(q, tenantId, userId, 'author');
  return { svc_user_id: userId ?? null };
}

/** Revoke a subject grant; its user (if any) becomes a learner of the tenant. False when there was neither a grant nor authorship. */
export async function revokeBySubject(
  q: Queryable,
  tenantId: string,
  issuer: string,
  subject: string,
): Promise<{ revoked: boolean; svc_user_id: string | null }> {
  const deleted = await q.query(`delete from embed_author_grants where tenant_id = $1 and issuer = $2 and subject = $3 returning id`, [
    tenantId,
    issuer,
    subject,
  ]);
  const userId = await subjectUser(q, issuer, subject);
  const demoted = userId
    ? await q.query(`update memberships set role = 'learner' where tenant_id = $1 and user_id = $2 and role = 'author' returning user_id`, [tenantId, userId])
    : [];
  return { revoked: deleted.length > 0 || demoted.length > 0, svc_user_id: userId ?? null };
}

/** Record an email grant in `tenantId` (`email` lower-cased and trimmed by the caller). */
export async function grantByEmail(q: Queryable, tenantId: string, email: string): Promise<void> {
  await q.query(`insert into embed_author_grants (tenant_id, email) values ($1, $2) on conflict (tenant_id, email) where email is not null do nothing`, [
    tenantId,
    email,
  ]);
}

/** Delete an email grant and demote the tenant's IdP users whose identity carries `email`. Returns how many grants and users changed. */
export async function revokeByEmail(q: Queryable, tenantId: string, email: string): Promise<number> {
  const deleted = await q.query(`delete from embed_author_grants where tenant_id = $1 and email = $2 returning id`, [tenantId, email]);
  const demoted = await q.query(
    `update memberships m set role = 'learner'
       from users u join auth.identities i on i.user_id = u.auth_user_id
      where m.tenant_id = $1 and m.user_id = u.id and m.role = 'author'
        and i.provider like 'idp:%' and lower(i.identity_data ->> 'email') = $2
        and not exists (select 1 from embed_author_grants g
                         where g.tenant_id = $1 and 'idp:' || g.issuer = i.provider and g.subject = i.provider_id)
      returning m.user_id`,
    [tenantId, email],
  );
  return deleted.length + demoted.length;
}

/** At an embed sign-in of `userId` with `claims` from `issuer` into `tenantId`: make the user an author when a grant matches. */
export async function applyGrants(tx: Queryable, tenantId: string, issuer: string, claims: IdpClaims, userId: string): Promise<boolean> {
  const email = typeof claims.email === 'string' && claims.email_verified === true ? normaliseEmail(claims.email) : null;
  const [grant] = await tx.query<{ id: string }>(
    `select id from embed_author_grants
      where tenant_id = $1 and ((issuer = $2 and subject = $3) or ($4::text is not null and email = $4::text))
      limit 1`,
    [tenantId, issuer, claims.sub, email],
  );
  if (!grant) return false;
  await setRole(tx, tenantId, userId, 'author');
  return true;
}
