/**
 * Values the database cannot store (a NUL character, an impossible date) get each surface's
 * client error — never a 5xx — and nothing is written.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { beforeAll, describe, expect, it } from 'vitest';
import { seedAuthor, useApp, useServer } from '../helpers/harness.ts';
import { startTestIdp } from '../helpers/test-idp.ts';

const NUL = '\u0000';
const t = useApp();
const idp = useServer(() => startTestIdp());
beforeAll(async () => {
  await seedAuthor(t, 'acme', 'author@acme.test', 'author password');
  await t.op('idp.set', { tenant: 'acme', issuer: idp.issuer, jwks_url: idp.jwksUrl });
});

const json = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${t.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
const count = async (table: string) => (await t.db.query<{ n: number }>(`select count(*)::int as n from ${table}`))[0]!.n;

describe('NUL characters and impossible values', () => {
  it('identity: password grant and admin user creation answer 4xx', async () => {
    const apikey = { apikey: t.deps.config.anonKey, 'x-supabase-api-version': '2024-01-01' };
    const grant = await json('/auth/v1/token?grant_type=password', { email: `a${NUL}@acme.test`, password: 'whatever1' }, apikey);
    expect(grant.status).toBe(400);
    const users = await count('auth.users');
    const admin = await json(
      '/auth/v1/admin/users',
      { email: 'new@acme.test', password: 'password1', user_metadata: { name: `x${NUL}` } },
      { apikey: t.deps.config.serviceRoleKey, authorization: `Bearer ${t.deps.config.serviceRoleKey}`, 'x-supabase-api-version': '2024-01-01' },
    );
    expect(admin.status).toBe(400);
    expect(Object.keys(await admin.json()).sort()).toEqual(['code', 'message']);
    expect(await count('auth.users')).toBe(users);
  });

  it('embed: a NUL in an IdP claim or in the artifact is 400, nothing written', async () => {
    const session = await json('/v1/embed/session', { idp_token: await idp.sign({ sub: 'nul-learner', name: `a${NUL}b` }), tenant: 'acme' });
    expect(session.status).toBeLessThan(500);
    const good = await (await json('/v1/embed/session', { idp_token: await idp.sign({ sub: 'learner' }), tenant: 'acme' })).json();
    const [activity] = await t.db.query<{ id: string }>(
      `with p as (insert into programs (tenant_id, title) select id, 'P' from tenants where slug = 'acme' returning id),
            u as (insert into units (program_id, title) select id, 'U' from p returning id),
            l as (insert into lessons (unit_id, title) select id, 'L' from u returning id)
       insert into activities (lesson_id, title, kind, spec) select id, 'A', 'document', 'spec' from l returning id`,
    );
    const artifacts = await count('artifacts');
    const judge = await json(
      '/v1/embed/judge',
      { tenant: 'acme', activity_id: activity!.id, artifact: { kind: 'document', content: `answer${NUL}` } },
      { authorization: `Bearer ${good.access_token}` },
    );
    expect(judge.status).toBe(400);
    expect((await judge.json()).error.code).toBe('invalid_request');
    expect(await count('artifacts')).toBe(artifacts);
  });

  it('authoring: a NUL in a title is an error result, nothing written', async () => {
    const signIn = await (
      await json('/auth/v1/token?grant_type=password', { email: 'author@acme.test', password: 'author password' }, { apikey: t.deps.config.anonKey })
    ).json();
    const client = new Client({ name: 'bad-input', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${t.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${signIn.access_token}` } } }),
    );
    const programs = await count('programs');
    const result = await client.callTool({ name: 'create_program', arguments: { tenant: 'acme', title: `T${NUL}` } });
    expect(result.isError).toBe(true);
    expect((result.content as { text: string }[])[0]!.text).toMatch(/invalid value/);
    expect(await count('programs')).toBe(programs);
    await client.close();
  });
});
