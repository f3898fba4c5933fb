/**
 * `svc author grant|revoke`: who may author in a tenant — a user by email (also covering IdP
 * sign-ins whose token carries the address verified), or an IdP subject (src/embed/author-grants.ts).
 * Registered in ../ops.ts.
 */
import { z } from 'zod';
import type { Queryable } from '../../db/index.ts';
import { grantByEmail, grantBySubject, revokeByEmail, revokeBySubject } from '../../embed/index.ts';
import { findUserByEmail, normaliseEmail, type UserRow } from '../../identity/index.ts';
import { setRole } from '../../lib/memberships.ts';
import { AdminError, email, slug, tenantId, url } from './shared.ts';

/** Whom `author grant|revoke` is about: a user by email, or an IdP subject (issuer: the tenant's, by default). */
const authorTarget = z
  .object({
    tenant: slug,
    email: email.optional(),
    subject: z.string().min(1).max(255).optional(),
    issuer: url.optional(),
  })
  .refine((a) => (a.email === undefined) !== (a.subject === undefined), 'give an email or --subject, not both')
  .refine((a) => a.issuer === undefined || a.subject !== undefined, '--issuer goes with --subject');
type AuthorTarget = z.infer<typeof authorTarget>;

export const authorOps = {
  'author.grant': {
    args: authorTarget,
    run: async (q: Queryable, a: AuthorTarget) => {
      const target = await resolveAuthor(q, a);
      if (target.by === 'subject') {
        // By IdP subject (src/embed/author-grants.ts): effective now if it signed in, else at its first sign-in.
        const { svc_user_id } = await grantBySubject(q, target.id, target.issuer, target.subject);
        return { tenant: a.tenant, issuer: target.issuer, subject: target.subject, svc_user_id, role: 'author' };
      }
      const { id, mail, user } = target;
      // The email grant also covers IdP sign-ins into the tenant whose token carries the address verified.
      await grantByEmail(q, id, mail);
      if (user) {
        await setRole(q, id, user.svc_user_id, 'author');
      }
      return { tenant: a.tenant, email: mail, svc_user_id: user?.svc_user_id ?? null, role: 'author' };
    },
  },
  'author.revoke': {
    args: authorTarget,
    run: async (q: Queryable, a: AuthorTarget) => {
      const target = await resolveAuthor(q, a);
      if (target.by === 'subject') {
        const { revoked, svc_user_id } = await revokeBySubject(q, target.id, target.issuer, target.subject);
        if (!revoked) throw new AdminError('not_found', `${target.subject} at ${target.issuer} is not an author of "${a.tenant}"`);
        return { tenant: a.tenant, issuer: target.issuer, subject: target.subject, svc_user_id, role: 'learner' };
      }
      const { id, mail, user } = target;
      const rows = user
        ? await q.query(`update memberships set role = 'learner' where tenant_id = $1 and user_id = $2 and role = 'author' returning user_id`, [
            id,
            user.svc_user_id,
          ])
        : [];
      const changed = await revokeByEmail(q, id, mail);
      if (!rows.length && !changed) throw new AdminError('not_found', `${mail} is not an author of "${a.tenant}"`);
      return { tenant: a.tenant, email: mail, svc_user_id: user?.svc_user_id ?? null, role: 'learner' };
    },
  },
} as const;

/** The issuer of a subject grant: the one given, or the tenant's IdP issuer. */
async function subjectIssuer(q: Queryable, tenant: string, a: AuthorTarget): Promise<string> {
  if (a.issuer) return a.issuer;
  const [row] = await q.query<{ issuer: string }>('select issuer from tenant_idps where tenant_id = $1', [tenant]);
  if (!row) throw new AdminError('invalid', `"${a.tenant}" has no identity provider: give --issuer, or run svc idp set first`);
  return row.issuer;
}

/**
 * Whom an author grant or revocation names, in the tenant `id`: an IdP subject with its issuer
 * (`subjectIssuer`), or an email address (normalised) with its user when one exists.
 * Throws `AdminError` not_found for an unknown tenant, invalid for a subject without an issuer.
 */
async function resolveAuthor(
  q: Queryable,
  a: AuthorTarget,
): Promise<{ by: 'subject'; id: string; issuer: string; subject: string } | { by: 'email'; id: string; mail: string; user: UserRow | undefined }> {
  const id = await tenantId(q, a.tenant);
  if (a.subject !== undefined) return { by: 'subject', id, issuer: await subjectIssuer(q, id, a), subject: a.subject };
  const mail = normaliseEmail(a.email!);
  return { by: 'email', id, mail, user: await findUserByEmail(q, mail) };
}
