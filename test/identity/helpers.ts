/**
 * Helpers for the identity tests: raw HTTP calls to /auth/v1 as a client would make them, the
 * identity part of the test config, an MCP `initialize` with a bearer token, and row counts.
 */
import type { IdentityConfig } from '../../src/config.ts';
import { testConfig, type TestApp } from '../helpers/harness.ts';

export const V2024 = '2024-01-01';

/** The harness's identity settings with `changes` applied (rate limits merged one level deep). */
export function identityConfig(
  changes: Partial<Omit<IdentityConfig, 'rateLimit'>> & { rateLimit?: Partial<IdentityConfig['rateLimit']> } = {},
): IdentityConfig {
  const base = testConfig().identity;
  return { ...base, ...changes, rateLimit: { ...base.rateLimit, ...changes.rateLimit } };
}

export interface CallOptions {
  method?: string;
  /** A JSON body (serialised here) or a raw string. */
  body?: unknown;
  /** `anon` (default), `service`, `none` or a literal apikey. */
  key?: 'anon' | 'service' | 'none' | (string & {});
  bearer?: string;
  /** X-Supabase-Api-Version; default 2024-01-01, `null` for none. */
  version?: string | null;
  headers?: Record<string, string>;
}

/** Call `/auth/v1{path}`. */
export function auth(t: TestApp, path: string, o: CallOptions = {}): Promise<Response> {
  const headers: Record<string, string> = { ...o.headers };
  const key = o.key ?? 'anon';
  if (key === 'anon') headers.apikey = t.deps.config.anonKey;
  else if (key === 'service') headers.apikey = t.deps.config.serviceRoleKey;
  else if (key !== 'none') headers.apikey = key;
  if (o.bearer) headers.authorization = `Bearer ${o.bearer}`;
  if (o.version !== null) headers['x-supabase-api-version'] = o.version ?? V2024;
  let body: string | undefined;
  if (o.body !== undefined) {
    body = typeof o.body === 'string' ? o.body : JSON.stringify(o.body);
    headers['content-type'] ??= 'application/json';
  }
  return fetch(`${t.url}/auth/v1${path}`, { method: o.method ?? (body === undefined ? 'GET' : 'POST'), headers, body });
}

/** Password grant; returns the parsed token response (expects 200). */
export async function signIn(t: TestApp, email: string, password: string): Promise<Record<string, any>> {
  const res = await auth(t, '/token?grant_type=password', { body: { email, password } });
  const body = (await res.json()) as Record<string, any>;
  if (res.status !== 200) throw new Error(`sign-in failed: ${res.status} ${JSON.stringify(body)}`);
  return body;
}

/** Admin call with the service-role key as apikey and bearer (what supabase-js admin sends). */
export const admin = (t: TestApp, path: string, o: CallOptions = {}) => auth(t, path, { key: 'service', bearer: t.deps.config.serviceRoleKey, ...o });

/** `POST /mcp` with a JSON-RPC `initialize` and `Authorization: Bearer <token>`. */
export function mcpInitialize(t: TestApp, token: string): Promise<Response> {
  return fetch(`${t.url}/mcp`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'identity-test', version: '1.0.0' } },
    }),
  });
}

/** Rows in the identity tables, to show that a refused request wrote nothing. */
export async function identityRows(t: TestApp): Promise<Record<string, number>> {
  const [row] = await t.db.query<Record<string, number>>(
    `select (select count(*)::int from auth.users) as users, (select count(*)::int from auth.identities) as identities,
            (select count(*)::int from auth.sessions) as sessions, (select count(*)::int from auth.refresh_tokens) as refresh_tokens,
            (select count(*)::int from public.users) as svc_users`,
  );
  return row!;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
