/**
 * The access log (issue #15), read from a real server process at LOG_LEVEL=info: one JSON line per
 * request with method, route template, status, duration and request id — never the raw URL, a
 * query string, a header, a key, a token or a body — and none at all with SVC_ACCESS_LOG=off.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { useServerProcess, type ServerProcess } from '../helpers/server-process.ts';

const SECRET = 'tok_c2VjcmV0LXZhbHVlLXRoYXQtbXVzdC1ub3QtbGVhaw';
const ID = '0b0e6f0c-5a8b-4a53-9f6e-6f0d1d8f1a77';

const on = useServerProcess(() => ({ LOG_LEVEL: 'info' }));
const off = useServerProcess(() => ({ LOG_LEVEL: 'info', SVC_ACCESS_LOG: 'off' }));

/** The requests both servers get: ids, secrets in the query, a header and a body. */
async function traffic(url: string) {
  await fetch(`${url}/v1/health`, { headers: { 'x-request-id': 'req-health-1' } });
  await fetch(`${url}/v1/programs/${ID}?token=${SECRET}`, { headers: { authorization: `Bearer ${SECRET}` } });
  await fetch(`${url}/auth/v1/token?grant_type=password`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', apikey: SECRET },
    body: JSON.stringify({ email: 'who@example.test', password: SECRET }),
  });
  await fetch(`${url}/no/such/${ID}`);
}

/** The access lines in a server's output so far. */
const accessLines = (server: ServerProcess) =>
  server
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => l.msg === 'request');

beforeAll(async () => {
  await Promise.all([traffic(on.url), traffic(off.url)]);
});

describe('access log', () => {
  it('writes one info line per request: method, route template, status, duration, request id', async () => {
    await expect.poll(() => accessLines(on).length).toBeGreaterThanOrEqual(4);
    const lines = accessLines(on);
    expect(lines).toHaveLength(4);
    expect(lines[0]).toMatchObject({ level: 30, reqId: 'req-health-1', method: 'GET', route: '/v1/health', status: 200 });
    expect(lines[1]).toMatchObject({ method: 'GET', route: '/v1/programs/:id', status: 401 });
    expect(lines[2]).toMatchObject({ method: 'POST', route: '/auth/v1/token' });
    expect(lines[3]).toMatchObject({ method: 'GET', route: null, status: 404 });
    for (const line of lines) {
      expect(line.duration_ms).toEqual(expect.any(Number));
      expect(line.reqId).toEqual(expect.any(String));
    }
  });

  it('never logs the raw path, the query, headers, keys, tokens or bodies', () => {
    const output = on.output();
    expect(output).not.toContain(SECRET);
    expect(output).not.toContain(ID);
    expect(output).not.toContain('who@example.test');
    for (const line of accessLines(on))
      expect(Object.keys(line).sort()).toEqual(['duration_ms', 'hostname', 'level', 'method', 'msg', 'pid', 'reqId', 'route', 'status', 'time']);
  });

  it('is off with SVC_ACCESS_LOG=off', () => {
    expect(off.output()).toContain('service listening');
    expect(accessLines(off)).toEqual([]);
  });
});
