/**
 * The LTI 1.3 tool's routes, mounted at `/lti/v1` (issue #22; README.md):
 *
 *   GET /jwks   the tool's public keys (JWK set, RFC 7517): the current key and the keys retired
 *               less than RETIRED_KEY_SECONDS ago (keys.ts). Public, cacheable for 5 minutes, any
 *               origin may read it (platforms fetch it server-side; CORP cross-origin for tools
 *               that read it from a browser).
 *
 * Errors are the `/v1` error body (src/http/api-errors.ts) for the machine endpoints.
 */
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../deps.ts';
import { ApiError, apiErrorHandler, sendApiError } from '../http/api-errors.ts';
import { publicKeySet } from './keys.ts';

export default async function ltiRoutes(app: FastifyInstance, deps: Deps) {
  app.addHook('onSend', async (_req, reply) => {
    reply.header('x-content-type-options', 'nosniff');
    reply.header('referrer-policy', 'no-referrer');
  });
  app.setErrorHandler(apiErrorHandler('lti'));
  app.setNotFoundHandler((req, reply) => sendApiError(reply, new ApiError('not_found', `no route ${req.method} ${req.url.split('?')[0]}`)));

  app.get('/jwks', async (_req, reply) =>
    reply
      .type('application/json; charset=utf-8')
      .header('cache-control', 'public, max-age=300')
      .header('access-control-allow-origin', '*')
      .header('cross-origin-resource-policy', 'cross-origin')
      .send(await deps.db.transaction((tx) => publicKeySet(tx))),
  );
}
