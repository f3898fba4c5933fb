/**
 * `/auth/v1/admin/users[/{id}]` with the service-role key (GoTrue internal/api/admin.go), as
 * `supabase.auth.admin.*` calls them. The work is done by admin-users.ts, which `svc user …`
 * runs too.
 *
 * - `GET /admin/users?page&per_page[&filter]` → `{users, aud}` with `X-Total-Count` and a
 *   `Link` header (`rel="next"` while there is a next page, always `rel="last"`), the query
 *   keys in Go's sorted order, as auth-js parses them. `?limit&cursor` → keyset mode:
 *   `{users, aud, pagination: {next_cursor?, has_more}}` and `Link: rel="next"`.
 * - `POST /admin/users` `{email, password | password_hash, email_confirm?, app_metadata?,
 *   user_metadata?, ban_duration?}` → the user (200, as GoTrue).
 * - `GET /admin/users/{id}` → the user; `PUT` → the updated user; `DELETE` → `{}`.
 */
import { audit, auditContextHook } from '../audit/index.ts';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { Queryable } from '../db/index.ts';
import type { Deps } from '../deps.ts';
import { bannedUntil, deleteUser, getUser, listParams, listUsers, updateUser } from './admin-users.ts';
import { parseBody } from './body.ts';
import { AuthError } from './errors.ts';
import { requireServiceRole } from './gateway.ts';
import { createUser, userJson } from './users.ts';

const metadata = z.record(z.string(), z.unknown()).nullable().optional();

/** A user's fields in a create or update body, with `password` (and on create `password_hash`) as that body takes them. */
const userBody = <P extends z.ZodRawShape>(passwordFields: P) =>
  z.object({
    email: z.string().max(1024).optional(),
    phone: z.string().max(64).optional(),
    ...passwordFields,
    email_confirm: z.boolean().optional(),
    app_metadata: metadata,
    user_metadata: metadata,
    ban_duration: z.string().max(64).optional(),
    role: z.string().max(64).optional(),
  });

const createBody = userBody({ password: z.string().max(10_000).nullable().optional(), password_hash: z.string().max(512).optional() });
const updateBody = userBody({ password: z.string().max(10_000).optional() });

const deleteBody = z.object({ should_soft_delete: z.boolean().optional() });

/** Go's `url.Values.Encode`: keys sorted, values escaped. */
function goQuery(params: Record<string, string>): string {
  return Object.keys(params)
    .sort()
    .map((k) => `${encodeURIComponent(k)}=${encodeURIComponent(params[k]!)}`)
    .join('&');
}

function linkTarget(req: FastifyRequest, overrides: Record<string, string>): string {
  const url = new URL(req.url, 'http://x');
  const params: Record<string, string> = {};
  for (const [k, v] of url.searchParams) if (k !== 'apikey') params[k] = v;
  return `${url.pathname}?${goQuery({ ...params, ...overrides })}`;
}

export function adminRoutes(app: FastifyInstance, deps: Deps) {
  // Its acts are audited with the request id (src/audit).
  app.addHook('onRequest', auditContextHook);
  app.addHook('onRequest', async (req) => {
    if (req.method !== 'OPTIONS') requireServiceRole(deps, req);
  });

  app.get('/admin/users', async (req, reply) => {
    const params = listParams(req.query as Record<string, unknown>);
    const page = await deps.db.transaction((tx) => listUsers(tx, params));
    if (params.mode === 'page') {
      const lastPage = Math.max(1, Math.ceil(page.total! / params.perPage));
      const links: string[] = [];
      if (params.page < lastPage) links.push(`<${linkTarget(req, { page: String(params.page + 1), per_page: String(params.perPage) })}>; rel="next"`);
      links.push(`<${linkTarget(req, { page: String(lastPage), per_page: String(params.perPage) })}>; rel="last"`);
      reply.header('link', links.join(', ')).header('x-total-count', String(page.total));
      return { users: page.users, aud: page.aud };
    }
    if (page.pagination?.next_cursor) {
      const target = linkTarget(req, { cursor: page.pagination.next_cursor, limit: String(params.limit) });
      reply.header('link', `<${target}>; rel="next"`);
    }
    return page;
  });

  app.post('/admin/users', async (req) => {
    const body = parseBody(createBody, req.body);
    if (!body.email && !body.phone) throw new AuthError(400, 'validation_failed', 'Cannot create a user without either an email or phone');
    if (body.phone) throw new AuthError(400, 'validation_failed', 'Phone numbers are not supported');
    if (body.role !== undefined && body.role !== 'authenticated') {
      throw new AuthError(400, 'validation_failed', 'role must be "authenticated"');
    }
    if (typeof body.password === 'string' && body.password_hash) {
      throw new AuthError(400, 'validation_failed', 'Only a password or a password hash should be provided');
    }
    const banned = body.ban_duration ? bannedUntil(body.ban_duration, deps.now()) : undefined;
    const user = await deps.db.transaction(async (tx) => {
      const created = await createUser(tx, {
        email: body.email,
        // GoTrue generates a random password when none is given: here the user simply has none.
        password: body.password || undefined,
        passwordHash: body.password_hash || undefined,
        emailConfirm: body.email_confirm,
        appMetadata: body.app_metadata ?? undefined,
        userMetadata: body.user_metadata ?? undefined,
        bannedUntil: banned,
      });
      await userAct(tx, 'user.create', created.id);
      return created;
    });
    return userJson(user);
  });

  app.get<{ Params: { id: string } }>('/admin/users/:id', async (req) => userJson(await deps.db.transaction((tx) => getUser(tx, req.params.id))));

  app.put<{ Params: { id: string } }>('/admin/users/:id', async (req) => {
    const body = parseBody(updateBody, req.body);
    if (body.phone) throw new AuthError(400, 'validation_failed', 'Phone numbers are not supported');
    const { app_metadata, user_metadata, ...rest } = body;
    const user = await deps.db.transaction(async (tx) => {
      const updated = await updateUser(
        tx,
        req.params.id,
        { ...rest, app_metadata: app_metadata ?? undefined, user_metadata: user_metadata ?? undefined },
        deps.now(),
      );
      await userAct(tx, rest.ban_duration !== undefined ? 'user.ban' : 'user.update', updated.id);
      return updated;
    });
    return userJson(user);
  });

  app.delete<{ Params: { id: string } }>('/admin/users/:id', async (req) => {
    const body = parseBody(deleteBody, req.body);
    await deps.db.transaction(async (tx) => {
      const deleted = await deleteUser(tx, req.params.id, { softDelete: body.should_soft_delete });
      await userAct(tx, 'user.delete', deleted.id);
    });
    return {};
  });
}

/** The audit event of an admin API act on an account (issue #23): the service role, the auth user id. */
const userAct = (tx: Queryable, action: 'user.create' | 'user.update' | 'user.ban' | 'user.delete', authUserId: string) =>
  audit(tx, { tenantId: null, action, target: { type: 'auth_user', id: authUserId }, actor: { kind: 'service_role' } });
