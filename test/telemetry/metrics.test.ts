/**
 * Prometheus metrics (issue #15): the real app with `SVC_METRICS_PORT`'s listener, driven through
 * its public port with real clients (MCP SDK, plain HTTP), then scraped. The scrape passes
 * Prometheus's own parser and linter (`promtool check metrics`, Debian's `prometheus` package;
 * .ci/run installs it), carries route templates (never raw paths or ids), and no tenant, user or
 * key label; the public port has no /metrics.
 */
import { spawnSync } from 'node:child_process';
import { beforeAll, describe, expect, it } from 'vitest';
import { startMetricsServer } from '../../src/telemetry/metrics-server.ts';
import { startApp, testConfig, useApp, useServer } from '../helpers/harness.ts';
import { authorClient, ok } from '../authoring/helpers.ts';

/** One sample line of the exposition text (already validated by promtool). */
interface Sample {
  name: string;
  labels: Record<string, string>;
  value: string;
}

const secrets: string[] = [];

async function scrape(): Promise<{ text: string; samples: Sample[]; types: Map<string, string> }> {
  const res = await fetch(`${metrics.url}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  const text = await res.text();
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type) types.set(type[1]!, type[2]!);
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const labels = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1]!, l[2]!]));
    samples.push({ name: m[1]!, labels, value: m[3]! });
  }
  return { text, samples, types };
}

/** The value of the sample `name` whose labels include `labels`. */
const value = (samples: Sample[], name: string, labels: Record<string, string> = {}) =>
  samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;

const t = useApp(() =>
  startApp({
    metrics: { port: 0, host: '127.0.0.1' },
    identity: {
      ...testConfig().identity,
      rateLimit: { windowSeconds: 300, signInPerIp: 3, signInPerEmail: 100, refreshPerIp: 100, registerPerIp: 100, authorizePerIpPerMinute: 100 },
    },
  }),
);
const metrics = useServer(() => startMetricsServer({ port: 0, host: '127.0.0.1' }));

beforeAll(async () => {
  // Authoring: a tool call that succeeds, one that fails, one for a tool that does not exist.
  const a = await authorClient(t, 'acme');
  secrets.push(a.token, a.tenant.id, a.user.id);
  const program = await ok(a.client, 'create_program', { tenant: 'acme', title: 'Metrics' });
  secrets.push(program.id);
  await a.client.callTool({ name: 'create_unit', arguments: { program_id: '00000000-0000-4000-8000-000000000000', title: 'U' } });
  await a.client.callTool({ name: 'no_such_tool', arguments: {} }).catch(() => {});
  await a.client.close();

  // Results API: a key, a read by id (a route with a parameter), an unknown path.
  const key = await t.op('key.create', { tenant: 'acme', name: 'dash' });
  secrets.push(key.key);
  expect((await fetch(`${t.url}/v1/programs/${program.id}`, { headers: { authorization: `Bearer ${key.key}` } })).status).toBe(200);
  expect((await fetch(`${t.url}/v1/no/such/path/${program.id}`)).status).toBe(404);

  // Identity: wrong passwords until the per-IP sign-in limit answers 429.
  for (let i = 0; i < 4; i++) {
    await fetch(`${t.url}/auth/v1/token?grant_type=password`, {
      method: 'POST',
      headers: { apikey: t.deps.config.anonKey, 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'nobody@acme.test', password: 'wrong password' }),
    });
  }
}, 60_000);

describe('/metrics', () => {
  it('is not served on the public port', async () => {
    expect((await fetch(`${t.url}/metrics`)).status).toBe(404);
    expect((await fetch(`${metrics.url}/other`)).status).toBe(404);
  });

  it("passes Prometheus's own parser and linter", async () => {
    const { text } = await scrape();
    const check = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
    expect(check.error, 'promtool is missing: apt-get install prometheus (.ci/run does)').toBeUndefined();
    const problems = (check.stdout + check.stderr).split('\n').filter(Boolean);
    expect(problems.join('\n')).not.toMatch(/parsing error/);
    // The client library's own process metrics (nodejs_*) carry lint findings of their own; ours carry none.
    expect(problems.filter((p) => !p.startsWith('nodejs_'))).toEqual([]);
  });

  it('has the request histogram by method, route template and status', async () => {
    const { samples, types } = await scrape();
    expect(types.get('http_request_duration_seconds')).toBe('histogram');
    expect(value(samples, 'http_request_duration_seconds_count', { method: 'GET', route: '/v1/programs/:id', status_code: '200' })).toBe('1');
    expect(value(samples, 'http_request_duration_seconds_count', { method: 'POST', route: '/mcp', status_code: '200' })).toBeDefined();
    const http = samples.filter((s) => s.name === 'http_request_duration_seconds_count');
    expect(http.length).toBeGreaterThan(2);
    for (const s of http) {
      expect(Object.keys(s.labels).sort()).toEqual(['method', 'route', 'status_code']);
      expect(s.labels.route).toMatch(/^\//);
      expect(s.labels.route).not.toMatch(/[0-9a-f]{8}-[0-9a-f]{4}|\?|no\/such/);
    }
  });

  it('has no tenant, user or key label, and no id or secret anywhere', async () => {
    const { text, samples } = await scrape();
    for (const s of samples) {
      for (const label of Object.keys(s.labels)) expect(label).not.toMatch(/tenant|user|key|token|email|learner|subject/);
    }
    for (const secret of secrets) expect(text).not.toContain(secret);
  });

  it("counts the service's own work: tool calls by outcome, grants, 429s, the pool and the grading queue", async () => {
    const { samples, types } = await scrape();
    expect(value(samples, 'svc_mcp_tool_calls_total', { tool: 'create_program', outcome: 'ok' })).toBe('1');
    expect(value(samples, 'svc_mcp_tool_calls_total', { tool: 'create_unit', outcome: 'error' })).toBe('1');
    expect(value(samples, 'svc_mcp_tool_calls_total', { tool: 'unknown', outcome: 'invalid' })).toBe('1');
    expect(types.get('svc_mcp_tool_call_duration_seconds')).toBe('histogram');

    expect(value(samples, 'svc_auth_grants_total', { grant_type: 'password', outcome: 'success' })).toBe('1');
    expect(value(samples, 'svc_auth_grants_total', { grant_type: 'password', outcome: 'failure' })).toBe('4');
    // 3 sign-ins per IP: the author's and two wrong ones pass, the last two are refused.
    expect(value(samples, 'svc_rate_limited_total', { surface: 'identity' })).toBe('2');

    expect(Number(value(samples, 'svc_db_pool_connections', { pool: 'primary', state: 'max' }))).toBeGreaterThanOrEqual(1);
    expect(value(samples, 'svc_db_pool_connections', { pool: 'primary', state: 'in_use' })).toBeDefined();
    expect(value(samples, 'svc_grading_queue_depth')).toBe('0');
    expect(value(samples, 'svc_grading_queue_oldest_seconds')).toBe('0');
    expect(value(samples, 'process_resident_memory_bytes')).toBeDefined();
  });
});
