/**
 * DNS-rebinding protection of `/mcp` (MCP Streamable HTTP transport: servers MUST validate
 * Origin): a foreign `Origin`, or — the service listens on loopback here — a foreign `Host`, is
 * answered 403 before anything else (authentication included); the service's own origin, the
 * configured `SVC_MCP_ALLOWED_ORIGINS`, and requests without `Origin` (non-browser clients) pass.
 * Sent with node:http, which lets a test set `Host` as a rebinding browser would.
 */
import { request } from 'node:http';
import { beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { rebindingRefusal } from '../../src/authoring/origin.ts';
import { seedAuthor, startApp, useApp } from '../helpers/harness.ts';
import { signIn } from './helpers.ts';

const ALLOWED = 'https://studio.example.com';
const t = useApp(() => startApp({ mcpAllowedOrigins: [ALLOWED] }));
let token: string;
let port: number;

beforeAll(async () => {
  const author = await seedAuthor(t, 'acme');
  token = await signIn(t, author.email, author.password);
  port = Number(new URL(t.url).port);
});

const INITIALIZE = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'origin-test', version: '1' } },
});

/** POST (or another method) /mcp with exactly these headers; resolves status and parsed body. */
function send(headers: Record<string, string>, method = 'POST', withToken = true): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path: '/mcp',
        method,
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...(withToken ? { authorization: `Bearer ${token}` } : {}),
          ...headers,
        },
      },
      (res) => {
        let text = '';
        res.on('data', (chunk) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode!, body: text ? JSON.parse(text) : undefined }));
      },
    );
    req.on('error', reject);
    req.end(method === 'POST' ? INITIALIZE : undefined);
  });
}

describe('requests that pass', () => {
  it.each([
    ['no Origin (an SDK, Claude Code, the Inspector CLI)', () => ({})],
    ["the service's own origin", () => ({ origin: new URL(t.url).origin })],
    ['a configured origin (SVC_MCP_ALLOWED_ORIGINS)', () => ({ origin: ALLOWED })],
    ['Host localhost on any port', () => ({ host: 'localhost:1234' })],
    ['Host of a configured origin (behind a proxy that keeps Host)', () => ({ host: 'studio.example.com', origin: ALLOWED })],
  ])('%s', async (_what, headers) => {
    const { status, body } = await send(headers());
    expect(status).toBe(200);
    expect(body.result.serverInfo).toBeDefined();
  });
});

describe('requests refused with 403', () => {
  it.each([
    ['a foreign Origin', { origin: 'http://evil.example' }],
    ['a foreign Origin on our host name and another port', { origin: 'http://127.0.0.1:1' }],
    ['Origin null (sandboxed frames, file: pages)', { origin: 'null' }],
    ['a foreign Host without Origin (a rebound name)', { host: 'evil.example' }],
    ['a foreign Host with its own Origin', { host: 'evil.example:8080', origin: 'http://evil.example:8080' }],
  ])('%s', async (_what, headers) => {
    const { status, body } = await send(headers);
    expect(status).toBe(403);
    expect(body).toEqual({ jsonrpc: '2.0', error: { code: -32000, message: expect.stringMatching(/^Forbidden: .*DNS-rebinding protection/) }, id: null });
  });

  it('before authentication: no token still gets 403, not 401', async () => {
    expect((await send({ origin: 'http://evil.example' }, 'POST', false)).status).toBe(403);
    expect((await send({}, 'POST', false)).status).toBe(401);
  });

  it('on every method of /mcp', async () => {
    expect((await send({ origin: 'http://evil.example' }, 'GET')).status).toBe(403);
    expect((await send({}, 'GET')).status).toBe(405);
  });
});

describe('the rule', () => {
  it("takes the service's own loopback origin under another loopback name, and nothing like it", () => {
    const local = { baseUrl: 'http://127.0.0.1:8787', host: '127.0.0.1', mcpAllowedOrigins: [] };
    for (const origin of ['http://127.0.0.1:8787', 'http://localhost:8787', 'http://[::1]:8787']) {
      expect(rebindingRefusal(local, origin, 'localhost:8787'), origin).toBeUndefined();
    }
    for (const origin of [
      'http://localhost:3000',
      'https://localhost:8787',
      'http://127.evil.example:8787',
      'http://localhost.evil.example:8787',
      'http://localhost:8787/',
      'null',
    ]) {
      expect(rebindingRefusal(local, origin, 'localhost:8787'), origin).toMatch(/origin/);
    }
    // A public BASE_URL takes no loopback origin.
    expect(rebindingRefusal({ ...local, baseUrl: 'https://svc.example.com', host: '0.0.0.0' }, 'http://localhost:443', undefined)).toMatch(/origin/);
  });

  it('checks Host only when the service listens on loopback', () => {
    const config = { baseUrl: 'https://svc.example.com', mcpAllowedOrigins: [] };
    expect(rebindingRefusal({ ...config, host: '0.0.0.0' }, undefined, 'anything.example')).toBeUndefined();
    expect(rebindingRefusal({ ...config, host: '127.0.0.1' }, undefined, 'anything.example')).toMatch(/Host anything.example/);
    expect(rebindingRefusal({ ...config, host: '127.0.0.1' }, undefined, 'svc.example.com')).toBeUndefined();
    expect(rebindingRefusal({ ...config, host: '0.0.0.0' }, 'https://svc.example.com', undefined)).toBeUndefined();
    expect(rebindingRefusal({ ...config, host: '0.0.0.0' }, 'https://svc.example.com:444', undefined)).toMatch(/origin/);
  });

  it('reads SVC_MCP_ALLOWED_ORIGINS as a list of origins', () => {
    const server = {
      DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/x',
      SVC_JWT_SECRET: 'k8Jd0s9QmZ2v7Xw4Lr1Tn6Bc3Yp5Hf0Ga8Ue2Ri9Ow7',
      SVC_ANON_KEY: 'sb_publishable_Q2w9Er4Ty7Ui1Op3',
      SVC_SERVICE_ROLE_KEY: 'sb_secret_Zx5Cv8Bn2Mm4Lk6Jh9Gf',
    };
    expect(loadConfig(server).mcpAllowedOrigins).toEqual([]);
    expect(loadConfig({ ...server, SVC_MCP_ALLOWED_ORIGINS: 'https://a.example, http://localhost:6274' }).mcpAllowedOrigins).toEqual([
      'https://a.example',
      'http://localhost:6274',
    ]);
    expect(() => loadConfig({ ...server, SVC_MCP_ALLOWED_ORIGINS: '*' })).toThrow(ConfigError);
    expect(() => loadConfig({ ...server, SVC_MCP_ALLOWED_ORIGINS: 'https://a.example/path' })).toThrow(/SVC_MCP_ALLOWED_ORIGINS/);
  });
});
