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
  if (!doc) documents.set(config, (doc = {}));
  return doc;
}

const withServer = (doc: Document, config: Config): Document => ({ ...doc, servers: [{ url: config.baseUrl }] });

const DESCRIPTION = `Read-only access to a tenant's learning results, progress and artifacts.

**Authentication**: a per-tenant API key (\`svc key create <tenant> --name …\`) in \`Authorization: Bearer svc_…\`
or \`X-Svc-Api-Key: svc_…\`. A key sees its own tenant only; another tenant's id answers 404.

**Pagination**: lists are ordered by (\`created_at\`, \`id\`); pass \`next_cursor\` back as \`cursor\` until it is
null (\`has_more\` false). The next page's URL is also in the \`Link: <…>; rel="next"\` header.

**Incremental sync**: add \`updated_since\` (RFC 3339) to any list to get the rows created or changed at or after
that instant, ordered by (\`updated_at\`, \`id\`). Store the largest \`updated_at\` you received and pass it as
\`updated_since\` next time; rows at that instant come again, so upsert by \`id\`. Rows of a transaction still in
progress are held back until it commits, so none is skipped. Deleted rows are not reported.

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
      info: { title: `${SERVICE_NAME} — Results API`, version: VERSION, description: DESCRIPTION },
      tags: [{ name: 'results', description: 'Results, progress and artifacts of one tenant' }],
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
