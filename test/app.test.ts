/** App-wide behaviour: request ids, and malformed URLs answered in each surface's error body. */
import { describe, expect, it } from 'vitest';
import { useApp } from './helpers/harness.ts';

const t = useApp();

describe('app', () => {
  it('echoes an incoming X-Request-Id and makes one otherwise', async () => {
    const mine = await fetch(`${t.url}/v1/health`, { headers: { 'x-request-id': 'req-123' } });
    expect(mine.headers.get('x-request-id')).toBe('req-123');
    const made = await fetch(`${t.url}/v1/health`);
    expect(made.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('answers a malformed URL in the body of the surface it belongs to', async () => {
    const results = await fetch(`${t.url}/v1/artifacts/%zz`);
    expect(results.status).toBe(400);
    expect(await results.json()).toEqual({
      error: { code: 'invalid_request', message: 'malformed URL', request_id: results.headers.get('x-request-id') },
    });
    const auth = await fetch(`${t.url}/auth/v1/admin/users/%zz`, { headers: { 'x-supabase-api-version': '2024-01-01' } });
    expect(auth.status).toBe(400);
    expect(await auth.json()).toEqual({ code: 'validation_failed', message: 'malformed URL' });
    const mcp = await fetch(`${t.url}/mcp/%zz`, { method: 'POST' });
    expect(mcp.status).toBe(400);
    expect(await mcp.json()).toMatchObject({ jsonrpc: '2.0', error: { code: -32600 } });
  });
});
