/**
 * The results plugin as a Fastify citizen: unexpected failures become 500 internal_error with
 * no internals, and its hooks and handlers stay inside /v1 (the sibling /v1/embed plugin is
 * neither authenticated nor rendered by it).
 */
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import resultsRoutes from '../../src/results/routes.ts';
import { useApp, useFixture, useServer } from '../helpers/harness.ts';
import { expectError, get, seedTenant } from './fixtures.ts';

const t = useApp();
const a = useFixture(() => seedTenant(t, 'alpha'));

describe('internal errors', () => {
  it('answer 500 internal_error with the fixed body and no detail', async () => {
    // Break the database under the API: the results role loses its read grant.
    await t.db.query('revoke select on progress from svc_results');
    try {
      const res = await get(t, '/v1/progress', a.key);
      const text = await res.clone().text();
      const message = await expectError(res, 500, 'internal_error');
      expect(message).toBe('internal error');
      expect(text).not.toMatch(/permission|progress|svc_results|stack|at .*\.ts/i);
    } finally {
      await t.db.query('grant select on progress to svc_results');
    }
    expect((await get(t, '/v1/progress', a.key)).status).toBe(200);
  });
});

describe('encapsulation next to a sibling /v1/embed plugin', () => {
  // The same composition as src/app.ts, with a stand-in for the embed surface.
  const site = useServer(async () => {
    const app = Fastify({ logger: false, requestIdHeader: 'x-request-id' });
    app.addHook('onSend', async (req, reply) => {
      reply.header('x-request-id', req.id);
    });
    await app.register(resultsRoutes, { prefix: '/v1', ...t.deps });
    await app.register(
      async (embed) => {
        embed.setNotFoundHandler(async (_req, reply) => reply.code(404).send({ embed: 'not found' }));
        embed.post('/session', async () => ({ embed: 'session' }));
        embed.get('/boom', async () => {
          throw Object.assign(new Error('embed failure'), { statusCode: 418 });
        });
      },
      { prefix: '/v1/embed' },
    );
    return { url: await app.listen({ port: 0, host: '127.0.0.1' }), close: () => app.close() };
  });

  it('does not ask /v1/embed routes for an API key', async () => {
    const res = await fetch(`${site.url}/v1/embed/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ embed: 'session' });
  });

  it('does not render /v1/embed errors in its own body', async () => {
    const res = await fetch(`${site.url}/v1/embed/boom`);
    expect(res.status).toBe(418);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body.message).toBe('embed failure');
    expect(body).not.toHaveProperty('error.code');
  });

  it('leaves unknown /v1/embed paths to the sibling’s own not-found handler', async () => {
    const res = await fetch(`${site.url}/v1/embed/unknown`);
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ embed: 'not found' });
    await expectError(await fetch(`${site.url}/v1/unknown`), 404, 'not_found');
  });

  it('still guards its own routes in that composition', async () => {
    await expectError(await fetch(`${site.url}/v1/progress`), 401, 'unauthorized');
    expect((await fetch(`${site.url}/v1/progress`, { headers: { 'x-svc-api-key': a.key } })).status).toBe(200);
  });
});
