/**
 * Traces opt in through the standard OpenTelemetry environment (issue #15): a real server process
 * started with `OTEL_EXPORTER_OTLP_ENDPOINT` (OTLP/HTTP JSON) sends its spans to a loopback
 * collector — the inbound HTTP server span (instrumentation-http, `traceparent` honoured), Fastify's
 * request span with the route template and the request id; no query value in any span (API keys,
 * codes and tokens travel in query strings) — and a process started without OTEL_* sends nothing.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { useServer } from '../helpers/harness.ts';
import { useServerProcess } from '../helpers/server-process.ts';

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: { key: string; value: Record<string, unknown> }[];
}

/** What the collector received on POST /v1/traces (OTLP/HTTP JSON). */
const received: OtlpSpan[] = [];
const collector = useServer(async () => {
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c));
    req.on('end', () => {
      if (req.url === '/v1/traces') {
        const doc = JSON.parse(body) as { resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[] };
        for (const rs of doc.resourceSpans) for (const ss of rs.scopeSpans) received.push(...ss.spans);
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
});

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const attr = (s: OtlpSpan, key: string) => Object.values(s.attributes.find((a) => a.key === key)?.value ?? {})[0];

const traced = useServerProcess(() => ({
  OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint,
  OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
  OTEL_BSP_SCHEDULE_DELAY: '200',
  OTEL_METRICS_EXPORTER: 'none',
  OTEL_LOGS_EXPORTER: 'none',
}));
const plain = useServerProcess();

describe('OTLP export (opt-in by OTEL_*)', () => {
  it("sends the request's trace: the server span continuing the caller's, Fastify's request span with route and request id", async () => {
    const res = await fetch(`${traced.url}/v1/health`, {
      headers: { 'x-request-id': 'otlp-req-1', traceparent: `00-${TRACE_ID}-00f067aa0ba902b7-01` },
    });
    expect(res.status).toBe(200);
    await fetch(`${traced.url}/readyz`);
    // The spans end child first and are sent in batches: wait for the two this test reads.
    await expect
      .poll(
        () => {
          const spans = received.filter((s) => s.traceId === TRACE_ID);
          return spans.some((s) => s.kind === 2) && spans.some((s) => attr(s, 'svc.request_id') === 'otlp-req-1');
        },
        { timeout: 15_000 },
      )
      .toBe(true);

    const trace = received.filter((s) => s.traceId === TRACE_ID);
    const server = trace.find((s) => s.kind === 2 /* SERVER */);
    expect(server?.parentSpanId).toBe('00f067aa0ba902b7'); // continues the caller's trace
    const request = trace.find((s) => attr(s, 'svc.request_id') === 'otlp-req-1');
    expect(attr(request!, 'http.route')).toBe('/v1/health');
    // Probes are not traced.
    expect(received.some((s) => attr(s, 'http.route') === '/readyz' || attr(s, 'http.target') === '/readyz')).toBe(false);
  });

  it('sends no query value: keys, codes and tokens in the URL are redacted in every span', async () => {
    const traceId = `${'a'.repeat(31)}b`;
    const secret = 'sb_secret_must-not-leave-the-process';
    const res = await fetch(`${traced.url}/auth/v1/settings?apikey=${secret}&code=also-secret`, {
      headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` },
    });
    expect(res.status).toBeLessThan(500);
    await expect.poll(() => received.filter((s) => s.traceId === traceId && s.kind === 2).length, { timeout: 15_000 }).toBe(1); // the server span ends last
    const spans = received.filter((s) => s.traceId === traceId);
    expect(JSON.stringify(spans)).not.toMatch(/must-not-leave|also-secret/);
    const server = spans.find((s) => s.kind === 2 /* SERVER */)!;
    expect(attr(server, 'url.query')).toBe('apikey=REDACTED&code=REDACTED');
    expect(spans.map((s) => attr(s, 'url.path')).filter(Boolean)).toEqual(expect.arrayContaining(['/auth/v1/settings']));
  });

  it('sends nothing from a process without OTEL_* settings', async () => {
    await fetch(`${plain.url}/v1/health`, { headers: { 'x-request-id': 'plain-1' } });
    await new Promise((r) => setTimeout(r, 1000));
    expect(received.some((s) => attr(s, 'svc.request_id') === 'plain-1')).toBe(false);
  });
});
