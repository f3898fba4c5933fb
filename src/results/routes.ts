/**
 * The Results API (DESIGN §6), read-only, mounted by app.ts at `/v1`:
 *
 *   GET /v1/health                   {status: "ok", service, version}       no credential
 *   GET /v1/activity-results         {data: ActivityResult[], next_cursor, has_more}
 *   GET /v1/activity-results/:id     ActivityResult
 *   GET /v1/progress                 {data: Progress[], next_cursor, has_more}
 *   GET /v1/artifacts                {data: Artifact[], next_cursor, has_more}
 *   GET /v1/artifacts/:id            Artifact
 *
 * Lists take `limit` (1–200, default 50), `cursor` (a previous `next_cursor`) and the filters
 * of params.ts; `next_cursor` is null and `has_more` false on the last page. Shapes are built
 * in SQL (queries.ts). Errors: `{"error": {"code", "message"}}` (errors.ts), including 404
 * `not_found` for unknown paths under /v1 and for ids the key's tenant does not own.
 *
 * Encapsulation: this plugin's error handler, not-found handler and URL-length hook apply to
 * /v1 paths served here; the API-key hook lives in a child context holding only the data
 * routes, so neither /v1/health nor the sibling /v1/embed plugin (registered separately by
 * app.ts, with its own hooks and handlers) is touched by it.
 *
 * Every data handler reads: authenticate (hook) → validate → authorize (RLS: asResultsTenant
 * with the key's tenant) → query (one SQL statement) → respond (JSON text from PostgreSQL).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { asResultsTenant } from '../db/index.ts';
import type { Deps } from '../deps.ts';
import { SERVICE_NAME, VERSION } from '../version.ts';
import { apiKeyHook, tenantOf } from './auth.ts';
import { cursorCodec, type Endpoint } from './cursor.ts';
import { ApiError, apiErrorHandler } from '../http/api-errors.ts';
import { parseIdParams, parseListQuery } from './params.ts';
import { findOne, listPage } from './queries.ts';

/** Longest request target (path + query) accepted, in characters; longer → 400. */
export const MAX_URL_LENGTH = 4096;

const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * The Fastify plugin of the Results API. `deps` are the options app.ts registers it with
 * (`{prefix: '/v1', ...deps}`): the database, and the config whose JWT secret keys the cursors.
 */
export default async function resultsRoutes(app: FastifyInstance, deps: Deps) {
  const cursors = cursorCodec(deps.config.jwtSecret);

  app.setErrorHandler(apiErrorHandler('results'));
  app.setNotFoundHandler(async (req) => {
    const path = (req.raw.url ?? req.url).split('?')[0]!.slice(0, 200);
    throw new ApiError('not_found', `no such endpoint: ${req.method} ${path}`);
  });
  app.addHook('onRequest', async (req) => {
    if ((req.raw.url ?? req.url).length > MAX_URL_LENGTH) {
      throw new ApiError('invalid_request', `url: the request URL is longer than ${MAX_URL_LENGTH} characters`);
    }
  });

  app.get('/health', async () => ({ status: 'ok', service: SERVICE_NAME, version: VERSION }));

  await app.register(async (api: FastifyInstance) => {
    api.addHook('onRequest', apiKeyHook(deps.db));

    const list = (endpoint: Endpoint) => async (req: FastifyRequest, reply: FastifyReply) => {
      const tenantId = tenantOf(req);
      const { limit, cursor, filters } = parseListQuery(req, endpoint);
      const scope = { tenantId, endpoint, filters };
      const after = cursor === undefined ? undefined : cursors.decode(scope, cursor);
      const page = await asResultsTenant(deps.db, tenantId, (tx) => listPage(tx, endpoint, tenantId, { limit, filters, after }));
      const next = page.last ? cursors.encode(scope, page.last) : null;
      return reply
        .type(JSON_TYPE)
        .header('cache-control', 'private, no-store')
        .send(`{"data":${page.data},"next_cursor":${JSON.stringify(next)},"has_more":${page.hasMore}}`);
    };

    const one = (endpoint: 'activity-results' | 'artifacts', noun: string) => async (req: FastifyRequest, reply: FastifyReply) => {
      const tenantId = tenantOf(req);
      const id = parseIdParams(req);
      const body = await asResultsTenant(deps.db, tenantId, (tx) => findOne(tx, endpoint, tenantId, id));
      if (body === undefined) throw new ApiError('not_found', `no ${noun} with id ${id}`);
      return reply.type(JSON_TYPE).header('cache-control', 'private, no-store').send(body);
    };

    api.get('/activity-results', list('activity-results'));
    api.get('/activity-results/:id', one('activity-results', 'activity result'));
    api.get('/progress', list('progress'));
    api.get('/artifacts', list('artifacts'));
    api.get('/artifacts/:id', one('artifacts', 'artifact'));
  });
}
