/**
 * Who the caller is: whoami (identity and memberships) and list_tenants (the tenants the
 * caller belongs to, with the role in each). Read under RLS like every other tool.
 */
import { z } from 'zod';
import { SLUG_RE } from '../lib/ids.ts';
import { decodeCursor, DEFAULT_LIMIT, NEXT_CURSOR, page, pageInput } from './cursor.ts';
import { defineTool, READ, type AnyTool } from './tool.ts';

/** The caller's tenants by slug after $1 (null: from the start), at most $2 rows (null: all). */
const TENANTS_PAGE_SQL = `
  select t.id, t.slug, t.name, m.role
    from memberships m join tenants t on t.id = m.tenant_id
   where m.user_id = public.current_itera_user_id()
     and ($1::text is null or t.slug > $1::text)
   order by t.slug
   limit $2`;

const Role = z.enum(['author', 'learner']).describe('author (may write content) or learner (may read it)');

const whoami = defineTool({
  name: 'whoami',
  title: 'Who am I',
  description: 'Your identity as this server sees it: user ids, email, and the tenants you belong to with your role in each.',
  input: z.strictObject({}),
  output: z.object({
    user_id: z.string().describe('Identity-platform user id (the token subject)'),
    email: z.string().nullable().describe('Email address'),
    svc_user_id: z.string().nullable().describe('Internal user id (svc_user_id in results)'),
    memberships: z
      .array(
        z.object({
          tenant: z.string().describe('Tenant slug'),
          tenant_id: z.string().describe('Tenant id'),
          role: Role,
        }),
      )
      .describe('Your tenants and roles'),
  }),
  annotations: READ,
  run: async (_args, tx, ctx) => {
    const [me] = await tx.query<{ svc_user_id: string | null }>('select public.current_itera_user_id() as svc_user_id');
    const rows = await tx.query<{ id: string; slug: string; role: string }>(TENANTS_PAGE_SQL, [null, null]);
    const { user } = ctx.session;
    return {
      structured: {
        user_id: user.id,
        email: user.email,
        svc_user_id: me?.svc_user_id ?? null,
        memberships: rows.map((r) => ({ tenant: r.slug, tenant_id: r.id, role: r.role })),
      },
      summary: `${user.email ?? user.id}: ${rows.map((r) => `${r.role} of ${r.slug}`).join(', ') || 'no memberships'}`,
    };
  },
});

const listTenants = defineTool({
  name: 'list_tenants',
  title: 'List my tenants',
  description:
    'The tenants you are a member of, by slug, with your role in each (authors write content; learners read it). ' +
    'Pages: pass `next_cursor` back as `cursor`; it is null on the last page.',
  input: z.strictObject({
    ...pageInput(),
  }),
  output: z.object({
    tenants: z
      .array(
        z.object({
          id: z.string().describe('Tenant id'),
          slug: z.string().describe('Tenant slug (used as `tenant` by other tools)'),
          name: z.string().describe('Tenant name'),
          role: Role,
        }),
      )
      .describe('This page of your tenants, by slug'),
    ...NEXT_CURSOR,
  }),
  annotations: READ,
  run: async ({ cursor, limit = DEFAULT_LIMIT }, tx) => {
    const after = cursor === undefined ? null : decodeCursor('list_tenants', cursor, [SLUG_RE])[0]!;
    const rows = await tx.query<{ id: string; slug: string; name: string; role: string }>(TENANTS_PAGE_SQL, [after, limit + 1]);
    const { items, next_cursor } = page(rows, limit, (t) => [t.slug]);
    return { structured: { tenants: items, next_cursor }, summary: `${items.length} tenant(s)${next_cursor ? ', more on the next page' : ''}` };
  },
});

export const whoamiTools: AnyTool[] = [whoami, listTenants];
