/**
 * Traces (issue #15): with a tracer provider registered (the SDK's in-memory exporter), one MCP
 * `tools/call` through the SDK client yields one trace — Fastify's request span carrying the
 * request id, the tool call's span under it, and the database statements of that call under the
 * tool span (the transaction, `SET`s of the caller's claims, the INSERT). Without tracing the app
 * wraps nothing (the database is the one it was given).
 */
import { node, tracing } from '@opentelemetry/sdk-node';
import { afterAll, describe, expect, it } from 'vitest';
import { redactQuery, redactUrl, useTracing } from '../../src/telemetry/tracing.ts';
import { useApp } from '../helpers/harness.ts';
import { authorClient, ok } from '../authoring/helpers.ts';

const exporter = new tracing.InMemorySpanExporter();
const provider = new node.NodeTracerProvider({ spanProcessors: [new tracing.SimpleSpanProcessor(exporter)] });
provider.register();
afterAll(() => provider.shutdown()); // registered first, so it runs after the app closes
useTracing();

type Span = tracing.ReadableSpan;
const t = useApp();

const idOf = (s: Span) => s.spanContext().spanId;
const parentOf = (s: Span) => s.parentSpanContext?.spanId;

/** `span` and everything under it, in `spans`. */
function subtree(spans: Span[], root: Span): Span[] {
  const out = [root];
  for (let i = 0; i < out.length; i++) out.push(...spans.filter((s) => parentOf(s) === idOf(out[i]!)));
  return out;
}

describe('traces', () => {
  it('one tools/call is one trace: request span with the request id, tool span, database spans under it', async () => {
    const a = await authorClient(t, 'acme');
    exporter.reset();
    const program = await ok(a.client, 'create_program', { tenant: 'acme', title: 'Traced' });
    await a.client.close();

    const spans = exporter.getFinishedSpans();
    const tool = spans.find((s) => s.name === 'tools/call create_program');
    expect(tool, spans.map((s) => s.name).join(', ')).toBeDefined();
    expect(tool!.attributes['gen_ai.tool.name']).toBe('create_program');
    const trace = spans.filter((s) => s.spanContext().traceId === tool!.spanContext().traceId);

    // Up: the tool span sits in the HTTP request's trace, whose request span names the route and request id.
    const request = trace.find((s) => s.attributes['svc.request_id'] !== undefined);
    expect(request?.attributes['http.route']).toBe('/mcp');
    expect(String(request!.attributes['svc.request_id'])).toMatch(/^[0-9a-f-]{36}$/);
    let up: Span | undefined = tool;
    while (up && parentOf(up)) up = trace.find((s) => idOf(s) === parentOf(up!));
    expect(subtree(trace, up!)).toContain(request);

    // Down: the call's transaction and its statements, the INSERT of the program among them.
    const under = subtree(trace, tool!).slice(1);
    expect(under.map((s) => s.name)).toContain('transaction');
    const insert = under.find((s) => s.name === 'INSERT' && String(s.attributes['db.query.text']).includes('programs'));
    expect(insert?.attributes['db.system.name']).toBe('postgresql');
    expect(under.filter((s) => s.attributes['db.system.name'] === 'postgresql').length).toBeGreaterThan(2);

    // Statement parameters (the title, ids) are never recorded.
    for (const s of trace) expect(JSON.stringify(s.attributes)).not.toContain(program.id);
    for (const s of trace) expect(JSON.stringify(s.attributes)).not.toContain('Traced');
  });
});

describe('query strings in spans', () => {
  it.each([
    ['apikey=sb_secret_x&code=abc', 'apikey=REDACTED&code=REDACTED'],
    ['?token=t&flag', '?token=REDACTED&flag=REDACTED'],
    ['', ''],
    ['?', '?'],
    ['a=1&&b=2', 'a=REDACTED&&b=REDACTED'],
  ])('redactQuery(%j) = %j', (query, redacted) => {
    expect(redactQuery(query)).toBe(redacted);
  });

  it('redactUrl keeps the path and names, drops the values', () => {
    expect(redactUrl('https://idp.example/jwks?key=k1&sig=s')).toBe('https://idp.example/jwks?key=REDACTED&sig=REDACTED');
    expect(redactUrl('/v1/health')).toBe('/v1/health');
  });
});
