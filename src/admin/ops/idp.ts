/**
 * `svc idp set|refresh`: a tenant's identity provider — the issuer whose tokens sign learners in
 * to the embed, and the keys that verify them (src/embed/idp.ts). Registered in ../ops.ts.
 */
import { z } from 'zod';
import type { Queryable } from '../../db/index.ts';
import { AdminError, slug, tenantId, url } from './shared.ts';

export const idpOps = {
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
        throw new AdminError(
          'conflict',
          `issuer ${a.issuer} is already set for tenant "${clash.slug}" with other keys; use the same --jwks-url or --discovery`,
        );
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
  'idp.refresh': {
    args: z.object({ tenant: slug }),
    run: async (q: Queryable, a: { tenant: string }) => {
      // Every process keys its cached key set by this version (src/embed/idp.ts): the next token
      // of the tenant is checked against a freshly fetched set, everywhere.
      const [row] = await q.query<{ issuer: string; keys_version: number }>(
        `update tenant_idps set keys_version = keys_version + 1, updated_at = now()
          where tenant_id = $1 returning issuer, keys_version`,
        [await tenantId(q, a.tenant)],
      );
      if (!row) throw new AdminError('not_found', `"${a.tenant}" has no identity provider (svc idp set)`);
      return { tenant: a.tenant, ...row };
    },
  },
} as const;
