/**
 * The embed surface, mounted at `/v1/embed` (DESIGN §6 "Embed endpoints"):
 *
 *   POST /session   IdP token → session of this service            (session.ts)
 *   POST /judge     submit an artifact; store it, queue and await its grading
 *                   (judge.ts, learner-rate.ts, idempotency.ts; queue/ → grading/grade-job.ts →
 *                   read/, grading/)
 *   POST /results/{id}/appeal
 *                   the learner asks for a review of a verdict (appeal.ts, learner-rate.ts)
 *   GET /activities/{id}, /results/{id}, /progress
 *                   the learner's reads, as the learner under RLS (reads.ts, grading/verdict-view.ts)
 *
 * The plugin owns the grading queue of its process: started on `onReady` (the job queue of
 * src/jobs first, then the workers when a model is configured) and stopped on `onClose`, so every process that serves
 * /v1/embed also works the queue. It reports to readiness as `queue` (src/http/probes.ts).
 *
 * Requests and responses are declared with zod (validation and the OpenAPI document come from
 * the same schemas). Every error, including Fastify's own (bad JSON, wrong content type,
 * oversized body, schema violations, unknown route), is answered with the Results API's body
 * `{"error": {"code", "message"}}` (src/http/api-errors.ts): 4xx from the framework become 400
 * `invalid_request`; anything unexpected is logged and becomes 500 `internal_error` without
 * detail.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Deps } from '../deps.ts';
import { ApiError, apiErrorHandler, sendApiError } from '../http/api-errors.ts';
import { NotReady } from '../http/probes.ts';
import { IdpVerifier } from './idp.ts';
import { judgeBody, judgeResponse, submitForJudgement } from './judge.ts';
import { forgetExpired, idempotencyKey } from './idempotency.ts';
import { appealLimiter, learnerLimiter } from './learner-rate.ts';
import { appealBody, appealView, fileAppeal } from './appeal.ts';
import { createJudgeServices, type JudgeServices } from './services.ts';
import { Jobs } from '../jobs/index.ts';
import { activityView, idParams, progressQuery, progressView, readActivity, readProgress, readResult, resultView } from './reads.ts';
import { createEmbedSession, sessionBody, sessionResponse } from './session.ts';
import { countGrant, judgeSubmissions } from '../telemetry/metrics.ts';
import { bearerToken } from '../http/bearer.ts';

/** The bearer token of the request, if the Authorization header has one. */
const bearer = (req: FastifyRequest) => bearerToken(req.headers.authorization);

export default async function embedRoutes(app: FastifyInstance, options: Deps & { judge?: JudgeServices }) {
  const deps: Deps = { config: options.config, db: options.db, readDb: options.readDb, now: options.now };
  const idps = new IdpVerifier(deps, deps.config.embed.jwksMaxAgeSeconds * 1000);
  const limitLearner = await learnerLimiter(app, deps);
  const limitAppeal = appealLimiter(app, deps);
  // Every process that serves /v1/embed has the queue (to enqueue); one with a model works it.
  // The app creates it (services.ts) and hands it to the authoring surface too; alone, the plugin makes its own.
  // (Alone, it also makes the process's job queue, stopped after the grading queue.)
  const ownJobs = options.judge
    ? undefined
    : new Jobs(deps, app.log.child({ surface: 'jobs' }), { maintenanceIntervalSeconds: deps.config.embed.judgeLeaseSeconds / 3 });
  const judge = options.judge ?? createJudgeServices(deps, app.log.child({ surface: 'embed' }), ownJobs!);
  const { queue } = judge;
  // Idempotency keys older than 24 h are forgotten every ten minutes (idempotency.ts).
  const forgetting = setInterval(() => void forgetExpired(deps.db).catch((err) => app.log.warn({ err }, 'embed: forgetting idempotency keys failed')), 600_000);
  forgetting.unref();
  app.addHook('onReady', async () => {
    await queue.start();
    if (queue.working) await judge.catchUpCalibration().catch((err) => app.log.warn({ err }, 'embed: calibration catch-up failed'));
  });
  app.addHook('onClose', async () => {
    clearInterval(forgetting);
    await queue.stop();
    await ownJobs?.stop();
  });
  app.readiness.add('queue', async () => {
    if (!queue.isRunning) throw new NotReady('not running');
  });

  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);

  app.setErrorHandler(apiErrorHandler('embed'));

  app.setNotFoundHandler((req, reply) => sendApiError(reply, new ApiError('not_found', `no route ${req.method} ${req.url.split('?')[0]}`)));

  const r = app.withTypeProvider<ZodTypeProvider>();

  /** Count the session exchange as a grant, and each submission by outcome, once the answer is known. */
  const countSession = (_req: FastifyRequest, reply: FastifyReply, done: () => void) => {
    countGrant('embed_session', reply);
    done();
  };
  const countSubmission = (_req: FastifyRequest, reply: FastifyReply, done: () => void) => {
    judgeSubmissions.inc({ outcome: reply.statusCode >= 400 ? 'refused' : reply.getHeader('idempotent-replayed') ? 'replayed' : 'accepted' });
    done();
  };

  r.post(
    '/session',
    { schema: { summary: "Exchange a tenant's IdP token for a session", body: sessionBody, response: { 200: sessionResponse } }, onResponse: countSession },
    async (req) => createEmbedSession(deps, idps, req.body),
  );

  r.post(
    '/judge',
    { schema: { summary: 'Submit an artifact for an activity and grade it', body: judgeBody, response: { 200: judgeResponse } }, onResponse: countSubmission },
    async (req, reply) => {
      const key = idempotencyKey(req.headers['idempotency-key']);
      const { answer, replayed } = await submitForJudgement(deps, { idps, queue, limitLearner: limitLearner(req) }, bearer(req), req.body, key);
      if (replayed) reply.header('idempotent-replayed', 'true');
      return answer;
    },
  );

  r.get(
    '/activities/:id',
    { schema: { summary: "The activity, its rubric and place, and the learner's result on it", params: idParams, response: { 200: activityView } } },
    async (req) => readActivity(deps, bearer(req), req.params.id),
  );

  r.get(
    '/results/:id',
    { schema: { summary: "One of the learner's results with each attempt's verdict (poll while pending)", params: idParams, response: { 200: resultView } } },
    async (req) => readResult(deps, bearer(req), req.params.id),
  );

  r.post(
    '/results/:id/appeal',
    {
      schema: {
        summary: 'Ask for a review of a verdict (one open request per result)',
        description:
          'The learner asks an instructor to review the verdict of their result. 404 for a result that is not theirs, ' +
          '409 `verdict_pending` while the latest submission has no verdict, 409 `appeal_open` when a request is already open, ' +
          "429 `rate_limited` beyond the learner's rate.",
        params: idParams,
        body: appealBody,
        response: { 201: appealView },
      },
    },
    async (req, reply) => {
      const appeal = await fileAppeal(deps, limitAppeal(req), bearer(req), req.params.id, req.body.message);
      return reply.code(201).send(appeal);
    },
  );

  r.get('/progress', { schema: { summary: "The learner's progress per program", querystring: progressQuery, response: { 200: progressView } } }, async (req) =>
    readProgress(deps, bearer(req), req.query.program_id),
  );
}
