/**
 * The embed surface, mounted at `/v1/embed` (DESIGN §6 "Embed endpoints"):
 *
 *   POST /session   IdP token → session of this service            (session.ts)
 *   POST /judge     submit an artifact; store it and grade it        (judge.ts, grader.ts)
 *
 * Requests and responses are declared with zod (validation and the OpenAPI document come from
 * the same schemas). Every error, including Fastify's own (bad JSON, wrong content type,
 * oversized body, schema violations, unknown route), is answered with the Results API's body
 * `{"error": {"code", "message"}}` (errors.ts): 4xx from the framework become 400
 * `invalid_request`; anything unexpected is logged and becomes 500 `internal_error` without
 * detail.
 */
import type { FastifyError, FastifyInstance, FastifyRequest } from 'fastify';
import {
  hasZodFastifySchemaValidationErrors,
  serializerCompiler,
  validatorCompiler,
  type ZodTypeProvider,
} from 'fastify-type-provider-zod';
import type { Deps } from '../deps.ts';
import { EmbedError, invalidRequest, sendEmbedError } from './errors.ts';
import { Grader } from './grader.ts';
import { IdpVerifier } from './idp.ts';
import { judgeBody, judgeResponse, submitForJudgement } from './judge.ts';
import { createEmbedSession, sessionBody, sessionResponse } from './session.ts';

const BEARER_RE = /^Bearer[ \t]+(\S+)[ \t]*$/i;

/** The bearer token of the request, if the Authorization header has one. */
function bearer(req: FastifyRequest): string | undefined {
  const h = req.headers.authorization;
  return typeof h === 'string' ? BEARER_RE.exec(h)?.[1] : undefined;
}

/** A framework 4xx as a client-facing message (never the framework's internal text). */
function frameworkMessage(err: FastifyError): string {
  if (err.statusCode === 413) return 'the request body is too large';
  if (err.statusCode === 415) return 'the request body must be JSON (Content-Type: application/json)';
  if (err.code === 'FST_ERR_CTP_EMPTY_JSON_BODY') return 'the request body is empty';
  if (err.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || err instanceof SyntaxError) return 'the request body is not valid JSON';
  return 'the request is malformed';
}

export default async function embedRoutes(app: FastifyInstance, deps: Deps) {
  const idps = new IdpVerifier(deps);
  const grader = deps.config.judge ? new Grader(deps.config.judge, { allowPrivate: deps.config.fetchAllowPrivate }) : null;

  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);

  app.setErrorHandler((err: FastifyError, req, reply) => {
    if (err instanceof EmbedError) {
      if (err.code === 'unauthorized' && err.internal) req.log.info({ reason: err.internal }, 'embed: authentication refused');
      return sendEmbedError(reply, err);
    }
    if (hasZodFastifySchemaValidationErrors(err)) {
      const issue = err.validation[0];
      const path = (issue?.instancePath ?? '').replace(/^\//, '').replace(/\//g, '.');
      const message = issue?.message ?? 'invalid value';
      return sendEmbedError(reply, invalidRequest(path ? `${path}: ${message}` : message));
    }
    if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) {
      return sendEmbedError(reply, invalidRequest(frameworkMessage(err)));
    }
    req.log.error({ err }, 'embed: unexpected error');
    return sendEmbedError(reply, new EmbedError('internal_error', 'internal error'));
  });

  app.setNotFoundHandler((req, reply) =>
    sendEmbedError(reply, new EmbedError('not_found', `no route ${req.method} ${req.url.split('?')[0]}`)),
  );

  const r = app.withTypeProvider<ZodTypeProvider>();

  r.post(
    '/session',
    {
      schema: {
        summary: "Exchange a tenant's IdP token for a session",
        body: sessionBody,
        response: { 200: sessionResponse },
      },
    },
    async (req) => createEmbedSession(deps, idps, req.body),
  );

  r.post(
    '/judge',
    {
      schema: {
        summary: 'Submit an artifact for an activity and grade it',
        body: judgeBody,
        response: { 200: judgeResponse },
      },
    },
    async (req) => submitForJudgement(deps, { idps, grader }, bearer(req), req.body),
  );
}
