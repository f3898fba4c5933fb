/**
 * Admin operations behind the `svc` CLI (DESIGN §6). One function per command; each runs as
 * the database owner in one transaction and returns plain JSON. The CLI calls them directly
 * (DATABASE_URL, or an embedded data folder no server holds) or through the running server's
 * `POST /admin/v1/ops/:op` (embedded folder held by `npm start`), so both paths run this code.
 *
 * Errors: `AdminError` with a stable `code` (`not_found`, `conflict`, `invalid`) and a message
 * meant for the person at the terminal.
 */
import { z } from 'zod';
import type { Db, Queryable } from '../db/index.ts';
import { createApiKey, listApiKeys, revokeApiKey } from '../results/api-keys.ts';
import { AuthError } from '../identity/errors.ts';
import { createUser, findUserByEmail, userJson } from '../identity/users.ts';

export class AdminError extends Error {
  constructor(
    readonly code: 'not_found' | 'conflict' | 'invalid',
    message: string,
  ) {
    super(message);
  }
}

const slug = z
  .string()
  .regex(/^[a-z0-9][a-z0-9-]{0,62}$/, 'a tenant slug is 1–63 lower-case letters, digits and dashes, starting with a letter or digit');
const email = z.string().min(3).max(320);
const url = z.url().refine((u) => /^https?:\/\//.test(u), 'must be an http(s) URL');

/** The commands, their argument schemas and implementations. */
export const ops = {
  'tenant.create': {
    args: z.object({ slug, name: z.string().min(1).max(200).optional() }),
    run: async (q: Queryable, a: { slug: string; name?: string }) => {
      const rows = await q.query(
        `insert into tenants (slug, name) values ($1, $2) on conflict (slug) do nothing
         returning id, slug, name, to_json(created_at) #>> '{}' as created_at`,
        [a.slug, a.name ?? a.slug],
      );
      if (!rows.length) throw new AdminError('conflict', `tenant "${a.slug}" already exists`);
      return rows[0];
    },
  },
  'tenant.list': {
    args: z.object({}),
    run: (q: Queryable) =>
      q.query(`select id, slug, name, to_json(created_at) #>> '{}' as created_at from tenants order by slug`),
  },
  'user.create': {
    args: z.object({ email, password: z.string().max(1024) }),
    run: async (q: Queryable, a: { email: string; password: string }) => {
      try {
        return userJson(await createUser(q, { email: a.email, password: a.password, emailConfirm: true }));
      } catch (err) {
        if (err instanceof AuthError) throw new AdminError(err.status === 422 && err.code === 'email_exists' ? 'conflict' : 'invalid', err.message);
        throw err;
      }
    },
  },
  'author.grant': {
    args: z.object({ tenant: slug, email }),
    run: async (q: Queryable, a: { tenant: string; email: string }) => {
      const { tenantId, svcUserId } = await tenantAndUser(q, a.tenant, a.email);
      await q.query(
        `insert into memberships (tenant_id, user_id, role) values ($1, $2, 'author')
         on conflict (tenant_id, user_id) do update set role = 'author'`,
        [tenantId, svcUserId],
      );
      return { tenant: a.tenant, email: a.email.trim().toLowerCase(), svc_user_id: svcUserId, role: 'author' };
    },
  },
  'author.revoke': {
    args: z.object({ tenant: slug, email }),
    run: async (q: Queryable, a: { tenant: string; email: string }) => {
      const { tenantId, svcUserId } = await tenantAndUser(q, a.tenant, a.email);
      const rows = await q.query(
        `update memberships set role = 'learner' where tenant_id = $1 and user_id = $2 and role = 'author' returning user_id`,
        [tenantId, svcUserId],
      );
      if (!rows.length) throw new AdminError('not_found', `${a.email} is not an author of "${a.tenant}"`);
      return { tenant: a.tenant, email: a.email.trim().toLowerCase(), svc_user_id: svcUserId, role: 'learner' };
    },
  },
  'key.create': {
    args: z.object({ tenant: slug, name: z.string().min(1).max(200) }),
    run: async (q: Queryable, a: { tenant: string; name: string }) => createApiKey(q, await tenantId(q, a.tenant), a.name),
  },
  'key.list': {
    args: z.object({ tenant: slug }),
    run: async (q: Queryable, a: { tenant: string }) => listApiKeys(q, await tenantId(q, a.tenant)),
  },
  'key.revoke': {
    args: z.object({ prefix: z.string().min(1).max(64) }),
    run: async (q: Queryable, a: { prefix: string }) => {
      const info = await revokeApiKey(q, a.prefix.replace(/^svc_/, '').split('_')[0]!);
      if (!info) throw new AdminError('not_found', `no API key with prefix "${a.prefix}"`);
      return info;
    },
  },
  'idp.set': {
    args: z
      .object({
        tenant: slug,
        issuer: url,
        jwks_url: url.optional(),
        discovery: z.boolean().optional(),
        audience: z.string().min(1).max(500).optional(),
      })
      .refine((a) => Boolean(a.jwks_url) !== Boolean(a.discovery), 'give exactly one of --jwks-url or --discovery'),
    run: async (q: Queryable, a: { tenant: string; issuer: string; jwks_url?: string; discovery?: boolean; audience?: string }) => {
      const id = await tenantId(q, a.tenant);
      const discoveryUrl = a.discovery ? `${a.issuer.replace(/\/$/, '')}/.well-known/openid-configuration` : null;
      // An (issuer, subject) pair is one learner in every tenant, so every tenant naming an
      // issuer must verify it with the same keys: otherwise a tenant's admin could point a
      // known issuer at their own JWKS and sign in as another tenant's learners.
      await q.query('lock table tenant_idps in share row exclusive mode');
      const [clash] = await q.query<{ slug: string }>(
        `select t.slug from tenant_idps i join tenants t on t.id = i.tenant_id
          where i.issuer = $1 and i.tenant_id <> $2
            and (i.jwks_url is distinct from $3 or i.discovery_url is distinct from $4)`,
        [a.issuer, id, a.jwks_url ?? null, discoveryUrl],
      );
      if (clash) {
        throw new AdminError('conflict', `issuer ${a.issuer} is already set for tenant "${clash.slug}" with other keys; use the same --jwks-url or --discovery`);
      }
      const [row] = await q.query(
        `insert into tenant_idps (tenant_id, issuer, jwks_url, discovery_url, audience) values ($1, $2, $3, $4, $5)
         on conflict (tenant_id) do update set issuer = excluded.issuer, jwks_url = excluded.jwks_url,
           discovery_url = excluded.discovery_url, audience = excluded.audience, updated_at = now()
         returning issuer, jwks_url, discovery_url, audience`,
        [id, a.issuer, a.jwks_url ?? null, discoveryUrl, a.audience ?? null],
      );
      return { tenant: a.tenant, ...row };
    },
  },
} as const;

export type OpName = keyof typeof ops;
export const isOpName = (name: string): name is OpName => Object.hasOwn(ops, name);

async function tenantId(q: Queryable, tenantSlug: string): Promise<string> {
  const [row] = await q.query<{ id: string }>('select id from tenants where slug = $1', [tenantSlug]);
  if (!row) throw new AdminError('not_found', `no tenant "${tenantSlug}"`);
  return row.id;
}

async function tenantAndUser(q: Queryable, tenantSlug: string, userEmail: string) {
  const id = await tenantId(q, tenantSlug);
  const user = await findUserByEmail(q, userEmail);
  if (!user) throw new AdminError('not_found', `no user with email ${userEmail.trim().toLowerCase()}`);
  return { tenantId: id, svcUserId: user.svc_user_id };
}

/** Validate `args` for `op` and run it in one transaction. Throws `AdminError` on bad input. */
export async function runOp(db: Db, op: OpName, args: unknown): Promise<unknown> {
  const spec = ops[op];
  const parsed = spec.args.safeParse(args ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new AdminError('invalid', issue.path.length ? `${issue.path.join('.')}: ${issue.message}` : issue.message);
  }
  return db.transaction((tx) => (spec.run as (q: Queryable, a: unknown) => Promise<unknown>)(tx, parsed.data));
}
