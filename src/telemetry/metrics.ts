/**
 * Prometheus metrics (issue #15), through `@prometheus-io/client` (the Prometheus team's Node.js
 * client, successor of prom-client) and `fastify-metrics` for the HTTP histogram. One registry
 * per process (`registry`), as Prometheus clients keep it; it is exposed only when
 * `SVC_METRICS_PORT` is set, on its own listener (src/telemetry/metrics-server.ts), never on the
 * public port.
 *
 * Labels are bounded sets only — a route *template*, a method, a status, a tool name from the
 * registry, an outcome from a fixed list. Never a tenant, user, key, token or raw path.
 *
 *   http_request_duration_seconds{method,route,status_code}   histogram, seconds
 *   svc_judge_submissions_total{outcome}                      accepted | replayed | refused
 *   svc_judge_verdicts_total{outcome}                         passed | failed | ungradable | error …
 *   svc_grading_queue_depth, svc_grading_queue_oldest_seconds gauges, read from pg-boss at scrape
 *   svc_model_calls_total{outcome}, svc_model_call_duration_seconds{outcome}
 *   svc_auth_grants_total{grant_type,outcome}                 success | failure
 *   svc_rate_limited_total{surface}                           429 answers, by surface
 *   svc_mcp_tool_calls_total{tool,outcome}, svc_mcp_tool_call_duration_seconds{tool}
 *   svc_db_pool_connections{pool,state}                       in_use | idle | waiting | max
 *   svc_db_replica_fallbacks_total{reason}                    unavailable | behind | stale
 * plus the client's default process metrics (CPU, RSS, heap, event-loop lag, GC) when metrics are on.
 */
import client from '@prometheus-io/client';
import type { FastifyInstance, FastifyPluginCallback, FastifyReply, FastifyRequest } from 'fastify';
import fastifyMetricsModule, { type IMetricsPluginOptions } from 'fastify-metrics';
import { subscribe } from 'node:diagnostics_channel';
import type { Db } from '../db/index.ts';
import { REPLICA_FALLBACK_CHANNEL, type FallbackReason } from '../db/replica.ts';

// fastify-metrics is CommonJS with `exports.default`: under Node's ESM interop the plugin is `.default`.
const fastifyMetrics = (fastifyMetricsModule as unknown as { default: FastifyPluginCallback<Partial<IMetricsPluginOptions>> }).default;

export const registry = new client.Registry();

/** Seconds; request latencies of this service are milliseconds to a few seconds (imports, grading). */
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

const counter = <L extends string>(name: string, help: string, labelNames: readonly L[]) =>
  new client.Counter<L>({ name, help, labelNames, registers: [registry] });

export const judgeSubmissions = counter('svc_judge_submissions_total', 'Judge submissions by outcome (accepted, replayed, refused).', ['outcome']);
export const judgeVerdicts = counter('svc_judge_verdicts_total', 'Judge verdicts recorded, by outcome.', ['outcome']);
export const modelCalls = counter('svc_model_calls_total', 'Calls to the grading model, by outcome.', ['outcome']);
export const modelCallDuration = new client.Histogram<'outcome'>({
  name: 'svc_model_call_duration_seconds',
  help: 'Duration of calls to the grading model, in seconds.',
  labelNames: ['outcome'],
  buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60],
  registers: [registry],
});
export const authGrants = counter('svc_auth_grants_total', 'Token grants by grant type and outcome (success, failure).', ['grant_type', 'outcome']);
export const rateLimited = counter('svc_rate_limited_total', 'Requests answered 429 (rate limits, budgets), by surface.', ['surface']);
export const toolCalls = counter('svc_mcp_tool_calls_total', 'MCP tools/call requests by tool and outcome (ok, error, invalid).', ['tool', 'outcome']);
/**
 * Reads meant for the read replica that the primary answered (src/db/replica.ts `fromReplica`), by
 * reason: `unavailable` (the replica is down or refusing), `behind` (it has not replayed the
 * statement functions yet, or replay cancelled the query), `stale` (its answer was older than what
 * the caller knew). A steady `unavailable` rate means the primary carries every read, each after a
 * failed try on the replica.
 */
export const replicaFallbacks = counter(
  'svc_db_replica_fallbacks_total',
  'Replica reads answered by the primary instead, by reason (unavailable, behind, stale).',
  ['reason'],
);
subscribe(REPLICA_FALLBACK_CHANNEL, (message) => replicaFallbacks.inc({ reason: (message as { reason: FallbackReason }).reason }));
export const toolCallDuration = new client.Histogram<'tool'>({
  name: 'svc_mcp_tool_call_duration_seconds',
  help: 'Duration of MCP tool calls, in seconds.',
  labelNames: ['tool'],
  buckets: LATENCY_BUCKETS,
  registers: [registry],
});

/** The databases whose pools and grading queue the gauges read at scrape time (one per app). */
const databases = new Map<Db, string>();

/** Gauges read from `databases` at scrape time; a database that fails to answer is skipped. */
new client.Gauge<'pool' | 'state'>({
  name: 'svc_db_pool_connections',
  help: 'Database connections by pool and state (in_use, idle, waiting requests, max).',
  labelNames: ['pool', 'state'],
  registers: [registry],
  collect() {
    this.reset();
    for (const [db, pool] of databases) {
      const s = db.poolStats();
      this.set({ pool, state: 'in_use' }, s.open - s.idle);
      this.set({ pool, state: 'idle' }, s.idle);
      this.set({ pool, state: 'waiting' }, s.waiting);
      this.set({ pool, state: 'max' }, s.max);
    }
  },
});

let queueName = 'embed-grading';
const queueDepth = new client.Gauge({ name: 'svc_grading_queue_depth', help: 'Grading jobs waiting (created or retry).', registers: [registry] });
new client.Gauge({
  name: 'svc_grading_queue_oldest_seconds',
  help: 'Age of the oldest waiting grading job, in seconds (0 when none waits).',
  registers: [registry],
  async collect() {
    let depth = 0;
    let age = 0;
    for (const [db, pool] of databases) {
      if (pool !== 'primary') continue;
      const [row] = await db
        .query<{ depth: number; age: number }>(
          `select count(*)::int as depth, coalesce(extract(epoch from now() - min(created_on)), 0)::float8 as age
             from pgboss.job where name = $1 and state in ('created', 'retry')`,
          [queueName],
        )
        .catch(() => [undefined]);
      if (!row) continue;
      depth += row.depth;
      age = Math.max(age, row.age);
    }
    queueDepth.set(depth);
    this.set(age);
  },
});

/**
 * Let the gauges read `db` (its pool as `pool`, and — for the primary — the grading queue named
 * `queue`) until the returned function is called.
 */
export function observeDatabase(db: Db, pool: 'primary' | 'replica' = 'primary', queue?: string): () => void {
  databases.set(db, pool);
  if (queue) queueName = queue;
  return () => void databases.delete(db);
}

/** The surface a route template belongs to (a bounded label). */
export function surfaceOf(route: string | undefined): string {
  if (!route) return 'unmatched';
  if (route.startsWith('/auth/v1')) return 'identity';
  if (route.startsWith('/v1/embed')) return 'embed';
  if (route.startsWith('/v1')) return 'results';
  if (route.startsWith('/mcp')) return 'authoring';
  if (route.startsWith('/admin/v1')) return 'admin';
  if (route.startsWith('/embed/v1')) return 'player';
  return 'other';
}

/**
 * Register the HTTP histogram (fastify-metrics: registered routes only, so unknown paths add no
 * series; HEAD/OPTIONS left out) and the 429 counter on `app`. Call before the routes are added.
 */
export async function httpMetrics(app: FastifyInstance): Promise<void> {
  // The process metrics (CPU, memory, event-loop lag, GC) only when someone scrapes: they run timers and observers.
  if (!registry.getSingleMetric('process_cpu_seconds_total')) client.collectDefaultMetrics({ register: registry });
  // One app per process exports it; a later app (tests) takes the histogram over.
  registry.removeSingleMetric('http_request_duration_seconds');
  await app.register(fastifyMetrics, {
    endpoint: null,
    defaultMetrics: { enabled: false },
    routeMetrics: {
      enabled: { histogram: true, summary: false },
      overrides: { histogram: { buckets: LATENCY_BUCKETS, registers: [registry] } },
    },
    promClient: client,
  });
  app.addHook('onResponse', (req: FastifyRequest, reply: FastifyReply, done) => {
    if (reply.statusCode === 429) rateLimited.inc({ surface: surfaceOf(req.routeOptions.url) });
    done();
  });
}

/** The grant types counted by name; anything else a client sends counts as `unsupported`. */
const GRANT_TYPES = new Set(['password', 'refresh_token', 'authorization_code', 'id_token', 'pkce', 'embed_session']);

/**
 * Count one grant on a token endpoint once its answer is known (call from an `onResponse` hook):
 * `grantType` as the client sent it (bounded here), outcome from the status.
 */
export function countGrant(grantType: unknown, reply: FastifyReply): void {
  const type = typeof grantType === 'string' && GRANT_TYPES.has(grantType) ? grantType : 'unsupported';
  authGrants.inc({ grant_type: type, outcome: reply.statusCode < 400 ? 'success' : 'failure' });
}
