/**
 * OpenTelemetry traces (issue #15), opt-in through the standard environment
 * (https://opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/): tracing
 * starts when `OTEL_TRACES_EXPORTER` names an exporter other than `none`, or an OTLP endpoint is
 * set (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`), and
 * `OTEL_SDK_DISABLED` is not `true`. Everything else (sampler, resource, headers, protocol) is the
 * SDK's own reading of `OTEL_*`; the service name defaults to `learning-content-service`.
 *
 * What is traced: inbound HTTP (`@opentelemetry/instrumentation-http`) with Fastify's request,
 * hook and handler spans under it (`@fastify/otel`, carrying the request id as `svc.request_id`);
 * outbound `fetch` (`@opentelemetry/instrumentation-undici`: the judge's model calls, IdP JWKS,
 * page fetches); every database statement and transaction (`tracedDb` — neither PGlite nor
 * node-postgres-through-our-interface has its own instrumentation); MCP tool calls, grading jobs
 * and model calls (src/telemetry/instrument.ts).
 *
 * `startTracing` must run before Fastify is imported (the HTTP instrumentation patches `node:http`
 * as it loads), so src/main.ts calls it first and imports the app afterwards.
 */
import { SpanStatusCode, trace, type Attributes, type Span } from '@opentelemetry/api';
import type { Db, Queryable } from '../db/index.ts';
import { SERVICE_NAME, VERSION } from '../version.ts';

export const tracer = trace.getTracer(SERVICE_NAME, VERSION);

let enabled = false;

/** Paths whose inbound requests get no span. */
const UNTRACED = new Set(['/metrics', '/livez', '/readyz']);

/**
 * A query string with every value replaced by `REDACTED` (names kept, `?` and order as given):
 * query strings here carry API keys (`?apikey=`), authorization codes, states and tokens, which
 * must not leave the process in spans any more than in logs (docs/operations.md). The
 * instrumentations' own redaction (`redactedQueryParams`) is a list of names; this is all of them.
 */
export function redactQuery(query: string): string {
  const [mark, rest] = query.startsWith('?') ? ['?', query.slice(1)] : ['', query];
  if (rest === '') return query;
  return (
    mark +
    rest
      .split('&')
      .map((pair) => (pair === '' ? pair : `${pair.split('=')[0]}=REDACTED`))
      .join('&')
  );
}

/** `url` (absolute, or a path) with its query string's values redacted (`redactQuery`). */
export function redactUrl(url: string): string {
  const at = url.indexOf('?');
  return at < 0 ? url : url.slice(0, at) + redactQuery(url.slice(at));
}

/** Whether a tracer provider is live in this process (the SDK started, or a test installed one). */
export const tracingEnabled = (): boolean => enabled;

/** Mark tracing live for apps built from now on, with a provider the caller registered (tests, embedders). */
export function useTracing(): void {
  enabled = true;
}

/** Whether the `OTEL_*` environment asks for traces (see the module comment). */
export function wantsTraces(env: NodeJS.ProcessEnv): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  const exporter = env.OTEL_TRACES_EXPORTER?.trim();
  if (exporter) return exporter !== 'none';
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
}

/**
 * Start the OpenTelemetry Node SDK when `env` asks for traces; resolves with its shutdown
 * (flushes pending spans), or undefined when tracing stays off. The SDK is imported only then.
 */
export async function startTracing(env: NodeJS.ProcessEnv = process.env): Promise<(() => Promise<void>) | undefined> {
  if (!wantsTraces(env)) return undefined;
  const [{ NodeSDK }, { HttpInstrumentation }, { UndiciInstrumentation }] = await Promise.all([
    import('@opentelemetry/sdk-node'),
    import('@opentelemetry/instrumentation-http'),
    import('@opentelemetry/instrumentation-undici'),
  ]);
  const sdk = new NodeSDK({
    serviceName: env.OTEL_SERVICE_NAME ?? SERVICE_NAME,
    instrumentations: [
      // Scrapes and probes are not traced: they would outnumber the requests worth seeing.
      // No query value reaches a span (redactQuery): inbound `url.query`, outbound `url.full`/`url.query`.
      new HttpInstrumentation({
        ignoreIncomingRequestHook: (req) => UNTRACED.has((req.url ?? '').split('?')[0]!),
        startIncomingSpanHook: (req) => (req.url?.includes('?') ? { 'url.query': redactQuery(req.url.slice(req.url.indexOf('?') + 1)) } : {}),
      }),
      new UndiciInstrumentation({
        startSpanHook: (req) => {
          const full = `${req.origin}${req.path}`;
          return full.includes('?') ? { 'url.full': redactUrl(full), 'url.query': redactQuery(full.slice(full.indexOf('?'))) } : {};
        },
      }),
    ],
  });
  sdk.start();
  enabled = true;
  return () => sdk.shutdown();
}

/**
 * Run `fn` in a new active span `name` (children nest under it); a throw marks the span as an
 * error and is rethrown. Costs next to nothing when no provider is registered (a no-op span).
 */
export function withSpan<T>(name: string, attributes: Attributes, fn: (span: Span) => Promise<T>): Promise<T> {
  return tracer.startActiveSpan(name, { attributes }, async (span) => {
    try {
      return await fn(span);
    } catch (err) {
      span.recordException(err as Error);
      span.setStatus({ code: SpanStatusCode.ERROR });
      throw err;
    } finally {
      span.end();
    }
  });
}

/** Statement text kept on a span (parameters are never recorded: they carry learners' data). */
const MAX_STATEMENT = 2000;

/** A span per statement, after the OpenTelemetry database semantic conventions (db.*). */
function statementSpan<T>(text: string, run: () => Promise<T>): Promise<T> {
  const operation = /^\s*(\w+)/.exec(text)?.[1]?.toUpperCase() ?? 'QUERY';
  return withSpan(operation, { 'db.system.name': 'postgresql', 'db.operation.name': operation, 'db.query.text': text.slice(0, MAX_STATEMENT) }, run);
}

const tracedQueryable = (q: Queryable): Queryable => ({
  query: (text, params) => statementSpan(text, () => q.query(text, params)),
  exec: (script) => statementSpan(script, () => q.exec(script)),
});

/** `db` with a span around each statement and each transaction (its statements nest under it). */
export function tracedDb(db: Db): Db {
  return {
    ...db,
    ...tracedQueryable(db),
    transaction: (fn) => withSpan('transaction', { 'db.system.name': 'postgresql' }, () => db.transaction((tx) => fn(tracedQueryable(tx)))),
  };
}

let fastifyInstrumentation: { plugin(): import('fastify').FastifyPluginCallback } | undefined;

/**
 * `@fastify/otel` for `app` (one instrumentation per process): a span per request with the route
 * template and the request id (`svc.request_id`), the handler's span under it; lifecycle hooks are
 * not given spans of their own (a dozen per request, little to learn), probes are not traced.
 */
export async function fastifyTracing(app: import('fastify').FastifyInstance): Promise<void> {
  if (!fastifyInstrumentation) {
    const { FastifyOtelInstrumentation } = await import('@fastify/otel');
    fastifyInstrumentation = new FastifyOtelInstrumentation({
      instrumentHooks: false,
      ignorePaths: ({ url }) => UNTRACED.has(url),
      requestHook: (span, request) => {
        span.setAttribute('svc.request_id', String(request.id));
        span.setAttribute('url.path', request.url.split('?')[0]!); // @fastify/otel puts the query in it
      },
    });
  }
  await app.register(fastifyInstrumentation.plugin());
}
