/**
 * Issue #12 "Show that it works": the real MCP SDK client, with its own OAuth flow
 * (`StreamableHTTPClientTransport` + an `OAuthClientProvider`), starting from nothing but the
 * /mcp URL: 401 → discovery → registration (dynamic, or a Client ID Metadata Document served by a
 * loopback https server) → authorize → sign-in → consent → code → token → `whoami`; then, the
 * access token expired (moved clock), a refresh and another call.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { decodeJwt } from 'jose';
import { seedAuthor, startApp, useApp, useServer } from '../../helpers/harness.ts';
import { browse, httpsServer, MemoryProvider } from './helpers.ts';

let offset = 0;
let cimdFetches = 0;
const author = { email: 'ada@oauth.test', password: 'correct horse battery' };

const cimd = useServer(() =>
  httpsServer((_req, res) => {
    cimdFetches++;
    const url = `${cimdUrl()}`;
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=600' });
    res.end(
      JSON.stringify({ client_id: url, client_name: 'Metadata host', redirect_uris: ['http://localhost:33418/callback'], token_endpoint_auth_method: 'none' }),
    );
  }),
);
const t = useApp(() => startApp({ accessTokenTtl: 60, fetchCa: cimd.ca }, { now: () => new Date(Date.now() + offset) }));
beforeAll(async () => {
  await seedAuthor(t, 'oauth-tenant', author.email, author.password);
});

const cimdUrl = () => `${cimd.url}/clients/host.json`;

async function connect(provider: MemoryProvider) {
  const client = new Client({ name: 'oauth-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${t.url}/mcp`), { authProvider: provider }));
  return client;
}

/** 401 → … → code, then finishAuth; returns a connected client. */
async function authorizeWithSdk(provider: MemoryProvider) {
  const transport = new StreamableHTTPClientTransport(new URL(`${t.url}/mcp`), { authProvider: provider });
  const first = new Client({ name: 'oauth-test', version: '1.0.0' });
  await expect(first.connect(transport)).rejects.toBeInstanceOf(UnauthorizedError);
  expect(provider.authorizationUrl, 'the SDK was sent to the authorize endpoint').toBeDefined();
  const browsed = await browse(provider.authorizationUrl!, author.email, author.password);
  expect(browsed.status).toBe(303);
  expect(browsed.location!.searchParams.get('iss')).toBe(`${t.url}/auth/v1`);
  expect(browsed.location!.searchParams.get('state')).toBe(provider.authorizationUrl!.searchParams.get('state'));
  await transport.finishAuth(browsed.code!);
  return connect(provider);
}

const whoami = async (client: Client) => {
  const res = await client.callTool({ name: 'whoami', arguments: {} });
  return { user: res.structuredContent as { email: string } };
};

describe('the MCP SDK client connects by URL alone', () => {
  it('dynamic registration: 401 → discovery → register → authorize → sign-in → consent → token → whoami → refresh', async () => {
    const provider = new MemoryProvider();
    const client = await authorizeWithSdk(provider);
    expect(provider.client?.client_id).toMatch(/^[0-9a-f-]{36}$/);
    expect((await whoami(client)).user.email).toBe(author.email);

    const claims = decodeJwt(provider.saved!.access_token);
    expect(claims.aud).toBe(`${t.url}/mcp`);
    expect(claims.client_id).toBe(provider.client!.client_id);
    expect(claims.scope).toBe('authoring');
    expect(claims.iss).toBe(`${t.url}/auth/v1`);

    // The access token expires (clock moved past its 60 s); the SDK refreshes and calls again.
    const before = provider.saved!;
    offset += 120_000;
    expect((await whoami(client)).user.email).toBe(author.email);
    expect(provider.saved!.access_token).not.toBe(before.access_token);
    expect(provider.saved!.refresh_token).not.toBe(before.refresh_token);
    await client.close();
  });

  it('a Client ID Metadata Document served over https: no registration, consent names the document host', async () => {
    const provider = new MemoryProvider('http://localhost:33418/callback', cimdUrl());
    const client = await authorizeWithSdk(provider);
    expect(provider.client?.client_id).toBe(cimdUrl());
    expect((await whoami(client)).user.email).toBe(author.email);
    expect(cimdFetches).toBe(1);
    // A second host instance with the same document: cached (max-age 600), consent remembered.
    const again = new MemoryProvider('http://localhost:40001/callback', cimdUrl());
    const transport = new StreamableHTTPClientTransport(new URL(`${t.url}/mcp`), { authProvider: again });
    await expect(new Client({ name: 'x', version: '1' }).connect(transport)).rejects.toBeInstanceOf(UnauthorizedError);
    const browsed = await browse(again.authorizationUrl!, author.email, author.password);
    expect(browsed.status, 'stored consent: straight back to the client after sign-in').toBe(303);
    expect(browsed.location!.port, 'loopback redirect URI on another port').toBe('40001');
    await transport.finishAuth(browsed.code!);
    expect((await whoami(await connect(again))).user.email).toBe(author.email);
    expect(cimdFetches).toBe(1);
    await client.close();
  });
});
