/**
 * The gateway in front of /auth/v1: the `apikey` check (Supabase's gateway bodies), the echoed
 * `X-Supabase-Api-Version`, and CORS for browser clients (preflight, exposed headers, errors
 * included, an origin allow-list).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestApp, useApp } from '../helpers/harness.ts';
import { auth, identityConfig } from './helpers.ts';

const t = useApp();
beforeAll(async () => {
  await t.op('user.create', { email: 'ada@example.com', password: 'correct horse battery' });
});

const credentials = { email: 'ada@example.com', password: 'correct horse battery' };

describe('apikey', () => {
  it('missing → 401 "No API key found in request"; wrong → 401 "Invalid API key"; nothing else runs', async () => {
    for (const path of ['/token?grant_type=password', '/user', '/logout', '/admin/users']) {
      const none = await auth(t, path, { key: 'none', method: 'POST', body: credentials });
      expect(none.status, path).toBe(401);
      expect(await none.json()).toEqual({ message: 'No API key found in request' });
      const wrong = await auth(t, path, { key: `${t.deps.config.anonKey}x`, method: 'POST', body: credentials });
      expect(wrong.status, path).toBe(401);
      expect(await wrong.json()).toEqual({ message: 'Invalid API key' });
    }
    const jwtSecretAsKey = await auth(t, '/token?grant_type=password', { key: t.deps.config.jwtSecret, body: credentials });
    expect(jwtSecretAsKey.status).toBe(401);
  });

  it('either key works, also as ?apikey=', async () => {
    expect((await auth(t, '/token?grant_type=password', { body: credentials })).status).toBe(200);
    expect((await auth(t, '/token?grant_type=password', { key: 'service', body: credentials })).status).toBe(200);
    const query = await auth(t, `/token?grant_type=password&apikey=${encodeURIComponent(t.deps.config.anonKey)}`, { key: 'none', body: credentials });
    expect(query.status).toBe(200);
  });
});

describe('X-Supabase-Api-Version', () => {
  it('is echoed on answers and errors; unknown paths answer in the surface’s shape', async () => {
    const ok = await auth(t, '/token?grant_type=password', { body: credentials });
    expect(ok.headers.get('x-supabase-api-version')).toBe('2024-01-01');
    const err = await auth(t, '/user', { version: '2025-06-01' });
    expect(err.status).toBe(401);
    expect(err.headers.get('x-supabase-api-version')).toBe('2025-06-01');
    expect(await err.json()).toEqual({ code: 'no_authorization', message: 'This endpoint requires a valid Bearer token' });
    const unknown = await auth(t, '/signup', { method: 'POST', body: credentials });
    expect(unknown.status).toBe(404);
    expect(Object.keys(await unknown.json()).sort()).toEqual(['code', 'message']);
    const malformed = await auth(t, '/admin/users/%zz', { key: 'service', bearer: t.deps.config.serviceRoleKey });
    expect(malformed.status).toBe(400);
    expect(await malformed.json()).toEqual({ code: 'validation_failed', message: 'malformed URL' });
  });
});

describe('CORS', () => {
  const origin = 'https://app.example.com';
  const preflight = (app: TestApp, path: string, method = 'POST') =>
    fetch(`${app.url}/auth/v1${path}`, {
      method: 'OPTIONS',
      headers: {
        origin,
        'access-control-request-method': method,
        'access-control-request-headers': 'apikey,authorization,content-type,x-client-info,x-supabase-api-version',
      },
    });

  it('answers preflights without an apikey and allows what auth-js sends', async () => {
    for (const [path, method] of [
      ['/token?grant_type=password', 'POST'],
      ['/user', 'PUT'],
      ['/admin/users/x', 'DELETE'],
    ] as const) {
      const res = await preflight(t, path, method);
      expect(res.status, path).toBe(204);
      expect(res.headers.get('access-control-allow-origin')).toBe('*');
      expect(res.headers.get('access-control-allow-methods')).toContain(method);
      expect(res.headers.get('access-control-allow-headers')).toContain('apikey');
      expect(res.headers.get('access-control-allow-headers')).toContain('x-supabase-api-version');
    }
  });

  it('answers and errors carry the CORS headers a browser needs to read them', async () => {
    const ok = await auth(t, '/token?grant_type=password', { body: credentials, headers: { origin } });
    expect(ok.headers.get('access-control-allow-origin')).toBe('*');
    const exposed = ok.headers.get('access-control-expose-headers') ?? '';
    for (const h of ['x-sb-error-code', 'x-supabase-api-version', 'x-total-count', 'link']) expect(exposed).toContain(h);
    const gatewayError = await auth(t, '/user', { key: 'none', headers: { origin } });
    expect(gatewayError.status).toBe(401);
    expect(gatewayError.headers.get('access-control-allow-origin')).toBe('*');
    const authError = await auth(t, '/token?grant_type=password', { body: { ...credentials, password: 'wrong password' }, headers: { origin } });
    expect(authError.headers.get('access-control-allow-origin')).toBe('*');
  });

  it('with an origin allow-list, other origins get no CORS headers', async () => {
    const strict = await startApp({ identity: identityConfig({ corsOrigins: [origin] }) });
    try {
      const allowed = await preflight(strict, '/token?grant_type=password');
      expect(allowed.headers.get('access-control-allow-origin')).toBe(origin);
      const other = await fetch(`${strict.url}/auth/v1/token?grant_type=password`, {
        method: 'OPTIONS',
        headers: { origin: 'https://evil.example', 'access-control-request-method': 'POST' },
      });
      expect(other.headers.get('access-control-allow-origin')).toBeNull();
    } finally {
      await strict.close();
    }
  });
});
