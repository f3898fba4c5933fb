/** `svc tenant create|list`: the tenants (DESIGN §6). Registered in ../ops.ts. */
import { z } from 'zod';
import type { Queryable } from '../../db/index.ts';
import { AdminError, slug } from './shared.ts';

export const tenantOps = {
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
    run: (q: Queryable) => q.query(`select id, slug, name, to_json(created_at) #>> '{}' as created_at from tenants order by slug`),
  },
} as const;
