/**
 * `/auth/v1` — the Supabase-Auth-compatible subset (DESIGN §6): password and refresh_token
 * grants, the current user, logout, and admin user creation. Every route first passes the
 * gateway check (the `apikey` header must be the anon or the service-role key, as Supabase's
 * API gateway does), then follows GoTrue's status codes and error codes.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { isBadInput, isUniqueViolation } from '../db/errors.ts';
import type { Deps } from '../deps.ts';
import { AuthError, sendAuthError } from './errors.ts';
import { TokenError } from './jwt.ts';
import { dummyPasswordHash, hashPassword, needsRehash, verifyPassword } from './passwords.ts';
import { endSessions, refreshGrant, startSession, verifySession, type VerifiedSession } from './sessions.ts';
import { createUser, findUserByEmail, userJson } from './users.ts';

/** Constant-time string comparison (lengths may leak; the contents do not). */
export function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

const bearer = (req: FastifyRequest): string | undefined => {
  const h = req.headers.authorization;
  const m = typeof h === 'string' ? /^Bearer\s+(\S+)$/i.exec(h) : null;
  return m?.[1];
};

const passwordBody = z.object({ email: z.string().max(320), password: z.string().max(10_000) });
const refreshBody = z.object({ refresh_token: z.string().max(1024) });
const adminCreateBody = z
  .object({
    email: z.string().max(320).optional(),
    password: z.string().max(10_000).optional(),
    password_hash: z.string().max(200).optional(),
    email_confirm: z.boolean().optional(),
    app_metadata: z.record(z.string(), z.unknown()).optional(),
    user_metadata: z.record(z.string(), z.unknown()).optional(),
  })
  .refine((b) => !(b.password && b.password_hash), 'password and password_hash are mutually exclusive');

function parseBody<T>(schema: z.ZodType<T>, body: unknown): T {
  const parsed = schema.safeParse(body ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const field = issue.path.join('.');
    throw new AuthError(400, 'validation_failed', field ? `${field}: ${issue.message}` : issue.message);
  }
  return parsed.data;
}

export default async function identityRoutes(app: FastifyInstance, deps: Deps) {
  const { config } = deps;

  // auth-js sends `content-type: application/json` with an empty body (logout): accept it.
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    if (body === '') return done(null, undefined);
    try {
      done(null, JSON.parse(body as string));
    } catch {
      done(new AuthError(400, 'bad_json', 'Could not parse request body as JSON'), undefined);
    }
  });

  // Gateway: an `apikey` header (or `?apikey=`) that is the anon or service-role key.
  app.addHook('onRequest', async (req, reply) => {
    const header = req.headers.apikey;
    const key = typeof header === 'string' ? header : (req.query as Record<string, string> | undefined)?.apikey;
    if (!key) return reply.code(401).send({ message: 'No API key found in request' });
    if (!safeEqual(key, config.anonKey) && !safeEqual(key, config.serviceRoleKey)) {
      return reply.code(401).send({ message: 'Invalid API key' });
    }
  });
  app.addHook('onSend', async (req, reply) => {
    const v = req.headers['x-supabase-api-version'];
    if (typeof v === 'string') reply.header('x-supabase-api-version', v);
  });
  app.setErrorHandler((err: Error & { statusCode?: number }, req, reply) => {
    if (err instanceof AuthError) return sendAuthError(req, reply, err);
    if (err instanceof TokenError) {
      return sendAuthError(req, reply, new AuthError(403, 'bad_jwt', `invalid JWT: unable to parse or verify signature, ${err.message}`));
    }
    if (isBadInput(err)) {
      return sendAuthError(req, reply, new AuthError(400, 'validation_failed', 'The request holds a value that cannot be stored'));
    }
    if (isUniqueViolation(err)) {
      return sendAuthError(req, reply, new AuthError(422, 'email_exists', 'A user with this email address has already been registered'));
    }
    if (err.statusCode && err.statusCode < 500) {
      const code = err.statusCode === 413 ? 'request_too_large' : 'validation_failed';
      return sendAuthError(req, reply, new AuthError(err.statusCode, code, err.message));
    }
    req.log.error({ err }, 'identity: unexpected error');
    return sendAuthError(req, reply, new AuthError(500, 'unexpected_failure', 'Unexpected failure'));
  });

  const requireSession = async (req: FastifyRequest): Promise<VerifiedSession> => {
    const token = bearer(req);
    if (!token) throw new AuthError(401, 'no_authorization', 'This endpoint requires a valid Bearer token');
    return verifySession(deps, token);
  };
  const requireServiceRole = (req: FastifyRequest) => {
    const token = bearer(req) ?? (req.headers.apikey as string);
    if (!token || !safeEqual(token, config.serviceRoleKey)) {
      throw new AuthError(403, 'not_admin', 'User not allowed');
    }
  };

  app.post('/token', async (req: FastifyRequest, reply: FastifyReply) => {
    const grantType = (req.query as Record<string, unknown>).grant_type;
    if (grantType === 'password') {
      const body = parseBody(passwordBody, req.body);
      const user = await findUserByEmail(deps.db, body.email);
      // Same work and same message for an unknown email and a wrong password (GoTrue).
      const stored = user?.encrypted_password ?? (await dummyPasswordHash());
      const ok = body.password.length <= 1024 && (await verifyPassword(stored, body.password));
      if (!user || !user.encrypted_password || !ok) {
        throw new AuthError(400, 'invalid_credentials', 'Invalid login credentials');
      }
      if (user.banned_until && new Date(user.banned_until) > deps.now()) {
        throw new AuthError(400, 'user_banned', 'User is banned');
      }
      const tokens = await deps.db.transaction(async (tx) => {
        if (needsRehash(user.encrypted_password!)) {
          await tx.query('update auth.users set encrypted_password = $2 where id = $1', [user.id, await hashPassword(body.password)]);
        }
        return startSession(tx, deps, user, 'password');
      });
      return reply.send(tokens);
    }
    if (grantType === 'refresh_token') {
      const body = parseBody(refreshBody, req.body);
      return reply.send(await refreshGrant(deps, body.refresh_token));
    }
    throw new AuthError(400, 'validation_failed', 'unsupported_grant_type');
  });

  app.get('/user', async (req) => userJson((await requireSession(req)).user));

  app.post('/logout', async (req, reply) => {
    const { claims } = await requireSession(req);
    const scope = (req.query as Record<string, string>).scope ?? 'global';
    if (scope !== 'global' && scope !== 'local' && scope !== 'others') {
      throw new AuthError(400, 'validation_failed', 'Unsupported logout scope "' + String(scope).slice(0, 20) + '"');
    }
    await endSessions(deps.db, claims, scope);
    return reply.code(204).send();
  });

  app.post('/admin/users', async (req, reply) => {
    requireServiceRole(req);
    const body = parseBody(adminCreateBody, req.body);
    const user = await deps.db.transaction((tx) =>
      createUser(tx, {
        email: body.email,
        password: body.password,
        passwordHash: body.password_hash,
        emailConfirm: body.email_confirm,
        appMetadata: body.app_metadata,
        userMetadata: body.user_metadata,
      }),
    );
    return reply.code(200).send(userJson(user));
  });
}
