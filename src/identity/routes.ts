/**
 * `/auth/v1` — the Supabase-Auth-compatible subset (DESIGN §6): the plugin that assembles it.
 *
 * In order, for every request:
 *  1. CORS (`@fastify/cors`, origins from `identity.corsOrigins`); preflights end here;
 *  2. the gateway's `apikey` check (gateway.ts);
 *  3. route hooks: the /token rate limits (rate-limit.ts), the admin check (admin-routes.ts);
 *  4. JSON body (64 KiB at most; not JSON → 400 `bad_json`), then the handler.
 * `X-Supabase-Api-Version` is echoed; every error is rendered in GoTrue's shape for that
 * version (errors.ts), 5xx without internals; an unavailable database is 503 `unavailable` with
 * `Retry-After` (issue #11).
 *
 * Routes: token.ts (`POST /token`), user.ts (`GET|PUT /user`, `POST /logout`),
 * admin-routes.ts (`/admin/users…`), oauth/routes.ts (the OAuth 2.1 server for MCP hosts:
 * `/oauth/*`, `/user/oauth/grants`, `/.well-known/*`; its own error shapes).
 */
import cors from '@fastify/cors';
import type { FastifyInstance } from 'fastify';
import { isBadInput, isDbUnavailable, isUniqueViolation } from '../db/errors.ts';
import type { Deps } from '../deps.ts';
import { adminRoutes } from './admin-routes.ts';
import { AuthError, sendAuthError, unavailable } from './errors.ts';
import { apiKeyCheck } from './gateway.ts';
import { TokenError } from './jwt.ts';
import { setArgon2Cost } from './passwords.ts';
import { tokenRateLimits } from './rate-limit.ts';
import { tokenRoute } from './token.ts';
import { userRoutes } from './user.ts';
import { oauthRoutes } from './oauth/routes.ts';

/** Largest request body /auth/v1 reads (user metadata included); larger → 413. */
export const IDENTITY_BODY_LIMIT = 64 * 1024;

/** Headers a browser client may read (auth-js reads the version and error code; admin lists paginate). */
const EXPOSED_HEADERS = ['x-supabase-api-version', 'x-sb-error-code', 'x-total-count', 'link', 'retry-after', 'x-request-id'];

export default async function identityRoutes(app: FastifyInstance, deps: Deps) {
  const { config } = deps;
  setArgon2Cost(config.identity.argon2);

  await app.register(cors, {
    origin: config.identity.corsOrigins === '*' ? '*' : config.identity.corsOrigins,
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH'],
    exposedHeaders: EXPOSED_HEADERS,
    maxAge: 600,
  });

  app.addHook('onRoute', (route) => {
    route.bodyLimit ??= IDENTITY_BODY_LIMIT;
  });

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

  app.addHook('onRequest', apiKeyCheck(deps));
  app.addHook('onSend', async (req, reply) => {
    const v = req.headers['x-supabase-api-version'];
    if (typeof v === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(v)) reply.header('x-supabase-api-version', v);
  });
  app.setErrorHandler((err: Error & { statusCode?: number; code?: string }, req, reply) => {
    if (err instanceof AuthError) return sendAuthError(req, reply, err);
    if (isDbUnavailable(err)) {
      req.log.warn({ reason: String(err.cause) }, 'identity: database unavailable');
      return sendAuthError(req, reply, unavailable());
    }
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
      const message =
        err.statusCode === 413
          ? `Request body is larger than ${IDENTITY_BODY_LIMIT} bytes`
          : err.statusCode === 415
            ? 'Content-Type must be application/json'
            : err.message;
      return sendAuthError(req, reply, new AuthError(err.statusCode, 'validation_failed', message));
    }
    req.log.error({ err }, 'identity: unexpected error');
    return sendAuthError(req, reply, new AuthError(500, 'unexpected_failure', 'Unexpected failure, please check server logs for more information'));
  });

  // GoTrue answers unknown paths outside its JSON errors; here they keep the surface's shape.
  app.setNotFoundHandler((req, reply) =>
    sendAuthError(req, reply, new AuthError(404, 'validation_failed', `Unknown endpoint: ${req.method} ${req.url.split('?')[0]!.slice(0, 200)}`)),
  );

  const limits = await tokenRateLimits(app, config);
  tokenRoute(app, deps, limits);
  userRoutes(app, deps);
  await app.register(async (admin) => adminRoutes(admin, deps));
  await app.register(oauthRoutes, { deps, limits });
}
