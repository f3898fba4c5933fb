/**
 * Issue #12 "Bad input": malformed authorize parameters, unknown clients, registration bodies
 * with odd redirect URIs, huge or malformed metadata documents, form posts without CSRF, broken
 * token requests — each a clear OAuth error or page, never a 5xx, nothing half-written.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { beforeAll, describe, expect, it } from 'vitest';
import { seedAuthor, startApp, useApp, useServer } from '../../helpers/harness.ts';
import { authorizeUrl, httpsServer, pkce, register, token } from './helpers.ts';

/** Metadata documents by path, as the loopback https server answers them. */
const served: Record<string, (req: IncomingMessage, res: ServerResponse) => void> = {};

const docs = useServer(() =>
  httpsServer((req, res) => {
    const handler = served[req.url ?? ''];
    if (handler) handler(req, res);
    else res.writeHead(404).end();
  }),
);
const t = useApp(() => startApp({ fetchCa: docs.ca }));
beforeAll(async () => {
  await seedAuthor(t, 'bad-input', 'bad@input.test', 'correct horse battery');
});

const count = async (table: string) => Number((await t.db.query<{ n: number }>(`select count(*)::int as n from ${table}`))[0]!.n);

async function registerRaw(body: string, contentType = 'application/json') {
  const res = await fetch(`${t.url}/auth/v1/oauth/clients/register`, { method: 'POST', headers: { 'content-type': contentType }, body });
  return { status: res.status, body: (await res.json()) as Record<string, string> };
}

describe('registration', () => {
  it.each([
    [{ redirect_uris: ['javascript:alert(1)'] }, 'invalid_redirect_uri'],
    [{ redirect_uris: ['data:text/html,hi'] }, 'invalid_redirect_uri'],
    [{ redirect_uris: ['https://app.example/cb#frag'] }, 'invalid_redirect_uri'],
    [{ redirect_uris: ['http://app.example/cb'] }, 'invalid_redirect_uri'],
    [{ redirect_uris: ['/relative/cb'] }, 'invalid_redirect_uri'],
    [{ redirect_uris: ['https://user:pw@app.example/cb'] }, 'invalid_redirect_uri'],
    [{ redirect_uris: [] }, 'invalid_redirect_uri'],
    [{ redirect_uris: 'https://app.example/cb' }, 'invalid_redirect_uri'],
    [{}, 'invalid_redirect_uri'],
    [{ redirect_uris: Array.from({ length: 11 }, (_, i) => `https://app.example/${i}`) }, 'invalid_redirect_uri'],
    [{ redirect_uris: ['https://app.example/cb'], client_name: 'x'.repeat(201) }, 'invalid_client_metadata'],
    [{ redirect_uris: ['https://app.example/cb'], client_uri: 'javascript:x' }, 'invalid_client_metadata'],
    [{ redirect_uris: ['https://app.example/cb'], grant_types: ['client_credentials'] }, 'invalid_client_metadata'],
    [{ redirect_uris: ['https://app.example/cb'], response_types: ['token'] }, 'invalid_client_metadata'],
  ])('%j → 400 %s, nothing stored', async (body, error) => {
    const before = await count('auth.oauth_clients');
    const res = await registerRaw(JSON.stringify(body));
    expect(res.status).toBe(400);
    expect(res.body.error).toBe(error);
    expect(res.body.error_description).toBeTruthy();
    expect(await count('auth.oauth_clients')).toBe(before);
  });

  it('accepts native-app redirect URIs: loopback http, https, private-use schemes', async () => {
    const res = await registerRaw(
      JSON.stringify({
        redirect_uris: ['http://localhost/cb', 'http://[::1]:9/cb', 'https://claude.ai/api/mcp/auth_callback', 'cursor://anysphere.cursor-mcp/oauth/callback'],
      }),
    );
    expect(res.status).toBe(201);
    expect(res.body.token_endpoint_auth_method).toBe('none');
  });

  it('malformed JSON, a body that is not an object, a huge body: OAuth errors', async () => {
    expect((await registerRaw('{"redirect_uris": [')).body.error).toBe('invalid_request');
    expect((await registerRaw('[1,2]')).body.error).toBe('invalid_client_metadata');
    const huge = await registerRaw(JSON.stringify({ redirect_uris: ['https://a.example/cb'], client_name: 'x'.repeat(70_000) }));
    expect(huge.status).toBe(413);
    expect(huge.body.error).toBe('invalid_request');
  });
});

describe('authorize', () => {
  const page = async (url: URL) => {
    const res = await fetch(url, { redirect: 'manual' });
    return { status: res.status, location: res.headers.get('location'), type: res.headers.get('content-type'), html: await res.text() };
  };

  it('no client_id, an unknown or malformed one, a repeated one: a page (400), no redirect, nothing stored', async () => {
    const before = await count('auth.oauth_authorizations');
    const id = await register(t);
    for (const client of [null, '00000000-0000-4000-8000-000000000000', 'not-a-client', `${'x'.repeat(3000)}`]) {
      const res = await page(authorizeUrl(t, client ?? '', pkce().challenge, client === null ? { client_id: null } : {}));
      expect(res.status, String(client)).toBe(400);
      expect(res.location).toBeNull();
      expect(res.type).toMatch(/^text\/html/);
    }
    const twice = authorizeUrl(t, id, pkce().challenge);
    twice.searchParams.append('client_id', id);
    expect((await page(twice)).status).toBe(400);
    expect(await count('auth.oauth_authorizations')).toBe(before);
  });

  it.each([
    [{ response_type: null }, 'invalid_request'],
    [{ response_type: 'token' }, 'unsupported_response_type'],
    [{ code_challenge: 'short' }, 'invalid_request'],
    [{ code_challenge: `${'a'.repeat(42)}=` }, 'invalid_request'],
    [{ state: 'x'.repeat(3000) }, 'invalid_request'],
  ])('%j → redirected with %s', async (overrides, error) => {
    const id = await register(t);
    const res = await page(authorizeUrl(t, id, pkce().challenge, overrides));
    expect(res.status).toBe(302);
    expect(new URL(res.location!).searchParams.get('error')).toBe(error);
  });

  it('a repeated parameter is invalid_request; an unknown scope gets the default', async () => {
    const id = await register(t);
    const url = authorizeUrl(t, id, pkce().challenge);
    url.searchParams.append('scope', 'authoring');
    expect(new URL((await page(url)).location!).searchParams.get('error')).toBe('invalid_request');
    const unknown = await page(authorizeUrl(t, id, pkce().challenge, { scope: 'openid profile' }));
    expect(unknown.status).toBe(200);
    const none = await page(authorizeUrl(t, id, pkce().challenge, { scope: null }));
    expect(none.status).toBe(200);
  });

  it('form posts without or with a broken CSRF value, unknown authorizations, odd fields: pages, never 5xx', async () => {
    const post = (path: string, body: string) =>
      fetch(`${t.url}/auth/v1/oauth/${path}`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body, redirect: 'manual' });
    for (const [path, body] of [
      ['sign-in', 'email=a%40b.c&password=x'],
      ['sign-in', 'authorization_id=nope&csrf=x'],
      ['sign-in', 'authorization_id=00000000-0000-4000-8000-000000000000&csrf=x'],
      ['decision', 'authorization_id=00000000-0000-4000-8000-000000000000&decision=allow'],
      ['sign-in', 'authorization_id=a&authorization_id=b'],
      ['decision', '%%%'],
    ] as const) {
      const res = await post(path, body);
      expect(res.status, `${path} ${body}`).toBeGreaterThanOrEqual(400);
      expect(res.status, `${path} ${body}`).toBeLessThan(500);
      expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    }
  });
});

describe('Client ID Metadata Documents', () => {
  const doc = (path: string, body: string, headers: Record<string, string> = { 'content-type': 'application/json' }, status = 200) => {
    served[path] = (_req, res) => res.writeHead(status, headers).end(body);
    return `${docs.url}${path}`;
  };
  const valid = (url: string) => JSON.stringify({ client_id: url, client_name: 'Doc', redirect_uris: ['http://127.0.0.1:33418/callback'] });

  it.each([
    ['/huge.json', (u: string) => JSON.stringify({ client_id: u, redirect_uris: ['http://127.0.0.1:1/cb'], pad: 'x'.repeat(10_000) }), 'larger than'],
    ['/malformed.json', () => '{"client_id":', 'not valid JSON'],
    ['/other.json', () => JSON.stringify({ client_id: 'https://elsewhere.example/c.json', redirect_uris: ['http://127.0.0.1:1/cb'] }), 'must name itself'],
    ['/secret.json', (u: string) => JSON.stringify({ client_id: u, redirect_uris: ['http://127.0.0.1:1/cb'], client_secret: 's' }), 'secret'],
    ['/js.json', (u: string) => JSON.stringify({ client_id: u, redirect_uris: ['javascript:alert(1)'] }), 'not valid'],
    [
      '/auth.json',
      (u: string) => JSON.stringify({ client_id: u, redirect_uris: ['http://127.0.0.1:1/cb'], token_endpoint_auth_method: 'private_key_jwt' }),
      'public clients',
    ],
  ])('%s is refused on a page, nothing cached', async (path, body, why) => {
    const url = doc(path, body(`${docs.url}${path}`));
    const before = await count('auth.oauth_clients');
    const res = await fetch(authorizeUrl(t, url, pkce().challenge), { redirect: 'manual' });
    expect(res.status).toBe(400);
    expect(res.headers.get('location')).toBeNull();
    expect(await res.text()).toContain(why);
    expect(await count('auth.oauth_clients')).toBe(before);
  });

  it('a redirect, an HTML answer, a 404: refused', async () => {
    const target = doc('/target.json', valid(`${docs.url}/target.json`));
    const moved = doc('/moved.json', '', { location: target }, 302);
    const html = doc('/page.json', '<html></html>', { 'content-type': 'text/html' });
    for (const url of [moved, html, `${docs.url}/missing.json`]) {
      const res = await fetch(authorizeUrl(t, url, pkce().challenge), { redirect: 'manual' });
      expect(res.status, url).toBe(400);
      expect(res.headers.get('location')).toBeNull();
    }
  });

  it('a document on a private address is refused when private fetches are off (production)', async () => {
    const url = doc('/private.json', valid(`${docs.url}/private.json`));
    const prod = await startApp({ fetchCa: docs.ca, fetchAllowPrivate: false }, { db: t.db });
    try {
      const res = await fetch(authorizeUrl(prod, url, pkce().challenge), { redirect: 'manual' });
      expect(res.status).toBe(400);
      expect(await res.text()).toContain('private address');
    } finally {
      await prod.app.close();
    }
  });
});

describe('token', () => {
  it.each([
    [{}, 400, 'invalid_request'],
    [{ grant_type: 'password' }, 400, 'unsupported_grant_type'],
    [{ grant_type: 'authorization_code' }, 401, 'invalid_client'],
    [{ grant_type: 'authorization_code', client_id: 'unknown' }, 401, 'invalid_client'],
  ])('%j → %i %s', async (fields, status, error) => {
    const res = await token(t, fields as Record<string, string>);
    expect(res.status).toBe(status);
    expect(res.body.error).toBe(error);
    expect(res.headers.get('cache-control')).toBe('no-store');
  });

  it('missing code or verifier, a malformed verifier, a repeated parameter, a JSON body, a text body', async () => {
    const id = await register(t);
    expect((await token(t, { grant_type: 'authorization_code', client_id: id, code_verifier: pkce().verifier })).body.error).toBe('invalid_request');
    expect((await token(t, { grant_type: 'authorization_code', client_id: id, code: 'x' })).body.error).toBe('invalid_request');
    expect((await token(t, { grant_type: 'authorization_code', client_id: id, code: 'x', code_verifier: 'short' })).body.error).toBe('invalid_request');
    expect((await token(t, { grant_type: 'authorization_code', client_id: id, code: 'nope', code_verifier: pkce().verifier })).body.error).toBe(
      'invalid_grant',
    );
    const twice = await fetch(`${t.url}/auth/v1/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: `grant_type=refresh_token&client_id=${id}&refresh_token=a&refresh_token=b`,
    });
    expect(((await twice.json()) as { error: string }).error).toBe('invalid_request');
    const json = await fetch(`${t.url}/auth/v1/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ grant_type: 'refresh_token', client_id: id, refresh_token: 'x'.repeat(40) }),
    });
    expect(((await json.json()) as { error: string }).error).toBe('invalid_grant');
    const text = await fetch(`${t.url}/auth/v1/oauth/token`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'grant_type=x' });
    expect(text.status).toBe(400);
    expect(((await text.json()) as { error: string }).error).toBe('invalid_request');
  });
});
