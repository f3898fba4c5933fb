/**
 * Authentication of /mcp: missing or malformed header → 401 with WWW-Authenticate; tokens that
 * fail verification → 401 with JSON-RPC -32001. Every forged call tries to write a program, and
 * a positive control with the genuine token shows the same call would have written one.
 */
import Fastify from 'fastify';
import { beforeAll, describe, expect, it } from 'vitest';
import { protectedResourceMetadata } from '../../src/authoring/routes.ts';
import { forgedTokens } from '../helpers/forged-tokens.ts';
import { seedAuthor, useApp } from '../helpers/harness.ts';
import { connect, ok, rawPost, signIn } from './helpers.ts';

let email: string;
let password: string;
let token: string;

const t = useApp();
beforeAll(async () => {
  ({ email, password } = await seedAuthor(t, 'acme'));
  token = await signIn(t, email, password);
});

/** A tools/call that would write a program titled `title`. */
const createCall = (title: string) => ({
  jsonrpc: '2.0',
  id: 7,
  method: 'tools/call',
  params: { name: 'create_program', arguments: { tenant: 'acme', title } },
});

async function programsTitled(title: string): Promise<number> {
  const [row] = await t.db.query<{ n: number }>('select count(*)::int as n from programs where title = $1', [title]);
  return row!.n;
}

const metadataUrl = () => `${t.url}/.well-known/oauth-protected-resource`;

/** Expect the -32001 answer for a token that fails verification, and that nothing was written. */
async function expectRejected(badToken: string, title: string) {
  const res = await rawPost(t, createCall(title), { authorization: `Bearer ${badToken}` });
  expect(res.status).toBe(401);
  const body = (await res.json()) as { jsonrpc: string; error: { code: number; message: string }; id: null };
  expect(Object.keys(body).sort()).toEqual(['error', 'id', 'jsonrpc']);
  expect(body).toEqual({ jsonrpc: '2.0', error: { code: -32001, message: expect.stringMatching(/^Unauthorized: /) }, id: null });
  expect(res.headers.get('www-authenticate')).toMatch(/^Bearer error="invalid_token"/);
  expect(res.headers.get('www-authenticate')).toContain(`resource_metadata="${metadataUrl()}"`);
  expect(await programsTitled(title)).toBe(0);
  return body.error.message;
}

describe('a genuine token (control)', () => {
  it('writes through POST /mcp and /mcp/', async () => {
    for (const path of ['/mcp', '/mcp/']) {
      const res = await rawPost(t, createCall(`control ${path}`), { authorization: `Bearer ${token}` }, path);
      expect(res.status).toBe(200);
      expect(res.headers.get('x-request-id')).toBeTruthy();
      const body = (await res.json()) as { result: { structuredContent: { id: string } } };
      expect(body.result.structuredContent.id).toBeTruthy();
      expect(await programsTitled(`control ${path}`)).toBe(1);
    }
  });
});

describe('no or malformed Authorization header', () => {
  it.each([
    ['no header', undefined],
    ['another scheme', `Basic ${Buffer.from('a:b').toString('base64')}`],
    ['Bearer without a token', 'Bearer'],
    ['two tokens', `Bearer ${'x'.repeat(10)} ${'y'.repeat(10)}`],
  ])('%s → 401 with WWW-Authenticate and a JSON-RPC error', async (_name, header) => {
    const res = await rawPost(t, createCall('no header'), header ? { authorization: header } : {});
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${metadataUrl()}", scope="authoring"`);
    const body = await res.json();
    expect(body).toEqual({ jsonrpc: '2.0', error: { code: -32001, message: expect.any(String) }, id: null });
    expect(await programsTitled('no header')).toBe(0);
  });

  it('the SDK client cannot connect without a token', async () => {
    await expect(connect(t, '')).rejects.toThrow();
  });
});

describe('tokens that fail verification → -32001', () => {
  let variants: Map<string, string>;
  beforeAll(async () => {
    variants = new Map(await forgedTokens(token, t.deps.config.jwtSecret));
  });

  it.each(['HS256 signed with another secret', 'expired', 'alg none', 'HS512 with the right secret', 'RS256 header over the HS256 signature', 'wrong aud'])(
    '%s',
    async (name) => {
      const forged = variants.get(name);
      expect(forged, `forged-tokens.ts provides "${name}"`).toBeDefined();
      const message = await expectRejected(forged!, `forged: ${name}`);
      if (name === 'expired') expect(message).toMatch(/expired/);
    },
  );

  it('every other variant of forged-tokens.ts', async () => {
    for (const [name, forged] of variants) await expectRejected(forged, `forged (all): ${name}`);
  });

  it('a session that was logged out', async () => {
    const fresh = await signIn(t, email, password);
    const client = await connect(t, fresh);
    expect((await ok(client, 'whoami')).email).toBe(email); // works before the logout
    await client.close();
    const out = await fetch(`${t.url}/auth/v1/logout?scope=local`, {
      method: 'POST',
      headers: { apikey: t.deps.config.anonKey, authorization: `Bearer ${fresh}` },
    });
    expect(out.status).toBe(204);
    expect(await expectRejected(fresh, 'logged out')).toMatch(/[Ss]ession/);
    // the other session of the same user is untouched
    const res = await rawPost(t, createCall('after logout'), { authorization: `Bearer ${token}` });
    expect(res.status).toBe(200);
  });
});

describe('HTTP details', () => {
  it('GET and DELETE /mcp → 405 with a JSON-RPC error', async () => {
    for (const method of ['GET', 'DELETE']) {
      const res = await fetch(`${t.url}/mcp`, { method, headers: { authorization: `Bearer ${token}` } });
      expect(res.status).toBe(405);
      expect(res.headers.get('allow')).toBe('POST');
      expect(await res.json()).toEqual({ jsonrpc: '2.0', error: { code: -32000, message: expect.any(String) }, id: null });
    }
  });

  it('a body that is not JSON → 400 with a JSON-RPC parse error', async () => {
    const res = await rawPost(t, '{"jsonrpc": "2.0", ', { authorization: `Bearer ${token}` });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ jsonrpc: '2.0', error: { code: -32700, message: expect.any(String) }, id: null });
  });

  it('the running app serves the metadata at the URL the 401 names, pointing at the identity platform', async () => {
    const res = await rawPost(t, createCall('metadata'), {});
    const url = /resource_metadata="([^"]+)"/.exec(res.headers.get('www-authenticate') ?? '')?.[1];
    expect(url).toBe(metadataUrl());
    const doc = await fetch(url!);
    expect(doc.status).toBe(200);
    expect(await doc.json()).toEqual({
      resource: `${t.url}/mcp`,
      resource_name: 'Learning content authoring (MCP)',
      authorization_servers: [`${t.url}/auth/v1`],
      scopes_supported: ['authoring'],
      bearer_methods_supported: ['header'],
    });
  });

  it('serves the RFC 9728 protected-resource metadata the 401 points to', async () => {
    const app = Fastify();
    await app.register(protectedResourceMetadata, t.deps);
    try {
      for (const url of ['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/mcp']) {
        const res = await app.inject({ method: 'GET', url });
        expect(res.statusCode).toBe(200);
        expect(res.json()).toEqual({
          resource: `${t.url}/mcp`,
          resource_name: 'Learning content authoring (MCP)',
          authorization_servers: [`${t.url}/auth/v1`],
          scopes_supported: ['authoring'],
          bearer_methods_supported: ['header'],
        });
      }
    } finally {
      await app.close();
    }
  });
});
