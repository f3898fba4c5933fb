/**
 * Helpers of the OAuth tests: an in-memory `OAuthClientProvider` for the MCP SDK client, the
 * browser's part of the flow done with plain HTTP (GET the authorize URL, fill the sign-in form,
 * press Allow or Deny), PKCE values, and a loopback https server for Client ID Metadata Documents.
 */
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { TestApp } from '../../helpers/harness.ts';

export const REDIRECT = 'http://127.0.0.1:33418/callback';

/** An MCP host's OAuth state, in memory; `authorizationUrl` is where it would send the browser. */
export class MemoryProvider implements OAuthClientProvider {
  client?: OAuthClientInformationMixed;
  saved?: OAuthTokens;
  verifier = '';
  authorizationUrl?: URL;
  constructor(
    readonly redirect = REDIRECT,
    readonly clientMetadataUrl?: string,
  ) {}
  get redirectUrl() {
    return this.redirect;
  }
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'Test MCP host',
      redirect_uris: [this.redirect],
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
    };
  }
  state() {
    return randomBytes(8).toString('hex');
  }
  clientInformation() {
    return this.client;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.client = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(v: string) {
    this.verifier = v;
  }
  codeVerifier() {
    return this.verifier;
  }
}

/** The hidden fields of the page's form. */
export function hiddenFields(html: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) out[m[1]!] = m[2]!;
  return out;
}

const form = (fields: Record<string, string>) => ({
  method: 'POST',
  headers: { 'content-type': 'application/x-www-form-urlencoded' },
  body: new URLSearchParams(fields).toString(),
  redirect: 'manual' as const,
});

/** What the browser sees after the last step: the client's redirect (code or error) or a page. */
export interface BrowseResult {
  status: number;
  location?: URL;
  html?: string;
  code?: string;
}

/**
 * Be the browser: open `authorizeUrl`, sign in with `email`/`password`, then (unless consent
 * is already stored) press `decision`. Stops early, returning the page, when a step is not 200.
 */
export async function browse(authorizeUrl: URL | string, email: string, password: string, decision: 'allow' | 'deny' = 'allow'): Promise<BrowseResult> {
  const authorize = await fetch(authorizeUrl, { redirect: 'manual' });
  if (authorize.status !== 200) return result(authorize);
  const signInHtml = await authorize.text();
  const base = new URL(authorize.url);
  const signIn = await fetch(new URL('sign-in', base), form({ ...hiddenFields(signInHtml), email, password }));
  if (signIn.status !== 200) return result(signIn);
  const consentHtml = await signIn.text();
  if (!consentHtml.includes('name="decision"')) return { status: 200, html: consentHtml };
  const decided = await fetch(new URL('decision', base), form({ ...hiddenFields(consentHtml), decision }));
  return result(decided);
}

async function result(res: Response): Promise<BrowseResult> {
  const location = res.headers.get('location');
  if (location) {
    const url = new URL(location);
    return { status: res.status, location: url, code: url.searchParams.get('code') ?? undefined };
  }
  return { status: res.status, html: await res.text() };
}

/** A PKCE pair (RFC 7636): a verifier and its S256 challenge. */
export function pkce() {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/** Register a public client by RFC 7591; returns its client_id. */
export async function register(t: TestApp, redirectUris = [REDIRECT]): Promise<string> {
  const res = await fetch(`${t.url}/auth/v1/oauth/clients/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_name: 'Raw client', redirect_uris: redirectUris, token_endpoint_auth_method: 'none' }),
  });
  if (res.status !== 201) throw new Error(`register: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { client_id: string }).client_id;
}

/** The authorize URL of a raw flow, with every required parameter unless overridden (null drops one). */
export function authorizeUrl(t: TestApp, clientId: string, challenge: string, overrides: Record<string, string | null> = {}): URL {
  const url = new URL(`${t.url}/auth/v1/oauth/authorize`);
  const params: Record<string, string | null> = {
    response_type: 'code',
    client_id: clientId,
    redirect_uri: REDIRECT,
    code_challenge: challenge,
    code_challenge_method: 'S256',
    resource: `${t.url}/mcp`,
    scope: 'authoring',
    state: 'st-1',
    ...overrides,
  };
  for (const [k, v] of Object.entries(params)) if (v !== null) url.searchParams.set(k, v);
  return url;
}

/** POST /oauth/token with form `fields`; returns status and JSON body. */
export async function token(t: TestApp, fields: Record<string, string>) {
  const res = await fetch(`${t.url}/auth/v1/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(fields).toString(),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Record<string, string | number> };
}

/** A full raw flow up to the token response: register (unless `clientId`), authorize, sign in, allow, redeem. */
export async function rawFlow(t: TestApp, email: string, password: string, clientId?: string) {
  const id = clientId ?? (await register(t));
  const { verifier, challenge } = pkce();
  const browsed = await browse(authorizeUrl(t, id, challenge), email, password);
  if (!browsed.code) throw new Error(`no code: ${browsed.status} ${browsed.location ?? browsed.html?.slice(0, 300)}`);
  const redeemed = await token(t, {
    grant_type: 'authorization_code',
    code: browsed.code,
    redirect_uri: REDIRECT,
    client_id: id,
    code_verifier: verifier,
    resource: `${t.url}/mcp`,
  });
  return { clientId: id, verifier, code: browsed.code, ...redeemed };
}

/**
 * A loopback https server (self-signed certificate for 127.0.0.1 made with openssl) answering
 * `handler`; `ca` is its certificate, for `Config.fetchCa`.
 */
export async function httpsServer(handler: Parameters<typeof createServer>[1]): Promise<{ url: string; ca: string; server: Server; close(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-cimd-'));
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=127.0.0.1',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
      ],
      { stdio: 'ignore' },
    );
    const key = readFileSync(join(dir, 'key.pem'), 'utf8');
    const cert = readFileSync(join(dir, 'cert.pem'), 'utf8');
    const server = createServer({ key, cert }, handler);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    return { url: `https://127.0.0.1:${port}`, ca: cert, server, close: () => new Promise((r) => server.close(() => r())) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
