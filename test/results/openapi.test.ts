/**
 * The Results API's documentation: `GET /v1/openapi.json` is a well-formed OpenAPI 3.1 document
 * generated from the route schemas — every route present, every reference resolvable, every
 * schema a valid JSON Schema 2020-12 (compiled with Ajv) — and it tells the truth: real answers
 * of every endpoint, success and error, validate against the schemas it documents.
 * `/docs` renders it; every answer carries X-Request-Id, and error bodies repeat it.
 */
// Ajv comes with Fastify (its JSON Schema validator); the 2020-12 build validates OpenAPI 3.1 schemas.
import { Ajv2020 } from 'ajv/dist/2020.js';
import SwaggerParser from '@apidevtools/swagger-parser';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { useApp, useFixture } from '../helpers/harness.ts';
import { get, getJson, seedTenant } from './fixtures.ts';

let doc: any;
const t = useApp();
const a = useFixture(() => seedTenant(t, 'alpha'));
beforeAll(async () => {
  const res = await fetch(`${t.url}/v1/openapi.json`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  doc = await res.json();
});

/** The routes of the contract (DESIGN §6) and what each answers. */
const ROUTES: Record<string, number[]> = {
  '/v1/health': [200, 400],
  '/v1/activity-results': [200, 400, 401, 404, 429, 500, 503],
  '/v1/activity-results/{id}': [200, 400, 401, 404, 429, 500, 503],
  '/v1/progress': [200, 400, 401, 404, 429, 500, 503],
  '/v1/artifacts': [200, 400, 401, 404, 429, 500, 503],
  '/v1/artifacts/{id}': [200, 400, 401, 404, 429, 500, 503],
  '/v1/learners': [200, 400, 401, 404, 429, 500, 503],
  '/v1/learners/{id}': [200, 400, 401, 404, 429, 500, 503],
  '/v1/programs': [200, 400, 401, 404, 429, 500, 503],
  '/v1/programs/{id}': [200, 400, 401, 404, 429, 500, 503],
  '/v1/deletions': [200, 400, 401, 404, 429, 500, 503],
  '/v1/audit-events': [200, 400, 401, 404, 429, 500, 503],
  // Streaming exports (issue #24): 406 for an Accept they cannot serve.
  ...Object.fromEntries(
    ['activity-results', 'artifacts', 'progress', 'learners', 'deletions'].map((n) => [`/v1/exports/${n}`, [200, 400, 401, 404, 406, 429, 500, 503]]),
  ),
};
const EXPORT_TYPES = ['application/vnd.apache.parquet', 'application/x-ndjson', 'text/csv'];

/** Resolve a local `#/…` reference in the document. */
function resolve(ref: string): unknown {
  expect(ref.startsWith('#/')).toBe(true);
  return ref
    .slice(2)
    .split('/')
    .reduce<any>((node, part) => node?.[part.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
}

/** An operation's answer: a shared one (`components.responses`) through its `$ref`. */
const answer = (response: any): any => (response.$ref === undefined ? response : resolve(response.$ref));

/** Every `$ref` anywhere under `node`. */
function refs(node: unknown, out: string[] = []): string[] {
  if (Array.isArray(node)) for (const item of node) refs(item, out);
  else if (node && typeof node === 'object') {
    for (const [k, v] of Object.entries(node)) {
      if (k === '$ref' && typeof v === 'string') out.push(v);
      else refs(v, out);
    }
  }
  return out;
}

/**
 * A validator (Ajv, JSON Schema 2020-12, strict mode) for `schema`, with the document's
 * components available: `#/components/schemas/X` references become `#/$defs/X` of the root.
 */
function validatorFor(schema: unknown) {
  const ajv = new Ajv2020({ strict: true, allErrors: true, formats: { uuid: true, 'date-time': true } });
  const rewrite = (node: unknown): unknown =>
    Array.isArray(node)
      ? node.map(rewrite)
      : node && typeof node === 'object'
        ? Object.fromEntries(
            Object.entries(node).map(([k, v]) => [k, k === '$ref' && typeof v === 'string' ? v.replace('#/components/schemas/', '#/$defs/') : rewrite(v)]),
          )
        : node;
  return ajv.compile({ ...(rewrite(schema) as object), $defs: rewrite(doc.components.schemas) as object });
}

describe('the document', () => {
  it('is valid for swagger-parser and clean under `redocly lint` (recommended rules)', async () => {
    await SwaggerParser.validate(structuredClone(doc));
    const dir = await mkdtemp(join(tmpdir(), 'svc-openapi-'));
    try {
      const file = join(dir, 'openapi.json');
      await writeFile(file, JSON.stringify(doc));
      const { stdout } = await promisify(execFile)('npx', ['redocly', 'lint', file, '--extends', 'recommended', '--format', 'json'], {
        env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
      });
      const report = JSON.parse(stdout);
      expect(report.problems.map((p: any) => `${p.ruleId}: ${p.message}`)).toEqual([]);
      expect(report.totals).toMatchObject({ errors: 0, warnings: 0 });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('is OpenAPI 3.1 with info, servers and the API-key security schemes', () => {
    expect(doc.openapi).toMatch(/^3\.1\.\d+$/);
    expect(doc.info).toMatchObject({ title: expect.any(String), version: expect.any(String) });
    expect(doc.info.description).toContain('updated_since');
    expect(doc.servers).toEqual([{ url: t.url }]);
    expect(doc.components.securitySchemes).toEqual({
      bearerKey: expect.objectContaining({ type: 'http', scheme: 'bearer' }),
      headerKey: expect.objectContaining({ type: 'apiKey', in: 'header', name: 'X-Svc-Api-Key' }),
    });
  });

  it('documents exactly the Results API routes, each with its answers', () => {
    expect(Object.keys(doc.paths).sort()).toEqual(Object.keys(ROUTES).sort());
    const operationIds = new Set<string>();
    for (const [path, statuses] of Object.entries(ROUTES)) {
      expect(Object.keys(doc.paths[path]), path).toEqual(['get']);
      const op = doc.paths[path].get;
      expect(Object.keys(op.responses).map(Number).sort(), path).toEqual(statuses);
      const answers = Object.entries<any>(op.responses).map(([status, response]) => [status, answer(response)]);
      for (const [status, response] of answers) {
        expect(response.description, `${path} ${status}`).toEqual(expect.any(String));
        const exported = path.startsWith('/v1/exports/') && status === '200';
        expect(Object.keys(response.content).sort(), `${path} ${status}`).toEqual(exported ? EXPORT_TYPES : ['application/json']);
      }
      expect(operationIds.has(op.operationId), path).toBe(false);
      operationIds.add(op.operationId);
      expect(op.security).toEqual(path === '/v1/health' ? [] : [{ bearerKey: [] }, { headerKey: [] }]);
      for (const [status, response] of answers) {
        expect(Object.keys(response.headers ?? {}), `${path} ${status}`).toContain('X-Request-Id');
        if (status === '429') expect(Object.keys(response.headers)).toContain('Retry-After');
      }
      for (const p of op.parameters ?? []) {
        expect(p).toMatchObject({ name: expect.any(String), in: expect.stringMatching(/^(query|path)$/), schema: expect.any(Object) });
        expect(p.description, `${path} ${p.name}`).toEqual(expect.any(String));
        if (p.in === 'path') expect(p.required).toBe(true);
      }
    }
  });

  it('lists every parameter each endpoint accepts, and no other', () => {
    const names = (path: string) => doc.paths[path].get.parameters.map((p: any) => `${p.in}:${p.name}`).sort();
    const list = ['query:cursor', 'query:limit', 'query:updated_since'];
    expect(names('/v1/activity-results')).toEqual([...list, 'query:activity_id', 'query:status', 'query:user_id'].sort());
    expect(names('/v1/progress')).toEqual([...list, 'query:program_id', 'query:user_id'].sort());
    expect(names('/v1/artifacts')).toEqual([...list, 'query:activity_id', 'query:user_id'].sort());
    expect(names('/v1/activity-results/{id}')).toEqual(['path:id']);
    expect(names('/v1/artifacts/{id}')).toEqual(['path:id']);
    expect(names('/v1/learners')).toEqual([...list, 'query:external_id', 'query:issuer'].sort());
    expect(names('/v1/programs')).toEqual(['query:cursor', 'query:limit']);
    expect(names('/v1/programs/{id}')).toEqual(['path:id', 'query:include']);
    expect(names('/v1/deletions')).toEqual([...list, 'query:resource'].sort());
    expect(names('/v1/audit-events')).toEqual(['query:action', 'query:cursor', 'query:limit', 'query:since']);
  });

  it('types parameters and fields: limit an integer, ids uuid, timestamps date-time, feed headers', () => {
    const param = (path: string, name: string) => doc.paths[path].get.parameters.find((p: any) => p.name === name).schema;
    expect(param('/v1/activity-results', 'limit')).toMatchObject({ type: 'integer', minimum: 1, maximum: 200 });
    expect(param('/v1/activity-results', 'user_id')).toMatchObject({ type: 'string', format: 'uuid' });
    expect(param('/v1/artifacts/{id}', 'id')).toMatchObject({ type: 'string', format: 'uuid' });
    expect(param('/v1/progress', 'updated_since')).toMatchObject({ type: 'string', format: 'date-time' });
    const result = doc.components.schemas.ActivityResult.properties;
    expect(result.id).toMatchObject({ format: 'uuid' });
    expect(result.unit_id).toMatchObject({ format: 'uuid' });
    expect(result.created_at).toMatchObject({ format: 'date-time' });
    const ok = doc.paths['/v1/deletions'].get.responses['200'].headers;
    expect(Object.keys(ok).sort()).toEqual(['Link', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'Svc-Consistent-Through', 'X-Request-Id']);
    expect(Object.keys(doc.paths['/v1/programs'].get.responses['200'].headers)).not.toContain('Svc-Consistent-Through');
  });

  it('resolves every reference, and every schema compiles as JSON Schema 2020-12', () => {
    const all = refs(doc);
    expect(all.length).toBeGreaterThan(10);
    for (const ref of all) expect(resolve(ref), ref).toBeDefined();
    expect(Object.keys(doc.components.schemas).sort()).toEqual([
      'ActivityResult',
      'Artifact',
      'AuditEvent',
      'Deletion',
      'Error',
      'Learner',
      'OutlineActivity',
      'Program',
      'ProgramOutline',
      'Progress',
    ]);
    for (const path of Object.keys(ROUTES)) {
      const op = doc.paths[path].get;
      for (const response of Object.values<any>(op.responses).map(answer)) {
        for (const media of Object.values<any>(response.content)) validatorFor(media.schema);
      }
      for (const p of op.parameters ?? []) validatorFor(p.schema);
    }
  });
});

describe('the document matches the answers', () => {
  const check = async (route: string, url: string, expectedStatus: number, key?: string) => {
    const res = await get(t, url, key);
    expect(res.status, url).toBe(expectedStatus);
    const body = await res.json();
    const validate = validatorFor(answer(doc.paths[route].get.responses[String(expectedStatus)]).content['application/json'].schema);
    expect(validate(body), `${url}: ${JSON.stringify(validate.errors)}`).toBe(true);
    return body;
  };

  it('for every success answer', async () => {
    await check('/v1/health', '/v1/health', 200);
    const results = await check('/v1/activity-results', '/v1/activity-results?limit=2', 200, a.key);
    expect(results.data).toHaveLength(2);
    await check('/v1/activity-results', `/v1/activity-results?limit=1&cursor=${results.next_cursor}`, 200, a.key);
    await check('/v1/activity-results', '/v1/activity-results?updated_since=2000-01-01T00:00:00Z', 200, a.key);
    await check('/v1/activity-results/{id}', `/v1/activity-results/${a.resultIds[0]}`, 200, a.key);
    await check('/v1/progress', '/v1/progress', 200, a.key);
    await check('/v1/artifacts', '/v1/artifacts', 200, a.key);
    await check('/v1/artifacts/{id}', `/v1/artifacts/${a.artifactIds[0]}`, 200, a.key);
    await check('/v1/learners', '/v1/learners', 200, a.key);
    await check('/v1/learners', '/v1/learners?updated_since=2000-01-01T00:00:00Z', 200, a.key);
    await check('/v1/learners/{id}', `/v1/learners/${a.userIds[0]}`, 200, a.key);
    await check('/v1/programs', '/v1/programs', 200, a.key);
    await check('/v1/programs/{id}', `/v1/programs/${a.programId}`, 200, a.key);
    await check('/v1/programs/{id}', `/v1/programs/${a.programId}?include=spec`, 200, a.key);
    await t.db.query('delete from progress where tenant_id = $1 and program_id = $2', [a.id, a.emptyProgramId]);
    const deletions = await check('/v1/deletions', '/v1/deletions', 200, a.key);
    expect(deletions.data.length).toBeGreaterThan(0);
  });

  it('for every error answer', async () => {
    await check('/v1/activity-results', '/v1/activity-results?limit=0', 400, a.key);
    await check('/v1/activity-results', '/v1/activity-results', 401);
    await check('/v1/artifacts/{id}', '/v1/artifacts/00000000-0000-4000-8000-000000000000', 404, a.key);
    await check('/v1/artifacts/{id}', '/v1/artifacts/nope', 400, a.key);
  });

  it('and a schema that does not match is caught (the control)', () => {
    const validate = validatorFor(doc.paths['/v1/progress'].get.responses['200'].content['application/json'].schema);
    expect(validate({ data: [{ svc_user_id: 'x' }], next_cursor: null, has_more: false })).toBe(false);
    expect(validate({ data: [], next_cursor: null, has_more: false, extra: 1 })).toBe(false);
  });
});

describe('the rendered reference and request ids', () => {
  it('serves /docs (Swagger UI) on the same document', async () => {
    const page = await fetch(`${t.url}/docs`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await page.text()).toContain('swagger-ui');
    const json = await getJson(t, '/docs/json');
    expect(Object.keys(json.paths).sort()).toEqual(Object.keys(doc.paths).sort());
    expect(json.servers).toEqual([{ url: t.url }]);
  });

  it('puts X-Request-Id on every answer, keeps an incoming one, and repeats it in error bodies', async () => {
    for (const [url, key] of [
      ['/v1/health', undefined],
      ['/v1/progress', a.key],
      ['/v1/progress', undefined],
      ['/v1/nope', a.key],
      ['/v1/openapi.json', undefined],
    ] as const) {
      const res = await get(t, url, key);
      expect(res.headers.get('x-request-id'), url).toMatch(/^[0-9a-f-]{36}$/);
      if (res.status >= 400) expect((await res.json()).error.request_id).toBe(res.headers.get('x-request-id'));
    }
    const mine = await get(t, '/v1/artifacts/nope', a.key, 'bearer', { 'x-request-id': 'partner-trace-42' });
    expect(mine.headers.get('x-request-id')).toBe('partner-trace-42');
    expect((await mine.json()).error.request_id).toBe('partner-trace-42');
    const malformed = await fetch(`${t.url}/v1/artifacts/%E0%A4%A`, { headers: { authorization: `Bearer ${a.key}` } });
    expect(malformed.status).toBe(400);
    expect((await malformed.json()).error.request_id).toBe(malformed.headers.get('x-request-id'));
  });
});
