/**
 * The Results API (DESIGN §6, issue #4), read-only, mounted by app.ts at `/v1`:
 *
 *   GET /v1/health                   {status: "ok", service, version}       no credential
 *   GET /v1/openapi.json             the OpenAPI 3.1 document               no credential
 *   GET /v1/activity-results         {data: ActivityResult[], next_cursor, has_more}
 *   GET /v1/activity-results/:id     ActivityResult
 *   GET /v1/progress                 {data: Progress[], next_cursor, has_more}
 *   GET /v1/artifacts                {data: Artifact[], next_cursor, has_more}
 *   GET /v1/artifacts/:id            Artifact
 *   GET /v1/learners                 {data: Learner[], …}  (svc_user_id ↔ IdP subjects, issue #14)
 *   GET /v1/learners/:id             Learner
 *   GET /v1/programs                 {data: Program[], …}  (a listing: no updated_since)
 *   GET /v1/programs/:id             ProgramOutline (units → lessons → activities; include=spec)
 *   GET /v1/deletions                {data: Deletion[], …}  tombstones, always the feed
 *
 * Feed pages (`updated_since`, and every /v1/deletions page) carry the watermark: body
 * `consistent_through` and header `Svc-Consistent-Through` (queries.ts). Other methods on these
 * paths are 405 `method_not_allowed` with `Allow: GET, HEAD`.
 *
 * Lists take `limit` (1–200, default 50), `cursor` (a previous `next_cursor`), `updated_since`
 * (incremental sync, ordered by updated_at) and the filters of schemas.ts; `next_cursor` is
 * null and `has_more` false on the last page, otherwise a `Link: <…>; rel="next"` header points
 * at the next page. Shapes are built in SQL (queries.ts). Errors: `{"error": {"code",
 * "message", "request_id"}}` (src/http/api-errors.ts), including 404 `not_found` for unknown
 * paths under /v1 and for ids the key's tenant does not own.
 *
 * Encapsulation: this plugin's error handler, not-found handler, validator and URL-length hook
 * apply to /v1 paths served here; the API-key hook and the rate limiter live in a child context
 * holding only the data routes, so neither /v1/health nor the sibling /v1/embed plugin
 * (registered separately by app.ts, with its own hooks and handlers) is touched by them.
 *
 * Every data request reads: authenticate (hook, cached key) → rate-limit (hook) → validate
 * (route schema) → authorize (RLS: the statement runs as svc_results with the key's tenant)
 * → query (one SQL statement, one round trip, cached plan) → respond (JSON text from PostgreSQL).
 * With a read replica (`deps.readDb`, DATABASE_READ_URL) the query runs there, or on the primary
 * when the replica is behind (src/db/replica.ts); this plugin then publishes the primary's sync
 * horizon for it (replica-horizon.ts).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest, FastifySchema, HookHandlerDoneFunction } from 'fastify';
import type { Db } from '../db/index.ts';
import type { Deps } from '../deps.ts';
import { ApiError, apiErrorHandler } from '../http/api-errors.ts';
import { SERVICE_NAME, VERSION } from '../version.ts';
import { apiKeyHook, tenantOf } from './auth.ts';
import { cursorCodec, type CursorCodec, type Endpoint } from './cursor.ts';
import { ApiKeyCache } from './key-cache.ts';
import { registerOpenApi } from './openapi.ts';
import { strictValidatorCompiler } from './params.ts';
import { findOne, installStatements, listPage, ordersOf, type ListOptions, type One, type Page } from './queries.ts';
import { registerRateLimit } from './rate-limit.ts';
import { publishHorizon } from './replica-horizon.ts';
import { registerExports } from './exports/routes.ts';
import { fromReplica } from '../db/replica.ts';
import {
  ActivityResult,
  Artifact,
  DEFAULT_LIMIT,
  ErrorBody,
  Health,
  ID_PARAMS,
  Learner,
  LIST_QUERY,
  LIST_RESPONSE,
  NO_QUERY,
  PROGRAM_QUERY,
  ProgramOutline,
  type ListQuery,
} from './schemas.ts';

/** Longest request target (path + query) accepted, in characters; longer → 400. */
export const MAX_URL_LENGTH = 4096;

const JSON_TYPE = 'application/json; charset=utf-8';

/**
 * A JSON body of `parts` (JSON text) as one Buffer, encoded once. Sent as a string, the page
 * (~26 KiB for 50 results, PostgreSQL's text) would be concatenated with the other parts and then
 * with the response head, and flattened again before encoding: two more copies of the page on the
 * young heap per request, which the scavenger then walks (bench/README.md "Results API").
 */
function jsonBuffer(...parts: string[]): Buffer {
  let length = 0;
  for (const part of parts) length += Buffer.byteLength(part);
  const body = Buffer.allocUnsafe(length);
  let offset = 0;
  for (const part of parts) offset += body.write(part, offset);
  return body;
}

/** The watermark header of feed pages (see `consistent_through`). */
export const WATERMARK_HEADER = 'svc-consistent-through';

/** A documented JSON answer. */
const json = (description: string, schema: unknown) => ({ description, content: { 'application/json': { schema } } });

/** Error answers every data route may give, for the document. */
const ERRORS = {
  400: json('`invalid_request`: a parameter is unknown, repeated or malformed (the message names it), or the cursor is not ours.', ErrorBody),
  401: json('`unauthorized`: no API key, or a malformed, unknown or revoked one.', ErrorBody),
  404: json('`not_found`: no such object in the key’s tenant (also for another tenant’s id), or no such path.', ErrorBody),
  429: json('`rate_limited`: the key’s rate limit is spent, or (exports) an export of this key is running; retry after `Retry-After` seconds.', ErrorBody),
  500: json('`internal_error`: something failed on our side; quote `request_id`.', ErrorBody),
  503: json(
    '`unavailable`: the service cannot reach its database right now (or, exports, runs its most at once); retry after `Retry-After` seconds.',
    ErrorBody,
  ),
};
const SECURITY: { [scheme: string]: string[] }[] = [{ bearerKey: [] }, { headerKey: [] }];

const LIST_DOCS: Record<Endpoint, { summary: string; description: string }> = {
  'activity-results': {
    summary: 'List activity results',
    description: 'One result per learner and activity, with its status, best score and artifacts.',
  },
  progress: {
    summary: 'List progress',
    description: 'One row per learner and program: activities passed, activities in the program, percent.',
  },
  artifacts: {
    summary: 'List artifacts',
    description: 'Submitted work with the grader’s verification.',
  },
  learners: {
    summary: 'List learners',
    description: 'The tenant’s learners: svc_user_id with the identity-provider subjects and verified email, to join results to your users.',
  },
  programs: {
    summary: 'List programs',
    description: 'The tenant’s programs, in created order (a listing; watch /v1/deletions for removed content).',
  },
  deletions: {
    summary: 'List deletions (tombstones)',
    description:
      'Records removed from the tenant — results, artifacts, progress rows, learners, content — ordered by (`deleted_at`, `id`): ' +
      'always a feed, from `updated_since` (or the beginning). Drop what is listed here.',
  },
  'audit-events': {
    summary: 'List audit events',
    description:
      'The tenant’s audit log, oldest first in (`at`, `id`) order: every privileged act — author grants, API keys, embed origins, ' +
      'identity-provider changes, review decisions and overrides, forced grading, judge settings, learner erasure and export — ' +
      'with its actor, target (by id), time and request id. Append-only.',
  },
};

/**
 * The URL of the next page: BASE_URL + this request's path and parameters with `cursor` replaced.
 * The request target may be in origin form (`/v1/…`) or absolute form (`http://host/v1/…`,
 * RFC 9112 §3.2.2, as some proxies send it): only its path and query are kept.
 */
function nextPageUrl(baseUrl: string, req: FastifyRequest, cursor: string): string {
  const target = new URL(req.raw.url ?? req.url, 'http://origin-form.invalid');
  target.searchParams.set('cursor', cursor);
  return `${baseUrl}${target.pathname}?${target.searchParams.toString()}`;
}

/** The read paths of this plugin (other methods on them are 405). */
const READ_PATHS = [
  '/activity-results',
  '/activity-results/:id',
  '/progress',
  '/artifacts',
  '/artifacts/:id',
  '/learners',
  '/learners/:id',
  '/programs',
  '/programs/:id',
  '/deletions',
  '/audit-events',
  '/exports/activity-results',
  '/exports/artifacts',
  '/exports/progress',
  '/exports/learners',
  '/exports/deletions',
];

/** Handler of other methods on the read paths: 405 with `Allow`. */
async function methodNotAllowed(req: FastifyRequest, reply: FastifyReply) {
  reply.header('allow', 'GET, HEAD');
  throw new ApiError('method_not_allowed', `${req.method} is not allowed here: the Results API is read-only (GET)`);
}

/** `GET /v1/health`: liveness, no API key; `{status: "ok", service, version}`. */
async function health() {
  return { status: 'ok', service: SERVICE_NAME, version: VERSION };
}

/** Not-found handler of /v1: 404 `not_found` naming the method and path (cut to 200 characters). */
async function unknownEndpoint(req: FastifyRequest) {
  const path = (req.raw.url ?? req.url).split('?')[0]!.slice(0, 200);
  throw new ApiError('not_found', `no such endpoint: ${req.method} ${path}`);
}

/**
 * `onRequest` hook of /v1: 400 `invalid_request` for a request target over `MAX_URL_LENGTH`; 404
 * `not_found` for a path with a trailing slash (which would otherwise reach `/:id` with an empty id).
 */
function checkRequestTarget(req: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction): void {
  // A callback hook (no promise per request, as every /v1 request runs it).
  done(requestTargetError(req));
}

/** What `checkRequestTarget` refuses `req` with, or undefined. */
function requestTargetError(req: FastifyRequest): ApiError | undefined {
  if ((req.raw.url ?? req.url).length > MAX_URL_LENGTH) {
    return new ApiError('invalid_request', `url: the request URL is longer than ${MAX_URL_LENGTH} characters`);
  }
  // `/v1/activity-results/` would otherwise reach `/:id` with an empty id ("id: must be a uuid").
  const query = req.url.indexOf('?');
  const path = query === -1 ? req.url : req.url.slice(0, query);
  if (path.length > 4 && path.endsWith('/')) {
    return new ApiError(
      'not_found',
      `no such endpoint: ${req.method} ${path.slice(0, 200)} (paths take no trailing slash: ${path.slice(0, 200).replace(/\/+$/, '')})`,
    );
  }
  return undefined;
}

/**
 * The handler of `GET /v1/<endpoint>` (a list): one page `{data, next_cursor, has_more}` (plus
 * `consistent_through` and its header on a feed page), with a `Link: rel="next"` header when
 * another page follows. The key's tenant only (RLS). Errors: 400 `invalid_request` for a cursor
 * that is not ours or not for this query (cursor.ts); query parameters are checked by the schema.
 */
function listHandler(deps: Deps, cursors: CursorCodec, endpoint: Endpoint) {
  return async (req: FastifyRequest, reply: FastifyReply) => {
    const tenantId = tenantOf(req);
    const { limit = DEFAULT_LIMIT, cursor, updated_since: since, ...filters } = req.query as ListQuery;
    // The feed with updated_since; a list without a created order (deletions) is always the feed.
    const order = since !== undefined || !ordersOf(endpoint).includes('created') ? 'updated' : 'created';
    const scope = { tenantId, endpoint, order, filters: { ...(filters as Record<string, string>), updated_since: since } } as const;
    const after = cursor === undefined ? undefined : cursors.decode(scope, cursor);
    const options: ListOptions = { limit, filters: filters as Record<string, string>, order, since, after };
    // On a read replica, a feed page without a watermark (nothing published yet, migration 0120)
    // or whose watermark is not past where it starts (the cursor, else updated_since) is empty
    // only because the replica has not replayed that far — the previous page may have come from
    // the primary: the primary serves it instead.
    const start = after?.at ?? since;
    const behind = (page: Page) => order === 'updated' && (page.consistentThrough === undefined || (start !== undefined && page.consistentThrough <= start));
    const page = await fromReplica(deps, (db) => listPage(db, endpoint, tenantId, options), { result: behind });
    const next = page.last ? cursors.encode(scope, page.last) : null;
    if (next) reply.header('link', `<${nextPageUrl(deps.config.baseUrl, req, next)}>; rel="next"`);
    let watermark = '';
    if (order === 'updated') {
      if (page.consistentThrough) reply.header(WATERMARK_HEADER, page.consistentThrough);
      watermark = `,"consistent_through":${JSON.stringify(page.consistentThrough ?? null)}`;
    }
    return reply
      .type(JSON_TYPE)
      .header('cache-control', 'private, no-store')
      .send(jsonBuffer('{"data":', page.data, `,"next_cursor":${JSON.stringify(next)},"has_more":${page.hasMore}${watermark}}`));
  };
}

/**
 * The handler of `GET /v1/<endpoint>/:id`: the object as JSON (with `include=spec` on programs,
 * the activities' specs). 404 `not_found` ("no <noun> with id …") for an unknown id or another
 * tenant's; a malformed id is 400 from the schema.
 */
function oneHandler(deps: Deps, endpoint: One, noun: string) {
  return async (req: FastifyRequest, reply: FastifyReply) => {
    const tenantId = tenantOf(req);
    const { id } = req.params as { id: string };
    const include = (req.query as { include?: 'spec' }).include;
    const read = (db: Db) => findOne(db, include === 'spec' ? (`${endpoint}+spec` as One) : endpoint, tenantId, id);
    // An id the replica does not have yet (just written) is looked up on the primary.
    const body = await fromReplica(deps, read, { result: (found) => found === undefined });
    if (body === undefined) throw new ApiError('not_found', `no ${noun} with id ${id}`);
    return reply.type(JSON_TYPE).header('cache-control', 'private, no-store').send(body);
  };
}

/** The route schema (and OpenAPI entry) of a list endpoint. */
function listSchema(endpoint: Endpoint): FastifySchema {
  return {
    ...LIST_DOCS[endpoint],
    tags: ['results'],
    operationId: `list_${endpoint.replace('-', '_')}`,
    security: SECURITY,
    querystring: LIST_QUERY[endpoint],
    response: { 200: json('One page, oldest first. `Link: <…>; rel="next"` when another page follows.', LIST_RESPONSE[endpoint]), ...ERRORS },
  };
}

/** The route schema (and OpenAPI entry) of a by-id endpoint. */
function oneSchema(
  operationId: string,
  summary: string,
  item: typeof ActivityResult | typeof Artifact | typeof Learner | typeof ProgramOutline,
  querystring: typeof NO_QUERY | typeof PROGRAM_QUERY = NO_QUERY,
): FastifySchema {
  return {
    summary,
    tags: ['results'],
    operationId,
    security: SECURITY,
    params: ID_PARAMS,
    querystring,
    response: { 200: json('The object.', item), ...ERRORS },
  };
}

/**
 * The Fastify plugin of the Results API. `deps` are the options app.ts registers it with
 * (`{prefix: '/v1', ...deps}`): the database, the clock, and the config (JWT secret keying the
 * cursors, rate limit, key cache, Redis, BASE_URL for links).
 */
export default async function resultsRoutes(app: FastifyInstance, deps: Deps) {
  const cursors = cursorCodec(deps.config.jwtSecret);
  await installStatements(deps.db);
  const keys = new ApiKeyCache(deps.db, {
    ttlMs: deps.config.results.keyCacheTtlMs,
    flushMs: deps.config.results.keyUsageFlushMs,
    now: deps.now,
    log: app.log,
  });
  await keys.start();
  app.addHook('onClose', () => keys.close());
  if (deps.readDb) {
    const stopPublishing = await publishHorizon(deps.db, app.log);
    app.addHook('onClose', async () => stopPublishing());
  }

  app.setErrorHandler(apiErrorHandler('results'));
  app.setNotFoundHandler(unknownEndpoint);
  app.addHook('onRequest', checkRequestTarget);
  app.setValidatorCompiler(strictValidatorCompiler);
  // Data answers are JSON text from PostgreSQL (sent untouched); objects (health, errors) are stringified.
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));

  await registerOpenApi(app, deps);

  app.get(
    '/health',
    {
      schema: {
        summary: 'Liveness (no API key)',
        tags: ['results'],
        operationId: 'get_health',
        security: [],
        response: { 200: json('The service is up.', Health), 400: json('`invalid_request`: the request URL is too long.', ErrorBody) },
      },
    },
    health,
  );

  // A read-only API: another method on a read path is 405 (before the key check), not "no such endpoint".
  for (const url of ['/health', ...READ_PATHS])
    app.route({ method: ['POST', 'PUT', 'PATCH', 'DELETE'], url, schema: { hide: true }, handler: methodNotAllowed });

  await app.register(async (api: FastifyInstance) => {
    api.addHook('onRequest', apiKeyHook(keys));
    await registerRateLimit(api, deps);

    const list = (endpoint: Endpoint) => listHandler(deps, cursors, endpoint);
    const one = (endpoint: One, noun: string) => oneHandler(deps, endpoint, noun);
    api.get('/activity-results', { schema: listSchema('activity-results') }, list('activity-results'));
    api.get(
      '/activity-results/:id',
      { schema: oneSchema('get_activity_result', 'Get one activity result', ActivityResult) },
      one('activity-results', 'activity result'),
    );
    api.get('/progress', { schema: listSchema('progress') }, list('progress'));
    api.get('/artifacts', { schema: listSchema('artifacts') }, list('artifacts'));
    api.get('/artifacts/:id', { schema: oneSchema('get_artifact', 'Get one artifact', Artifact) }, one('artifacts', 'artifact'));
    api.get('/learners', { schema: listSchema('learners') }, list('learners'));
    api.get('/learners/:id', { schema: oneSchema('get_learner', 'Get one learner', Learner) }, one('learners', 'learner'));
    api.get('/programs', { schema: listSchema('programs') }, list('programs'));
    api.get('/programs/:id', { schema: oneSchema('get_program', 'Get a program’s outline', ProgramOutline, PROGRAM_QUERY) }, one('programs', 'program'));
    api.get('/deletions', { schema: listSchema('deletions') }, list('deletions'));
    api.get('/audit-events', { schema: listSchema('audit-events') }, list('audit-events'));
    // Streaming exports (issue #24, src/results/exports): same key, rate limit and RLS.
    await registerExports(api, deps, ERRORS);
  });
}
