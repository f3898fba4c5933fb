/** `svc embed origins add|remove|list`: who may frame a tenant's player (src/embed/origins.ts). Registered in ../ops.ts. */
import { z } from 'zod';
import type { Queryable } from '../../db/index.ts';
import { addOrigin, frameAncestors, listOrigins, removeOrigin } from '../../embed/index.ts';
import { AdminError, originEntry, slug, tenantId } from './shared.ts';

export const embedOps = {
  'embed.origins.add': {
    args: z.object({ tenant: slug, origin: z.string().min(1).max(300) }),
    run: async (q: Queryable, a: { tenant: string; origin: string }) => {
      const id = await tenantId(q, a.tenant);
      const origin = originEntry(a.origin);
      const added = await addOrigin(q, id, origin);
      return { tenant: a.tenant, origin, added, origins: await listOrigins(q, id) };
    },
  },
  'embed.origins.remove': {
    args: z.object({ tenant: slug, origin: z.string().min(1).max(300) }),
    run: async (q: Queryable, a: { tenant: string; origin: string }) => {
      const id = await tenantId(q, a.tenant);
      const origin = originEntry(a.origin);
      if (!(await removeOrigin(q, id, origin))) throw new AdminError('not_found', `${origin} is not an allowed origin of "${a.tenant}"`);
      return { tenant: a.tenant, origin, origins: await listOrigins(q, id) };
    },
  },
  'embed.origins.list': {
    args: z.object({ tenant: slug }),
    run: async (q: Queryable, a: { tenant: string }) => {
      const origins = await listOrigins(q, await tenantId(q, a.tenant));
      return { tenant: a.tenant, origins, frame_ancestors: frameAncestors(origins) };
    },
  },
} as const;
