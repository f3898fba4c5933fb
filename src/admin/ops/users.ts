/**
 * `svc user create|list|get|update|ban|delete`: accounts, through the code path of
 * `/auth/v1/admin/users` (src/identity/admin-users.ts). Registered in ../ops.ts.
 * Identity's `AuthError`s become `AdminError`s (404 → not_found, 422 email_exists → conflict).
 */
import { z } from 'zod';
import type { Queryable } from '../../db/index.ts';
import {
  AuthError,
  createUser,
  deleteUser,
  getUserByIdOrEmail,
  listParams,
  listUsers,
  type UserRow,
  type UserUpdate,
  updateUser,
  userJson,
} from '../../identity/index.ts';
import { eraseEveryTenant } from '../learner-data.ts';
import { AdminError, email } from './shared.ts';

export const userOps = {
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
  // user list|get|update|delete|ban: the code path of /auth/v1/admin/users (identity/admin-users.ts).
  'user.list': {
    args: z.object({
      page: z.coerce.number().int().min(1).optional(),
      per_page: z.coerce.number().int().min(1).optional(),
      filter: z.string().max(320).optional(),
    }),
    run: (q: Queryable, a: { page?: number; per_page?: number; filter?: string }) =>
      viaIdentity(() => listUsers(q, listParams({ page: a.page?.toString(), per_page: a.per_page?.toString(), filter: a.filter }))),
  },
  'user.get': {
    args: z.object({ user: z.string().min(1).max(320) }),
    run: (q: Queryable, a: { user: string }) => viaIdentity(async () => userJson(await getUserByIdOrEmail(q, a.user))),
  },
  'user.update': {
    args: z.object({
      user: z.string().min(1).max(320),
      email: z.string().max(320).optional(),
      password: z.string().max(1024).optional(),
      email_confirm: z.boolean().optional(),
      user_metadata: z.record(z.string(), z.unknown()).optional(),
      app_metadata: z.record(z.string(), z.unknown()).optional(),
      ban_duration: z.string().max(64).optional(),
    }),
    run: (q: Queryable, { user, ...update }: { user: string } & UserUpdate) =>
      viaIdentity(async () => userJson(await updateUser(q, (await getUserByIdOrEmail(q, user)).id, update, new Date()))),
  },
  'user.ban': {
    args: z.object({ user: z.string().min(1).max(320), duration: z.string().min(1).max(64) }),
    run: (q: Queryable, a: { user: string; duration: string }) =>
      viaIdentity(async () => userJson(await updateUser(q, (await getUserByIdOrEmail(q, a.user)).id, { ban_duration: a.duration }, new Date()))),
  },
  'user.delete': {
    args: z.object({ user: z.string().min(1).max(320) }),
    // Issue #23: the account's data in every tenant goes through the learner-data registry first.
    run: (q: Queryable, a: { user: string }) =>
      viaIdentity(async () => {
        const user = await accountOf(q, a.user);
        const tenants = await eraseEveryTenant(q, user.svc_user_id, user.id);
        return { ...userJson(await deleteUser(q, user.id)), erased_tenants: tenants };
      }),
  },
} as const;

/** An account by auth user id, email or svc_user_id; AuthError 404 when none. */
async function accountOf(q: Queryable, idOrEmail: string): Promise<UserRow> {
  try {
    return await getUserByIdOrEmail(q, idOrEmail);
  } catch (err) {
    if (!(err instanceof AuthError) || err.status !== 404 || !/^[0-9a-f-]{36}$/i.test(idOrEmail)) throw err;
    const [row] = await q.query<{ auth_user_id: string }>('select auth_user_id from users where id = $1', [idOrEmail]);
    if (!row) throw err;
    return getUserByIdOrEmail(q, row.auth_user_id);
  }
}

/** Run an identity admin function; its `AuthError`s become `AdminError`s (404 → not_found, 422 email_exists → conflict). */
async function viaIdentity<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (!(err instanceof AuthError)) throw err;
    throw new AdminError(err.status === 404 ? 'not_found' : err.code === 'email_exists' ? 'conflict' : 'invalid', err.message);
  }
}
