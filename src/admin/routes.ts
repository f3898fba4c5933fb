/**
 * `POST /admin/v1/ops/:op` — the running server's door for the `svc` CLI in embedded mode,
 * where the PGlite folder can be open in one process only. Authorized by the service-role key
 * (`Authorization: Bearer …`, compared in constant time). Body: the op's arguments as JSON (an
 * op's `base_url`, when not sent, is this server's BASE_URL: `withBaseUrl`).
 * Answers 200 `{data}` or `{error: {code, message}}` with 400/401/404/409 (503 `unavailable`
 * while the database cannot be reached).
 */
import type { FastifyInstance } from 'fastify';
import { DB_RETRY_AFTER_SECONDS, isBadInput, isDbUnavailable, isUniqueViolation } from '../db/errors.ts';
import type { Deps } from '../deps.ts';
import { safeEqual } from '../lib/safe-equal.ts';
import { AdminError, isOpName, runOp, withBaseUrl } from './ops.ts';
import { bearerToken } from '../http/bearer.ts';
import { serviceRoleHook } from '../audit/index.ts';

const STATUS = { invalid: 400, not_found: 404, conflict: 409 } as const;

export default async function adminRoutes(app: FastifyInstance, deps: Deps) {
  app.setErrorHandler((err: Error & { statusCode?: number }, req, reply) => {
    if (err instanceof AdminError) return reply.code(STATUS[err.code]).send({ error: { code: err.code, message: err.message } });
    if (isBadInput(err) || isUniqueViolation(err)) {
      const code = isUniqueViolation(err) ? 'conflict' : 'invalid';
      return reply
        .code(STATUS[code])
        .send({ error: { code, message: code === 'conflict' ? 'already exists' : 'a value cannot be stored (for example a NUL character)' } });
    }
    if (err.statusCode && err.statusCode < 500) {
      return reply.code(err.statusCode).send({ error: { code: 'invalid', message: err.message } });
    }
    if (isDbUnavailable(err)) {
      return reply
        .code(503)
        .header('retry-after', String(DB_RETRY_AFTER_SECONDS))
        .send({ error: { code: 'unavailable', message: 'the database is unavailable; retry in a few seconds' } });
    }
    req.log.error({ err }, 'admin: unexpected error');
    return reply.code(500).send({ error: { code: 'internal_error', message: 'internal error' } });
  });

  // Acts through this door are the service role's in the audit log (src/audit).
  app.addHook('onRequest', serviceRoleHook);
  app.post<{ Params: { op: string } }>('/ops/:op', async (req, reply) => {
    const token = bearerToken(req.headers.authorization);
    if (!token || !safeEqual(token, deps.config.serviceRoleKey)) {
      return reply.code(401).send({ error: { code: 'unauthorized', message: 'the service-role key is required' } });
    }
    if (!isOpName(req.params.op)) throw new AdminError('not_found', `unknown operation "${req.params.op}"`);
    return { data: await runOp(deps.db, req.params.op, withBaseUrl(req.params.op, req.body, deps.config.baseUrl)) };
  });
}
