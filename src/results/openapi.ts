/**
 * The Results API's documentation, generated from the route schemas (schemas.ts):
 *
 *   GET /v1/openapi.json   the OpenAPI 3.1 document (@fastify/swagger, dynamic mode, with
 *                          fastify-type-provider-zod's transforms turning zod into JSON Schema)
 *   GET /docs              a rendered reference (@fastify/swagger-ui) of the same document
 *
 * `registerOpenApi` runs inside the `/v1` plugin before its routes, so every route registered
 * after it (in that plugin and its children) is documented; routes with `schema.hide` are not.
 * `resultsDocs` is registered by app.ts at the root, because `/docs` is outside `/v1`: it serves
 * the document the `/v1` plugin generated (shared through `documentFor(config)`, filled when the
 * app is ready) with @fastify/swagger's static mode, which @fastify/swagger-ui reads.
 * The `servers` entry is the configured BASE_URL, read at request time.
 */
import { isDeepStrictEqual } from 'node:util';
import fastifySwagger from '@fastify/swagger';
import type { OpenAPIV3 } from 'openapi-types';
import fastifySwaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { createJsonSchemaTransform, createJsonSchemaTransformObject } from 'fastify-type-provider-zod';
import type { Config } from '../config.ts';
import type { Deps } from '../deps.ts';
import { SERVICE_NAME, VERSION } from '../version.ts';
import { componentRegistry } from './schemas.ts';

type Document = Record<string, unknown> & { servers?: { url: string }[] };

/** The generated document of each app (keyed by its config object), filled on ready. */
const documents = new WeakMap<Config, Document>();

function documentFor(config: Config): Document {
  let doc = documents.get(config);
  if (!doc) {
    doc = {};
    documents.set(config, doc);
  }
  return doc;
}

const withServer = (doc: Document, config: Config): Document => ({ ...doc, servers: [{ url: config.baseUrl }] });

const header = (description: string, schema: Record<string, unknown>) => ({ description, schema });
/** Response headers of the document (its `components.headers`), by name (src/results/routes.ts, rate-limit.ts, app.ts send them). */
const HEADERS = {
  'X-Request-Id': header('The request’s id (yours if you sent a valid one, else a uuid); quote it to support.', { type: 'string' }),
  'RateLimit-Limit': header('Requests the key may make per window.', { type: 'integer' }),
  'RateLimit-Remaining': header('Requests left in the current window.', { type: 'integer' }),
  'RateLimit-Reset': header('Seconds until the window resets.', { type: 'integer' }),
  'Retry-After': header('Seconds to wait before retrying.', { type: 'integer' }),
  Link: header('`<url>; rel="next"` when another page follows.', { type: 'string' }),
  'Svc-Consistent-Through': header('On feed pages (`updated_since`, and /v1/deletions), as `consistent_through` in the body, and on exports: the watermark.', {
    type: 'string',
    format: 'date-time',
  }),
};

type Operation = { operationId?: string; security?: unknown[]; parameters?: { name: string }[]; responses?: Record<string, object> };
type Components = { headers?: Record<string, unknown>; responses?: Record<string, unknown> };

/** A Reference Object to `#/components/<kind>/<name>`. */
const ref = (kind: keyof Components, name: string) => ({ $ref: `#/components/${kind}/${name}` });

/**
 * The error answers of the keyed operations (routes.ts's ERRORS, with their headers), by status:
 * each is the same on every keyed operation, so the document holds it once, in
 * `components.responses` under this name.
 */
const SHARED_ERRORS: Record<string, string> = {
  400: 'InvalidRequest',
  401: 'Unauthorized',
  404: 'NotFound',
  429: 'RateLimited',
  500: 'InternalError',
  503: 'Unavailable',
};

/**
 * Document the response headers of every operation, as references to `components.headers`:
 * X-Request-Id everywhere; on keyed routes the RateLimit-* headers; Retry-After on 429 and 503;
 * on list pages (200) Link, and the watermark header where the list has a feed. Then move the
 * keyed operations' error answers to `components.responses` (SHARED_ERRORS) and reference them;
 * throws if one operation's answer differs from another's of the same status.
 */
function shareComponents(doc: { paths?: Record<string, Record<string, Operation>>; components?: Components }): void {
  doc.components ??= {};
  const components = doc.components;
  components.headers = structuredClone(HEADERS); // each document its own copy
  const responses: Record<string, unknown> = {};
  components.responses = responses;
  for (const item of Object.values(doc.paths ?? {})) {
    for (const op of Object.values(item)) {
      const keyed = (op.security ?? []).length > 0;
      const list = op.operationId?.startsWith('list_') === true;
      const feed = list && (op.parameters ?? []).some((p) => p.name === 'updated_since');
      const answers = op.responses ?? {};
      for (const [status, response] of Object.entries(answers)) {
        const names: (keyof typeof HEADERS)[] = ['X-Request-Id'];
        if (keyed && status !== '401') names.push('RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset');
        if (status === '429' || status === '503') names.push('Retry-After');
        if (status === '200' && list) names.push('Link');
        if (status === '200' && (feed || op.operationId?.startsWith('export_') === true)) names.push('Svc-Consistent-Through');
        const documented = { ...response, headers: Object.fromEntries(names.map((n) => [n, ref('headers', n)])) };
        const shared = keyed ? SHARED_ERRORS[status] : undefined;
        if (shared === undefined) {
          answers[status] = documented;
          continue;
        }
        responses[shared] ??= documented;
        if (!isDeepStrictEqual(responses[shared], documented)) {
          throw new Error(`${op.operationId} ${status}: differs from the keyed operations' components.responses.${shared}`);
        }
        answers[status] = ref('responses', shared);
      }
    }
  }
}

const DESCRIPTION = `Read-only access to a tenant's learning results, progress and artifacts.

**Authentication**: a per-tenant API key (\`svc key create <tenant> --name …\`) in \`Authorization: Bearer svc_…\`
or \`X-Svc-Api-Key: svc_…\`. A key sees its own tenant only; another tenant's id answers 404.

**Pagination**: lists are ordered by (\`created_at\`, \`id\`); pass \`next_cursor\` back as \`cursor\` until it is
null (\`has_more\` false). The next page's URL is also in the \`Link: <…>; rel="next"\` header.

**Incremental sync**: add \`updated_since\` (RFC 3339) to any list to get the rows created or changed at or after
that instant, ordered by (\`updated_at\`, \`id\`). Store the largest \`updated_at\` you received and pass it as
\`updated_since\` next time; rows at that instant come again, so upsert by \`id\`. Rows of a transaction still in
progress are held back until it commits, so none is skipped. Feed pages carry a watermark (\`consistent_through\`,
header \`Svc-Consistent-Through\`): every change committed at or before it has been returned or comes at a later
cursor; start the next sync there. The created order is a listing, not a feed: sync with \`updated_since\`.

**Exports**: \`GET /v1/exports/{activity-results|artifacts|progress|learners|deletions}\` streams every row of the
tenant in one answer (NDJSON, CSV or Parquet by \`format\` or \`Accept\`; zstd or gzip by \`Accept-Encoding\`) from
one snapshot whose watermark is the \`Svc-Consistent-Through\` header: pass it as \`updated_since\` next time. One
export at a time per key (429 with \`Retry-After\`).

**Deletions**: \`GET /v1/deletions\` lists tombstones (\`{resource, id, deleted_at}\`) of results, artifacts, progress
rows, learners and content removed from the tenant; a sync consumer drops what it lists.

**Rate limits**: per key; every answer carries \`RateLimit-Limit\`, \`RateLimit-Remaining\`, \`RateLimit-Reset\`
(seconds); over the limit the answer is 429 \`rate_limited\` with \`Retry-After\` (seconds).

**Errors**: \`{"error": {"code", "message", "request_id"}}\`; \`request_id\` equals the \`X-Request-Id\` header.
While the service cannot reach its database the answer is 503 \`unavailable\` with \`Retry-After\` (seconds): retry then.`;

/** Register @fastify/swagger on the `/v1` plugin (before its routes) and `GET /v1/openapi.json`. */
export async function registerOpenApi(app: FastifyInstance, deps: Deps): Promise<void> {
  const transformObject = createJsonSchemaTransformObject({ schemaRegistry: componentRegistry });
  await app.register(fastifySwagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: `${SERVICE_NAME} — Results API`,
        version: VERSION,
        description: DESCRIPTION,
        license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
      },
      tags: [
        { name: 'results', description: 'Results, progress, artifacts, learners, content outlines and tombstones of one tenant' },
        { name: 'exports', description: 'Every row of one tenant in one streamed answer, from one snapshot' },
      ],
      components: {
        securitySchemes: {
          bearerKey: { type: 'http', scheme: 'bearer', description: 'The API key: `Authorization: Bearer svc_…`' },
          headerKey: { type: 'apiKey', in: 'header', name: 'X-Svc-Api-Key', description: 'The API key: `X-Svc-Api-Key: svc_…`' },
        },
      },
    },
    transform: createJsonSchemaTransform({ schemaRegistry: componentRegistry }),
    // Response objects are registered once; fastify-type-provider-zod also derives an "…Input"
    // copy of each, which no request uses: leave those out.
    transformObject: (input) => {
      const doc = transformObject(input);
      const schemas = ((doc as { components?: { schemas?: Record<string, unknown> } }).components?.schemas ?? {}) as Record<string, unknown>;
      for (const name of Object.keys(schemas)) if (name.endsWith('Input')) delete schemas[name];
      shareComponents(doc as Parameters<typeof shareComponents>[0]);
      return doc;
    },
  });
  app.get('/openapi.json', { schema: { hide: true } }, async (_req, reply) =>
    reply.header('cache-control', 'no-cache').send(withServer(app.swagger() as Document, deps.config)),
  );
  app.addHook('onReady', async () => {
    Object.assign(documentFor(deps.config), app.swagger());
  });
}

/** The root-level plugin serving the rendered reference at `/docs` (registered by app.ts). */
export async function resultsDocs(app: FastifyInstance, deps: Deps): Promise<void> {
  await app.register(fastifySwagger, {
    mode: 'static',
    specification: { document: documentFor(deps.config) as unknown as OpenAPIV3.Document },
  });
  await app.register(fastifySwaggerUi, {
    routePrefix: '/docs',
    transformSpecification: (spec) => withServer(spec as Document, deps.config),
    uiConfig: { docExpansion: 'list', deepLinking: true },
  });
}
