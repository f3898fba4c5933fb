/**
 * The OAuth 2.1 authorization server MCP hosts connect through (issue #12), inside the identity
 * plugin (`/auth/v1`). Supabase Auth's paths and shapes where it has them:
 *
 * | route | who calls it | answers |
 * |---|---|---|
 * | `GET /oauth/authorize` | the browser, sent by the host | sign-in page; errors to the client by redirect, or a page |
 * | `POST /oauth/sign-in` | the sign-in form | consent page, or (consent stored) 303 to the client |
 * | `POST /oauth/decision` | the consent form (Allow / Deny) | 303 to the client with `code` or `error` |
 * | `POST /oauth/token` | the host | tokens, or an OAuth error (token.ts) |
 * | `POST /oauth/clients/register` | the host | 201 registration (clients.ts) |
 * | `POST /oauth/revoke` | the host | 200, empty (RFC 7009, revoke.ts) |
 * | `GET /oauth/authorizations/{id}`, `POST …/{id}/consent` | a custom consent UI with a first-party session | GoTrue's JSON |
 * | `GET, DELETE /user/oauth/grants` | the signed-in user (supabase-js) | grants.ts |
 * | `/.well-known/…` | discovery | metadata.ts |
 *
 * The `/oauth/*` and `/.well-known/*` routes need no `apikey` (MCP clients never send one).
 * Each route names its error surface in `config.surface`: `oauth` (RFC 6749 JSON), `page`
 * (HTML) or `gotrue` (the identity platform's shape). Forms are
 * `application/x-www-form-urlencoded`; a parameter given twice is refused (RFC 6749 §3.1).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { audit, auditContextHook } from '../../audit/index.ts';
import { DB_RETRY_AFTER_SECONDS, isDbUnavailable } from '../../db/errors.ts';
import type { Deps } from '../../deps.ts';
import { AuthError, sendAuthError, unavailable } from '../errors.ts';
import { requireSession } from '../gateway.ts';
import { mcpResource, TokenError } from '../jwt.ts';
import type { TokenLimits } from '../rate-limit.ts';
import { checkPassword, rehashIfOutdated } from '../token.ts';
import type { UserRow } from '../users.ts';
import {
  bindUser,
  consentCovers,
  createAuthorization,
  csrfMatches,
  decide,
  errorRedirect,
  pendingAuthorization,
  type Authorization,
} from './authorizations.ts';
import { findClient, knownClient, registerClient, type OAuthClient } from './clients.ts';
import { OAuthError, PageError, sendOAuthError } from './errors.ts';
import { listGrants, revokeGrant } from './grants.ts';
import { metadataRoutes } from './metadata.ts';
import { clientLabel, consentPage, errorPage, sendPage, signInPage } from './pages.ts';
import { onlyLoopback, redirectUriMatches } from './redirect-uris.ts';
import { revokeToken } from './revoke.ts';
import { grantedScope } from './scopes.ts';
import { tokenRequest } from './token.ts';
import { countGrant } from '../../telemetry/metrics.ts';

type Surface = 'oauth' | 'page' | 'gotrue';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** false: the route needs no `apikey` header (gateway.ts). */
    apikey?: boolean;
    /** How errors of the route are rendered (see the header). */
    surface?: Surface;
  }
}

const CHALLENGE_RE = /^[A-Za-z0-9_-]{43}$/;
const MAX_STATE = 2048;

/** A form body: each name to its value, or to all its values when given more than once. */
type Form = Record<string, string | string[]>;

function parseForm(text: string): Form {
  const form: Form = {};
  for (const [k, v] of new URLSearchParams(text)) {
    const have = form[k];
    form[k] = have === undefined ? v : Array.isArray(have) ? [...have, v] : [have, v];
  }
  return form;
}

/** The one value of `name` in a page form, '' when absent; a repeated field is a bad form. */
const formField = (form: unknown, name: string): string => {
  const v = (form as Form | undefined)?.[name];
  if (v === undefined) return '';
  if (typeof v !== 'string') throw new PageError(400, 'Invalid form', `The form field ${name} was sent more than once.`);
  return v;
};

const signInMessages: Partial<Record<string, string>> = {
  invalid_credentials: 'That email and password do not match an account.',
  user_banned: 'This account is suspended.',
  email_not_confirmed: 'This account’s email address is not confirmed yet.',
};

/** The OAuth routes; `limits` are the identity plugin's sign-in and refresh counters. */
export async function oauthRoutes(app: FastifyInstance, { deps, limits }: { deps: Deps; limits: TokenLimits }) {
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_req, body, done) => done(null, parseForm(body as string)));
  app.setErrorHandler(oauthErrorHandler);

  metadataRoutes(app, deps);
  const oauth = { apikey: false, surface: 'oauth' as const };
  const page = { apikey: false, surface: 'page' as const };
  const gotrue = { apikey: false, surface: 'gotrue' as const };

  // Over the per-IP limit the page says so (429, Retry-After) before any client lookup or row.
  app.get('/oauth/authorize', { config: page, onRequest: limits.authorize }, (req, reply) => authorize(deps, req, reply));
  app.post('/oauth/sign-in', { config: page }, (req, reply) => signIn(deps, limits, req, reply));
  app.post('/oauth/decision', { config: page }, (req, reply) => decision(deps, req, reply));
  app.post('/oauth/token', { config: oauth, onRequest: limits.oauthToken, onResponse: countTokenGrant }, (req, reply) => token(deps, req, reply));
  app.post('/oauth/revoke', { config: oauth }, (req, reply) => revoke(deps, req, reply));
  app.post('/oauth/clients/register', { config: oauth, onRequest: limits.register }, (req, reply) => register(deps, req, reply));
  // GoTrue's JSON pair for a custom consent UI: a first-party session (aud "authenticated") acts.
  app.get<{ Params: { id: string } }>('/oauth/authorizations/:id', { config: gotrue }, (req) => getAuthorization(deps, req));
  app.post<{ Params: { id: string } }>('/oauth/authorizations/:id/consent', { config: gotrue }, (req) => consent(deps, req));
  app.get('/user/oauth/grants', { config: { surface: 'gotrue' } }, (req) => grants(deps, req));
  app.delete('/user/oauth/grants', { config: { surface: 'gotrue' }, onRequest: auditContextHook }, (req, reply) => revokeGrantOfClient(deps, req, reply));
}

/**
 * The error handler of every OAuth route: renders an error in the route's `config.surface` —
 * `oauth` (RFC 6749 §5.2 JSON), `page` (an HTML error page) or `gotrue` (the identity platform's
 * body). A lost database is 503 with Retry-After; anything unexpected is logged and is a 500.
 */
function oauthErrorHandler(err: Error & { statusCode?: number }, req: FastifyRequest, reply: FastifyReply) {
  const surface = req.routeOptions.config?.surface ?? 'gotrue';
  const status = err instanceof AuthError ? err.status : err.statusCode && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 500;
  if (status === 500 && !isDbUnavailable(err) && !(err instanceof OAuthError) && !(err instanceof PageError)) {
    req.log.error({ err }, 'oauth: unexpected error');
  }
  if (surface === 'oauth') {
    if (err instanceof OAuthError) return sendOAuthError(reply, err);
    if (isDbUnavailable(err))
      return sendOAuthError(reply, new OAuthError(503, 'temporarily_unavailable', 'the service is briefly unavailable; retry', DB_RETRY_AFTER_SECONDS));
    if (status === 429) return sendOAuthError(reply, new OAuthError(429, 'temporarily_unavailable', 'too many requests; retry after the time in Retry-After'));
    if (status < 500) return sendOAuthError(reply, new OAuthError(status === 413 ? 413 : 400, 'invalid_request', err.message));
    return sendOAuthError(reply, new OAuthError(500, 'server_error', 'unexpected failure'));
  }
  if (surface === 'page') {
    if (err instanceof PageError) return sendPage(reply, err.status, errorPage(err.title, err.message));
    if (status === 429)
      return sendPage(reply, 429, errorPage('Too many requests', 'Too many sign-in requests came from your network. Wait a minute, then try again.'));
    if (isDbUnavailable(err))
      return sendPage(
        reply.header('retry-after', String(DB_RETRY_AFTER_SECONDS)),
        503,
        errorPage('Briefly unavailable', 'The service cannot reach its database. Try again in a moment.'),
      );
    if (status < 500) return sendPage(reply, status, errorPage('Invalid request', err instanceof AuthError ? err.message : 'The request could not be read.'));
    return sendPage(reply, 500, errorPage('Something went wrong', 'An unexpected error happened. Try again.'));
  }
  if (err instanceof AuthError) return sendAuthError(req, reply, err);
  if (err instanceof TokenError)
    return sendAuthError(req, reply, new AuthError(403, 'bad_jwt', `invalid JWT: unable to parse or verify signature, ${err.message}`));
  if (isDbUnavailable(err)) return sendAuthError(req, reply, unavailable());
  if (status < 500) return sendAuthError(req, reply, new AuthError(status, 'validation_failed', err.message));
  return sendAuthError(req, reply, new AuthError(500, 'unexpected_failure', 'Unexpected failure, please check server logs for more information'));
}

/**
 * `POST /oauth/sign-in` (the sign-in form): checks the email and password, binds the user to the
 * authorization, then answers the consent page — or, when a stored consent covers the scope, 303
 * to the client with a code. A missing field, wrong credentials or the per-email limit re-show the
 * sign-in page (400 / 429); an unknown, expired or foreign form is a `PageError` page.
 */
async function signIn(deps: Deps, limits: TokenLimits, req: FastifyRequest, reply: FastifyReply) {
  const { authz, client, csrf } = await formStep(deps, req.body);
  const email = formField(req.body, 'email').trim();
  const password = formField(req.body, 'password');
  const again = (status: number, error: string) =>
    sendPage(reply, status, signInPage({ authorizationId: authz.id, csrf, clientName: clientLabel(client), email, error }));
  if (!email || !password) return again(400, 'Enter your email and your password.');
  try {
    await limits.signIn(req, reply, email);
  } catch (err) {
    if (err instanceof AuthError && err.status === 429) return again(429, 'Too many sign-in attempts. Wait a few minutes, then try again.');
    throw err;
  }
  let user: UserRow;
  try {
    user = await checkPassword(deps, email, password);
  } catch (err) {
    if (err instanceof AuthError && signInMessages[err.code]) return again(400, signInMessages[err.code]!);
    throw err;
  }
  await rehashIfOutdated(deps.db, user, password);
  const next = await bindUser(deps, authz.id, user.id);
  if (!next) throw expired();
  if (await consentCovers(deps.db, user.id, client.client_id, authz.scope)) {
    const url = await decide(deps, authz.id, user.id, 'approve');
    if (!url) throw expired();
    return reply.redirect(url, 303);
  }
  return sendPage(
    reply,
    200,
    consentPage({
      authorizationId: authz.id,
      csrf: next,
      clientName: clientLabel(client),
      clientId: client.client_id,
      redirectUri: authz.redirect_uri,
      localOnly: onlyLoopback([authz.redirect_uri]),
      scope: authz.scope,
      email: user.email ?? email,
    }),
  );
}

/**
 * `POST /oauth/decision` (the consent form): 303 to the client with `code` (Allow) or
 * `error=access_denied` (Deny). 403 page before sign-in, 400 page for another decision or an
 * expired request.
 */
async function decision(deps: Deps, req: FastifyRequest, reply: FastifyReply) {
  const { authz } = await formStep(deps, req.body);
  if (!authz.user_id) throw new PageError(403, 'Sign in first', 'This request has no signed-in user yet.');
  const choice = formField(req.body, 'decision');
  if (choice !== 'allow' && choice !== 'deny') throw new PageError(400, 'Invalid form', 'Choose Allow or Deny.');
  const url = await decide(deps, authz.id, authz.user_id, choice === 'allow' ? 'approve' : 'deny');
  if (!url) throw expired();
  return reply.redirect(url, 303);
}

/** `onResponse` of the token route: counts the grant type and its outcome (telemetry). */
function countTokenGrant(req: FastifyRequest, reply: FastifyReply, done: () => void) {
  countGrant((req.body as Record<string, unknown> | undefined)?.grant_type, reply);
  done();
}

/**
 * `POST /oauth/token` (RFC 6749 §3.2, token.ts): the token response, not cached. A body that is
 * not form parameters is 400 `invalid_request`; grant errors are OAuth errors from token.ts.
 */
async function token(deps: Deps, req: FastifyRequest, reply: FastifyReply) {
  const body = req.body;
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw new OAuthError(400, 'invalid_request', 'the body must be form-encoded parameters');
  const answer = await tokenRequest(deps, body as Record<string, unknown>);
  return reply.header('cache-control', 'no-store').header('pragma', 'no-cache').send(answer);
}

/**
 * `POST /oauth/revoke` (RFC 7009, revoke.ts): 200 with an empty body, also for an unknown token.
 * A body that is not form parameters is 400 `invalid_request`; client errors come from revoke.ts.
 */
async function revoke(deps: Deps, req: FastifyRequest, reply: FastifyReply) {
  const body = req.body;
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw new OAuthError(400, 'invalid_request', 'the body must be form-encoded parameters');
  await revokeToken(deps, body as Record<string, unknown>);
  return reply.code(200).header('cache-control', 'no-store').send();
}

/** `POST /oauth/clients/register` (RFC 7591, clients.ts): 201 with the registration; metadata errors are OAuth errors. */
async function register(deps: Deps, req: FastifyRequest, reply: FastifyReply) {
  return reply
    .code(201)
    .header('cache-control', 'no-store')
    .send(await registerClient(deps, req.body));
}

/**
 * `GET /oauth/authorizations/{id}` (GoTrue): the authorization's client, user and scope for a
 * consent UI, or `{redirect_url}` when a stored consent already covers it. 404
 * `oauth_authorization_not_found` for an unknown, answered or foreign one; a session is required.
 */
async function getAuthorization(deps: Deps, req: FastifyRequest<{ Params: { id: string } }>) {
  const { user } = await requireSession(deps, req);
  const authz = await ownAuthorization(deps, req.params.id, user.id);
  if (!authz.user_id) {
    if (!(await bindUser(deps, authz.id, user.id))) throw notFound();
    if (await consentCovers(deps.db, user.id, authz.client_id, authz.scope)) {
      const url = await decide(deps, authz.id, user.id, 'approve');
      if (!url) throw notFound();
      return { redirect_url: url };
    }
  }
  const client = await knownClient(deps.db, authz.client_id);
  if (!client) throw notFound();
  return {
    authorization_id: authz.id,
    redirect_uri: authz.redirect_uri,
    client: { id: client.client_id, name: client.client_name ?? '', uri: client.client_uri ?? '', logo_uri: client.logo_uri ?? '' },
    user: { id: user.id, email: user.email ?? '' },
    scope: authz.scope,
  };
}

/**
 * `POST /oauth/authorizations/{id}/consent` (GoTrue): `{redirect_url}` carrying the code or the
 * denial. 400 `validation_failed` for an action other than approve/deny; 404 when the
 * authorization is unknown or not bound to the session's user.
 */
async function consent(deps: Deps, req: FastifyRequest<{ Params: { id: string } }>) {
  const { user } = await requireSession(deps, req);
  const action = (req.body as { action?: unknown } | undefined)?.action;
  if (action !== 'approve' && action !== 'deny') throw new AuthError(400, 'validation_failed', "action must be 'approve' or 'deny'");
  const authz = await ownAuthorization(deps, req.params.id, user.id);
  if (authz.user_id !== user.id) throw notFound();
  const url = await decide(deps, authz.id, user.id, action);
  if (!url) throw notFound();
  return { redirect_url: url };
}

/** `GET /user/oauth/grants` (grants.ts): the signed-in user's grants; a session is required. */
async function grants(deps: Deps, req: FastifyRequest) {
  return listGrants(deps.db, (await requireSession(deps, req)).user.id);
}

/**
 * `DELETE /user/oauth/grants?client_id=…`: revokes the user's grant to that client and audits it,
 * in one transaction; 204. 400 `validation_failed` without a usable `client_id`, 404
 * `oauth_consent_not_found` when no active grant exists.
 */
async function revokeGrantOfClient(deps: Deps, req: FastifyRequest, reply: FastifyReply) {
  const { user } = await requireSession(deps, req);
  const clientId = (req.query as Record<string, unknown>).client_id;
  if (typeof clientId !== 'string' || !clientId || clientId.length > 2048) throw new AuthError(400, 'validation_failed', 'client_id is required');
  const revoked = await deps.db.transaction(async (tx) => {
    if (!(await revokeGrant(tx, user.id, clientId))) return false;
    await audit(tx, {
      tenantId: null,
      action: 'oauth.grant.revoke',
      target: { type: 'user', id: user.svc_user_id },
      detail: { client_id: clientId },
      actor: { kind: 'auth_user', id: user.id },
    });
    return true;
  });
  if (!revoked) throw new AuthError(404, 'oauth_consent_not_found', 'No active grant found for this client');
  return reply.code(204).send();
}

const expired = () => new PageError(400, 'This sign-in has expired', 'The request is unknown, already answered, or older than 10 minutes.');
const notFound = () => new AuthError(404, 'oauth_authorization_not_found', 'authorization not found');

/** A pending authorization that is unbound or `userId`'s; else 404 (GoTrue answers a foreign one the same). */
async function ownAuthorization(deps: Deps, id: string, userId: string): Promise<Authorization> {
  const authz = await pendingAuthorization(deps, id);
  if (!authz || (authz.user_id && authz.user_id !== userId)) throw notFound();
  return authz;
}

/** The authorization, live client and CSRF value of a page form; `PageError` otherwise. */
async function formStep(deps: Deps, body: unknown): Promise<{ authz: Authorization; client: OAuthClient; csrf: string }> {
  const authz = await pendingAuthorization(deps, formField(body, 'authorization_id'));
  if (!authz) throw expired();
  const csrf = formField(body, 'csrf');
  if (!csrfMatches(authz, csrf)) {
    throw new PageError(
      403,
      'This form is no longer valid',
      'The form does not belong to this sign-in request or this step (CSRF check). Start again from your app.',
    );
  }
  const client = await knownClient(deps.db, authz.client_id);
  if (!client) throw expired();
  return { authz, client, csrf };
}

/**
 * `GET /oauth/authorize` (OAuth 2.1 §4.1.1, RFC 7636, RFC 8707, RFC 9207). Errors about the client
 * or its redirect URI are shown on a page; every later error is redirected to the client with
 * `state` and `iss`.
 */
async function authorize(deps: Deps, req: FastifyRequest, reply: FastifyReply) {
  const query = new URLSearchParams(req.url.includes('?') ? req.url.slice(req.url.indexOf('?') + 1) : '');
  const once = (name: string): string | undefined | null => {
    const all = query.getAll(name);
    return all.length > 1 ? null : all[0];
  };
  const clientId = once('client_id');
  if (clientId === null) throw new PageError(400, 'Invalid request', 'client_id was given more than once.');
  if (!clientId) throw new PageError(400, 'Invalid request', 'The request names no client_id.');
  let client: OAuthClient | undefined;
  try {
    client = await findClient(deps, clientId);
  } catch (err) {
    if (err instanceof OAuthError) throw new PageError(400, 'Unknown app', err.description);
    throw err;
  }
  if (!client) throw new PageError(400, 'Unknown app', 'No app is registered with this client_id, or it was revoked.');
  let redirectUri = once('redirect_uri');
  if (redirectUri === null) throw new PageError(400, 'Invalid request', 'redirect_uri was given more than once.');
  if (redirectUri === undefined && client.redirect_uris.length === 1) redirectUri = client.redirect_uris[0]!;
  if (!redirectUri) throw new PageError(400, 'Invalid request', 'The request names no redirect_uri.');
  if (!redirectUriMatches(client.redirect_uris, redirectUri)) {
    throw new PageError(400, 'Wrong return address', 'The app asked to return to an address it did not register, so this request was stopped.');
  }

  const state = once('state');
  const back = (error: string, description: string) => reply.redirect(errorRedirect(deps, redirectUri, state ?? null, error, description), 302);
  if (state === null) return back('invalid_request', 'state was given more than once');
  for (const name of new Set(query.keys())) if (query.getAll(name).length > 1) return back('invalid_request', `${name.slice(0, 50)} was given more than once`);
  if (state !== undefined && state.length > MAX_STATE) return back('invalid_request', `state must be at most ${MAX_STATE} characters`);
  const responseType = once('response_type');
  if (!responseType) return back('invalid_request', 'response_type is required');
  if (responseType !== 'code') return back('unsupported_response_type', 'only response_type=code is supported');
  const challenge = once('code_challenge');
  const method = once('code_challenge_method');
  if (!challenge) return back('invalid_request', 'code_challenge is required (PKCE with S256)');
  if (method !== 'S256') return back('invalid_request', 'code_challenge_method must be S256 (plain is not accepted)');
  if (!CHALLENGE_RE.test(challenge)) return back('invalid_request', 'code_challenge must be the 43-character base64url SHA-256 of the verifier');
  const resource = once('resource');
  if (resource !== mcpResource(deps)) return back('invalid_target', `resource must be ${mcpResource(deps)}`);

  const scope = grantedScope(once('scope') ?? undefined);
  const { id, csrf } = await createAuthorization(deps, {
    clientId: client.client_id,
    redirectUri,
    scope,
    state: state ?? null,
    resource,
    codeChallenge: challenge,
  });
  return sendPage(reply, 200, signInPage({ authorizationId: id, csrf, clientName: clientLabel(client) }));
}
