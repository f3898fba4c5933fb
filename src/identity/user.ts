/**
 * The signed-in user's own endpoints (GoTrue internal/api/user.go, logout.go):
 *
 * - `GET /user` → the user object.
 * - `PUT /user` `{password?, data?}` → the updated user. `password`: the policy
 *   (422 `weak_password`), must differ from the current one (422 `same_password`), and every
 *   *other* session of the user ends (GoTrue `UpdatePassword(tx, sessionID)`). `data` is merged
 *   into `user_metadata` (a `null` value removes the key). `app_metadata` needs an admin
 *   (403 `not_admin`). Changing `email` or `phone` needs a confirmation message GoTrue would
 *   send by mail or SMS; this service sends none, so it is refused (422 `validation_failed`) —
 *   an admin changes it (`PUT /admin/users/{id}`, `svc user update`).
 * - `POST /logout?scope=global|local|others` → 204; `global` (default) ends every session of
 *   the user, `local` this one, `others` all but this one. Tokens of ended sessions are refused
 *   everywhere at once (`verifySession`).
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Deps } from '../deps.ts';
import { parseBody } from './body.ts';
import { AuthError } from './errors.ts';
import { requireSession } from './gateway.ts';
import { hashPassword, validatePassword, verifyPassword } from './passwords.ts';
import { endSessions } from './sessions.ts';
import { findUserById, metadataPatchParams, metadataPatchSql, normaliseEmail, userJson } from './users.ts';

const updateBody = z.object({
  email: z.string().max(1024).optional(),
  phone: z.string().max(64).optional(),
  password: z.string().max(10_000).optional(),
  data: z.record(z.string(), z.unknown()).nullable().optional(),
  app_metadata: z.record(z.string(), z.unknown()).nullable().optional(),
  nonce: z.string().max(64).optional(),
});

export function userRoutes(app: FastifyInstance, deps: Deps) {
  app.get('/user', async (req) => userJson((await requireSession(deps, req)).user));

  app.put('/user', async (req) => {
    const { user, claims } = await requireSession(deps, req);
    const body = parseBody(updateBody, req.body);
    if (body.app_metadata) throw new AuthError(403, 'not_admin', 'Updating app_metadata requires admin privileges');
    if (body.email !== undefined && body.email !== '' && normaliseEmail(body.email) !== user.email) {
      throw new AuthError(422, 'validation_failed', 'Changing the email address is done by an administrator (PUT /admin/users/{id})');
    }
    if (body.phone) throw new AuthError(422, 'validation_failed', 'Phone numbers are not supported');
    let encrypted: string | undefined;
    if (body.password !== undefined) {
      validatePassword(body.password);
      if (user.encrypted_password && (await verifyPassword(user.encrypted_password, body.password))) {
        throw new AuthError(422, 'same_password', 'New password should be different from the old password.');
      }
      encrypted = await hashPassword(body.password);
    }
    const updated = await deps.db.transaction(async (tx) => {
      if (encrypted !== undefined) {
        await tx.query('update auth.users set encrypted_password = $2, updated_at = now() where id = $1', [user.id, encrypted]);
        await tx.query('delete from auth.sessions where user_id = $1 and id <> $2', [user.id, claims.session_id]);
      }
      if (body.data) {
        await tx.query(`update auth.users set raw_user_meta_data = ${metadataPatchSql('raw_user_meta_data', 2)}, updated_at = now() where id = $1`, [
          user.id,
          ...metadataPatchParams(body.data),
        ]);
      }
      return findUserById(tx, user.id);
    });
    return userJson(updated!);
  });

  app.post('/logout', async (req, reply) => {
    const { claims } = await requireSession(deps, req);
    const scope = (req.query as Record<string, unknown>).scope ?? 'global';
    if (scope !== 'global' && scope !== 'local' && scope !== 'others') {
      throw new AuthError(400, 'validation_failed', `Unsupported logout scope ${JSON.stringify(String(scope).slice(0, 20))}`);
    }
    await endSessions(deps.db, claims, scope);
    return reply.code(204).send();
  });
}
