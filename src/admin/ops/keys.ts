/** `svc key create|list|revoke`: the results API's keys of a tenant (src/results/api-keys.ts). Registered in ../ops.ts. */
import { z } from 'zod';
import type { Queryable } from '../../db/index.ts';
import { createApiKey, listApiKeys, revokeApiKey } from '../../results/index.ts';
import { AdminError, slug, tenantId } from './shared.ts';

export const keyOps = {
  'key.create': {
    args: z.object({ tenant: slug, name: z.string().min(1).max(200), rate_limit: z.number().int().min(1).max(1_000_000).optional() }),
    run: async (q: Queryable, a: { tenant: string; name: string; rate_limit?: number }) =>
      createApiKey(q, await tenantId(q, a.tenant), a.name, { rateLimit: a.rate_limit }),
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
} as const;
