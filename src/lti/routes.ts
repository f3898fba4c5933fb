/**
 * The LTI 1.3 tool's routes, mounted at `/lti/v1` (issue #22; README.md):
 *
 *   GET /jwks            the tool's public keys (JWK set, RFC 7517): the current key and the keys
 *                        retired less than RETIRED_KEY_SECONDS ago (keys.ts). Public, cacheable
 *                        for 5 minutes.
 *   GET|POST /login      third-party initiated login (login.ts): answers with the authentication
 *                        request to the platform — a 302, or for a POST an auto-submitted form —
 *                        and sets the browser-binding cookie. With `lti_storage_target`, a page
 *                        that first puts the binding value in the platform's storage
 *                        (`lti.put_data`), then submits the authentication request (GET form).
 *   GET /register/<code> LTI Dynamic Registration 1.0 (registration/): the platform opens the URL
 *                        `svc lti registration-url` printed, with `openid_configuration` and
 *                        `registration_token`; the tool registers itself there and stores the
 *                        registration in the code's tenant; a page that closes the platform's dialog.
 *   POST /launch         the platform's form post of `id_token` + `state` (launch.ts): verified,
 *                        the learner mapped (learners.ts), then the player page (src/player, the
 *                        same as /embed/v1/play) with a session bound to the tenant handed to it — no
 *                        cookie is needed after the launch. No cookie but a storage target: a
 *                        page that gets the value back (`lti.get_data`) and posts the launch again
 *                        with `lti_storage_binding` — accepted only from our own page in a frame
 *                        (`Sec-Fetch-Dest: iframe` and `Sec-Fetch-Site: same-origin`, set by the
 *                        browser; the page may be framed by the platform only), so a forged
 *                        top-level or cross-site post carrying a known value is refused. Neither: a
 *                        page offering to open the activity in a new window (401), never an accept.
 *   POST /deep-linking/response   the deep-linking picker's form (deep-linking/index.ts): the
 *                        signed LtiDeepLinkingResponse auto-submitted to the platform.
 *
 * Login and launch answer errors with a readable HTML page (pages.ts), 4xx, never a stack trace,
 * and store nothing before every check has passed (the single-use records, the learner and the
 * session are written in one transaction at the end). `/jwks` and unknown paths answer with the
 * `/v1` error body (src/http/api-errors.ts).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Deps } from '../deps.ts';
import { ApiError, apiErrorHandler, sendApiError } from '../http/api-errors.ts';
import { playerAssets } from '../player/index.ts';
import { safeEqual } from '../lib/safe-equal.ts';
import { AllPlatformAncestors, platformAncestors } from './framing.ts';
import { PublishedKeys } from './keys.ts';
import { CLAIM, LaunchError, verifyIdToken, type LaunchClaims, type VerifiedLaunch } from './launch.ts';
import { resourceLinkLaunch } from './resource-link.ts';
import { deepLinkingLaunch, deepLinkingRoutes } from './deep-linking/index.ts';
import { bindingCookie, MAX_HINT_CHARS, readState, sha256, startLogin, STATE_SECONDS, type LoginParams } from './login.ts';
import { PlatformKeys } from './platform-keys.ts';
import { registerWithCode } from './registration/index.ts';
import { findPlatform, hasDeployment, platformById } from './platforms.ts';
import { pageErrorHandler, sendAutoSubmit, sendErrorPage, sendNewWindowPage, sendStoragePage } from './pages.ts';

/** Largest login or launch form we read, in bytes (an id_token is a few KB; MAX_ID_TOKEN_CHARS is 64 KiB). */
const FORM_LIMIT = 128 * 1024;
/** `lti_storage_target`: `_parent` or the name of a frame of the platform's page. */
const STORAGE_TARGET = /^[A-Za-z0-9_.-]{1,64}$/;

/** A form or query as single-valued strings; a parameter given twice is refused (undefined). */
function formOf(input: unknown): Record<string, string> | undefined {
  if (typeof input === 'string') {
    const out: Record<string, string> = {};
    for (const [k, v] of new URLSearchParams(input)) {
      if (Object.hasOwn(out, k)) return undefined;
      out[k] = v;
    }
    return out;
  }
  if (!input || typeof input !== 'object') return {};
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(input)) {
    if (typeof v !== 'string') return undefined;
    out[k] = v;
  }
  return out;
}

/** The value of cookie `name` in the request's Cookie header. */
function cookieOf(req: FastifyRequest, name: string): string | undefined {
  for (const part of String(req.headers.cookie ?? '').split(';')) {
    const at = part.indexOf('=');
    if (at > 0 && part.slice(0, at).trim() === name) return part.slice(at + 1).trim();
  }
  return undefined;
}

/**
 * Whether the browser says this request is our own page posting inside a frame: `Sec-Fetch-Dest:
 * iframe` and `Sec-Fetch-Site: same-origin` (Fetch Metadata; set by the browser, not by a page).
 * The storage page that posts `lti_storage_binding` is ours and runs in the platform's frame; a
 * form another site posts into a frame it controls says `cross-site`.
 */
const fromOurFrame = (req: FastifyRequest) => req.headers['sec-fetch-dest'] === 'iframe' && req.headers['sec-fetch-site'] === 'same-origin';

const cookieAttributes = 'Path=/lti/v1/; HttpOnly; Secure; SameSite=None; Partitioned';

export default async function ltiRoutes(app: FastifyInstance, deps: Deps) {
  const assets = await playerAssets();
  const keys = new PlatformKeys(deps.config);
  const everyPlatform = new AllPlatformAncestors(deps.db);
  const toolKeys = new PublishedKeys(deps.db);
  const stopKeys = await toolKeys.start();
  app.addHook('onClose', async () => stopKeys());
  const base = () => deps.config.baseUrl.replace(/\/$/, '');

  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: FORM_LIMIT }, (_req, body, done) => done(null, body));
  app.addHook('onSend', async (_req, reply) => {
    reply.header('x-content-type-options', 'nosniff');
    reply.header('referrer-policy', 'no-referrer');
  });
  const apiErrors = apiErrorHandler('lti');
  const launchErrors = pageErrorHandler(
    {
      title: 'This activity could not be opened',
      tooLarge: 'The LMS sent more data than a launch holds.',
      malformed: 'The request from the LMS is malformed.',
      busy: 'The service cannot open activities right now. Try again in a few seconds.',
      failed: 'The activity could not be opened because of an error on our side.',
      log: 'lti: unexpected error',
    },
    everyPlatform,
  );
  app.setErrorHandler(async (err: Error & { statusCode?: number }, req, reply) => {
    const path = req.url.split('?')[0]!;
    if (!path.endsWith('/login') && !path.endsWith('/launch')) return apiErrors(err, req, reply);
    return launchErrors(err, req, reply);
  });
  deepLinkingRoutes(app, deps, everyPlatform);
  app.setNotFoundHandler((req, reply) => sendApiError(reply, new ApiError('not_found', `no route ${req.method} ${req.url.split('?')[0]}`)));

  app.get('/jwks', async (_req, reply) =>
    reply
      .type('application/json; charset=utf-8')
      .header('cache-control', 'public, max-age=300')
      .header('access-control-allow-origin', '*')
      .header('cross-origin-resource-policy', 'cross-origin')
      .send(await toolKeys.get()),
  );

  // LTI Dynamic Registration 1.0 (registration/): the platform opens the URL `svc lti registration-url` printed.
  app.get<{ Params: { code: string } }>('/register/:code', async (req, reply) => registerWithCode(deps, req.params.code, formOf(req.query), reply));

  /** Refusal before the platform is known (login): framed by any registered platform. */
  const refuseLogin = (message: string, code = 'invalid_login') => new LaunchError(400, code, 'This activity could not be opened', message);

  const login = async (req: FastifyRequest, reply: FastifyReply) => {
    const form = formOf(req.method === 'POST' ? req.body : req.query);
    if (!form) throw refuseLogin('The login request from the LMS is malformed (a parameter is given twice).');
    for (const name of ['iss', 'login_hint', 'target_link_uri'] as const) {
      if (!form[name]) throw refuseLogin(`The login request from the LMS has no ${name}.`);
    }
    for (const [name, value] of Object.entries(form)) {
      if (value.length > MAX_HINT_CHARS) throw refuseLogin(`The login request's ${name} is too long.`);
    }
    const platform = await findPlatform(deps.db, form.iss!, form.client_id);
    if (!platform)
      throw refuseLogin(
        'This LMS (issuer and client id) is not registered with the service. Ask the LMS administrator to register the tool.',
        'unknown_platform',
      );
    if (form.lti_deployment_id !== undefined && !hasDeployment(platform, form.lti_deployment_id)) {
      throw refuseLogin(
        'This LMS deployment is not registered with the service. Ask the LMS administrator to register its deployment id.',
        'unknown_deployment',
      );
    }
    const params: LoginParams = {
      iss: form.iss!,
      login_hint: form.login_hint!,
      target_link_uri: form.target_link_uri!,
      client_id: platform.client_id,
      ...(form.lti_message_hint !== undefined && { lti_message_hint: form.lti_message_hint }),
      ...(form.lti_deployment_id !== undefined && { lti_deployment_id: form.lti_deployment_id }),
      ...(form.lti_storage_target !== undefined && { lti_storage_target: form.lti_storage_target }),
    };
    if (params.lti_storage_target !== undefined && !STORAGE_TARGET.test(params.lti_storage_target))
      throw refuseLogin("The login request's lti_storage_target is not a frame name.");
    const started = await startLogin(deps.config, platform, params, `${base()}/lti/v1/launch`);
    reply.header('set-cookie', `${started.cookie.name}=${started.cookie.value}; Max-Age=${STATE_SECONDS}; ${cookieAttributes}`);
    if (params.lti_storage_target !== undefined) {
      // Platform storage too (the cookie may be blocked in the frame): put the binding, then go on.
      const step = {
        subject: 'lti.put_data',
        target: params.lti_storage_target,
        origin: new URL(platform.auth_url).origin,
        key: started.cookie.name,
        value: started.cookie.value,
      } as const;
      const action = new URL(platform.auth_url);
      const fields = Object.fromEntries([...action.searchParams, ...Object.entries(started.fields)]);
      return sendStoragePage(reply, step, `${action.origin}${action.pathname}`, 'get', fields, platformAncestors(platform));
    }
    if (req.method === 'GET') return reply.header('cache-control', 'no-store').redirect(started.url, 302);
    return sendAutoSubmit(reply, platform.auth_url, started.fields, platformAncestors(platform));
  };
  app.get('/login', login);
  app.post('/login', login);

  app.post('/launch', async (req, reply) => {
    const form = formOf(req.body);
    if (!form || typeof req.body !== 'string') throw refuseLogin('The launch from the LMS is malformed.', 'invalid_launch');
    if (!form.state || !form.id_token) throw refuseLogin(`The launch from the LMS has no ${form.state ? 'id_token' : 'state'}.`, 'invalid_launch');
    // 1. Our state, unexpired.
    const state = await readState(deps.config, form.state);
    if (!state) throw refuseLogin('This sign-in is not valid or has expired. Open the activity again from the LMS.', 'invalid_state');
    const platform = await platformById(deps.db, state.tenantId, state.platformId);
    if (!platform) throw refuseLogin('This LMS is no longer registered with the service.', 'unknown_platform');
    const ancestors = platformAncestors(platform);
    // 2. The browser that started the login: the cookie, or (when the login named a storage
    //    target) the value our page got back from the platform's storage inside the platform's frame.
    const target = state.login.lti_storage_target;
    const fromStorage = target !== undefined && fromOurFrame(req) ? form.lti_storage_binding : undefined;
    const binding = cookieOf(req, bindingCookie(state.id)) ?? fromStorage;
    if (!binding && target !== undefined && form.lti_storage_binding === undefined) {
      const step = { subject: 'lti.get_data', target, origin: new URL(platform.auth_url).origin, key: bindingCookie(state.id) } as const;
      return sendStoragePage(
        reply,
        step,
        `${base()}/lti/v1/launch`,
        'post',
        { id_token: form.id_token, state: form.state, lti_storage_binding: '' },
        ancestors,
      );
    }
    if (!binding || !safeEqual(sha256(binding), state.binding)) {
      const again = new URL(`${base()}/lti/v1/login`);
      for (const [k, v] of Object.entries(state.login)) again.searchParams.set(k, v);
      return sendNewWindowPage(reply, again.toString(), platform.auth_url, ancestors);
    }
    // 3–7. The id_token.
    const now = deps.now();
    let claims: LaunchClaims;
    try {
      claims = await verifyIdToken(keys, platform, state, form.id_token, now);
    } catch (err) {
      if (err instanceof LaunchError) return sendErrorPage(reply, err.status, err.code, err.title, err.message, ancestors);
      throw err;
    }
    const launch: VerifiedLaunch = {
      platform,
      state,
      claims,
      framed: platformAncestors(platform, claims),
      clearCookie: `${bindingCookie(state.id)}=; Max-Age=0; ${cookieAttributes}`,
      now,
    };
    if (claims[CLAIM.messageType] === 'LtiDeepLinkingRequest') return deepLinkingLaunch(deps, launch, reply);
    return resourceLinkLaunch(deps, launch, reply, assets);
  });
}
