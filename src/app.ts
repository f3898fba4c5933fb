/**
 * Build the Fastify app: one plugin per surface, each with its own error body (DESIGN §1, §3).
 *
 *   /auth/v1   identity platform      /mcp       authoring (MCP)
 *   /v1        results API + embed    /admin/v1  the CLI's door into a running server
 *   /embed/v1  the embeddable player (page, loader, assets)
 *   /lti/v1    the LTI 1.3 tool (keys; src/lti/)
 *   /.well-known/oauth-protected-resource  where MCP clients learn how to authenticate
 *   /.well-known/{oauth-authorization-server,openid-configuration}/auth/v1  the OAuth server's metadata
 *   /livez, /readyz                        probes (src/http/probes.ts; surfaces add readiness checks)
 *
 * Request ids: an incoming `X-Request-Id` of 1–128 visible ASCII characters (letters, digits and
 * `-_.:/+=@`) is kept, otherwise a uuid is made (issue #14: never echo unbounded client text); it is logged and
 * sent back on every response, and is the access log's `reqId` and the trace's `svc.request_id`. Once shutdown has begun (src/http/shutdown.ts) every response says
 * `Connection: close`, so keep-alive clients move to another process instead of holding this one.
 */
import './admin/retention.ts'; // declares the retention sweep's job queue
import { Jobs } from './jobs/index.ts';
import Fastify, { LogController, type FastifyInstance, type FastifyReply } from 'fastify';
import { randomUUID } from 'node:crypto';
import type { Deps } from './deps.ts';
import { AuthError, identityRoutes, oauthDiscoveryRoutes, sendAuthError } from './identity/index.ts';
import adminRoutes from './admin/routes.ts';
import { resultsDocs, resultsRoutes } from './results/index.ts';
import { errorBody } from './http/api-errors.ts';
import { clientErrorHandler } from './http/client-errors.ts';
import { addReadiness, probeRoutes } from './http/probes.ts';
import { jsonRpcError } from './authoring/jsonrpc.ts';
import { createJudgeServices, embedRoutes, GRADING_QUEUE } from './embed/index.ts';
import playerRoutes from './player/routes.ts';
import { ltiRoutes, startScoreSender, type ScoreSender } from './lti/index.ts';
import authoringRoutes, { protectedResourceMetadata } from './authoring/routes.ts';
import { accessLog } from './telemetry/access-log.ts';
import { loggerOptions, resolveLogFormat } from './telemetry/log-format.ts';
import { httpMetrics, observeDatabase } from './telemetry/metrics.ts';
import { fastifyTracing, tracedDb, tracingEnabled } from './telemetry/tracing.ts';

/** A client's X-Request-Id we echo: 1–128 characters, no spaces or control characters. */
const REQUEST_ID_RE = /^[A-Za-z0-9._:/+=@-]{1,128}$/;

/** `Config.trustProxy` as Fastify takes it: a hop count as a function of the hop (proxy-addr's rule). */
const trustProxy = (value: boolean | number | string) => (typeof value === 'number' ? (_address: string, hop: number) => hop < value : value);

export async function buildApp(given: Deps): Promise<FastifyInstance> {
  const traced = tracingEnabled();
  const deps: Deps = traced ? { ...given, db: tracedDb(given.db), readDb: given.readDb && tracedDb(given.readDb) } : given;
  const app = Fastify({
    logger: loggerOptions(deps.config.logLevel, resolveLogFormat(deps.config.logFormat)),
    bodyLimit: deps.config.bodyLimit,
    trustProxy: trustProxy(deps.config.trustProxy),
    requestIdHeader: false,
    // Malformed URLs (bad percent-encoding, over-long path parameters) fail before any surface
    // runs: answer them in the error body of the surface the path belongs to.
    frameworkErrors: (err, req, reply: FastifyReply) => {
      reply.header('x-request-id', req.id); // onSend hooks do not run for these answers
      const path = req.raw.url ?? '';
      const status = Math.min((err as { statusCode?: number }).statusCode ?? 400, 499);
      // 414: a path segment over the router's maxParamLength (100) — say so, not "malformed".
      if (status === 414 && path.startsWith('/v1/')) {
        return void reply
          .code(400)
          .send(errorBody('invalid_request', 'path: a path segment is longer than 100 characters (ids are 36-character uuids)', String(req.id)));
      }
      if (path.startsWith('/auth/v1')) return void sendAuthError(req, reply, new AuthError(status, 'validation_failed', 'malformed URL'));
      if (path.startsWith('/mcp')) return void reply.code(status).send(jsonRpcError(-32600, 'malformed URL'));
      void reply.code(status).send(errorBody('invalid_request', 'malformed URL', String(req.id)));
    },
    // Requests Node's parser refuses (URL and headers over 16 KiB, not HTTP): a 400 with a body.
    clientErrorHandler,
    genReqId: (req) => {
      const sent = req.headers['x-request-id'];
      return typeof sent === 'string' && REQUEST_ID_RE.test(sent) ? sent : randomUUID();
    },
    // Fastify's own "incoming/completed" lines log raw URLs (query strings carry codes and
    // tokens): off; src/telemetry/access-log.ts writes one line per request instead.
    logController: new LogController({ disableRequestLogging: true }),
  });
  // Telemetry first, so it sees every route (issue #15; src/telemetry/).
  if (traced) await fastifyTracing(app);
  if (deps.config.metrics) await httpMetrics(app);
  if (deps.config.accessLog) accessLog(app);
  const unobserve = [observeDatabase(given.db, 'primary', GRADING_QUEUE), given.readDb && observeDatabase(given.readDb, 'replica')];
  app.addHook('onClose', async () => {
    for (const stop of unobserve) stop?.();
  });
  addReadiness(app, deps.db);
  // The job queue of this process (src/jobs): pg-boss, every declared queue worked here, schedules
  // (the hourly retention sweep, src/admin/retention.ts). Its maintenance puts back the jobs of
  // killed processes three times per grading lease. Started first; its onClose hook, added before
  // the surfaces register, runs after theirs (the grading queue hands its jobs back first).
  const jobs = new Jobs(deps, app.log.child({ surface: 'jobs' }), { maintenanceIntervalSeconds: deps.config.embed.judgeLeaseSeconds / 3 });
  app.addHook('onReady', () => jobs.start());
  app.addHook('onClose', () => jobs.stop());
  // Requests of the doors that record privileged acts run in an audit context carrying their
  // request id (issue #23, src/audit): /admin/v1, /auth/v1/admin, the OAuth grant revocation and
  // /mcp register `auditContextHook` themselves; the hot paths (/v1, embed, player) do not pay for it.
  // LTI scores owed to the platforms: the outbox's notices put deliveries on the job queue (issue #22, src/lti/ags/).
  let scores: ScoreSender | undefined;
  app.addHook('onReady', async () => {
    scores = startScoreSender(deps, app.log.child({ surface: 'lti' }), jobs);
  });
  app.addHook('onClose', async () => scores?.stop());
  // A callback hook, not async: no promise on every answer of the hot paths.
  app.addHook('onSend', (req, reply, payload, done) => {
    reply.header('x-request-id', req.id);
    if (app.readiness.shuttingDown) reply.header('connection', 'close');
    done(null, payload);
  });
  await app.register(probeRoutes);
  await app.register(identityRoutes, { prefix: '/auth/v1', ...deps });
  await app.register(adminRoutes, { prefix: '/admin/v1', ...deps });
  await app.register(resultsRoutes, { prefix: '/v1', ...deps });
  await app.register(resultsDocs, { ...deps }); // GET /docs: the Results API reference page
  // The judge's grader and queue, once: the embed plugin works them, the authoring tools enqueue calibration runs.
  const judge = createJudgeServices(deps, app.log.child({ surface: 'embed' }), jobs);
  await app.register(embedRoutes, { prefix: '/v1/embed', ...deps, judge });
  await app.register(playerRoutes, { prefix: '/embed/v1', ...deps });
  await app.register(ltiRoutes, { prefix: '/lti/v1', ...deps }); // LTI 1.3 tool (issue #22, src/lti/)
  await app.register(authoringRoutes, { prefix: '/mcp', ...deps, judge });
  await app.register(protectedResourceMetadata, { ...deps });
  await app.register(async (root) => oauthDiscoveryRoutes(root, deps));
  return app;
}
