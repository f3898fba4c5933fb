/**
 * Third-party initiated login (LTI Core 1.3 §5.1.1; OpenID Connect Core §3.1.2.1 with the
 * 1EdTech Security Framework 1.0 §5.1.1 profile).
 *
 * The platform sends the browser to `/lti/v1/login` with `iss`, `login_hint`, `target_link_uri`
 * and optionally `lti_message_hint`, `client_id`, `lti_deployment_id`, `lti_storage_target`. We
 * answer with the authentication request to the registration's authorization URL: `scope=openid`,
 * `response_type=id_token`, `response_mode=form_post`, `prompt=none`, `client_id`,
 * `redirect_uri` (our launch URL), `login_hint` and `lti_message_hint` unaltered, `state`, `nonce`.
 *
 * The `state` is a JWT we sign (HS256 with a key derived from the service's JWT secret for this
 * use only, `aud` `lti-state`), valid `STATE_SECONDS`: it names the tenant and registration, the
 * nonce, the login's parameters (to offer a new window later) and the SHA-256 of a random browser
 * binding value. The binding value itself goes to the browser in a cookie
 * `svc_lti_<state id>` (`HttpOnly; Secure; SameSite=None; Partitioned`, path `/lti/v1/`): the
 * launch must come back with it (launch.ts), which stops login CSRF — a state alone does not.
 * When the login names `lti_storage_target` (Canvas sends it), the value is also put in the
 * platform's storage (1EdTech Client Side postMessages, `lti.put_data`) by the login page before it
 * goes on to the platform (routes.ts, pages.ts), for browsers that block the cookie in the frame.
 * Single use is enforced at launch (`lti_used_values`), so nothing is stored at login.
 */
import { createHash, randomBytes } from 'node:crypto';
import { jwtVerify, SignJWT } from 'jose';
import type { Config } from '../config.ts';
import type { Platform } from './platforms.ts';

/** How long a login's state (and its cookie) is good for, in seconds. */
export const STATE_SECONDS = 600;
/** Longest `login_hint` / `lti_message_hint` we carry, in characters. */
export const MAX_HINT_CHARS = 2048;
/** The cookie that binds a launch to the browser that started the login. */
export const bindingCookie = (stateId: string) => `svc_lti_${stateId}`;

const STATE_AUDIENCE = 'lti-state';
const stateKey = (config: Pick<Config, 'jwtSecret'>) => createHash('sha256').update(`lti-state\n${config.jwtSecret}`).digest();
export const sha256 = (text: string) => createHash('sha256').update(text).digest('base64url');

/** What a state carries. */
export interface LoginState {
  /** The state's id (its `jti`): the single-use key and the cookie's name. */
  id: string;
  tenantId: string;
  platformId: string;
  nonce: string;
  /** SHA-256 (base64url) of the browser binding value. */
  binding: string;
  /** The login's parameters, to start it again in a new window. */
  login: Record<string, string>;
}

/** The login's parameters as the platform sent them (strings only; what we pass on). */
export interface LoginParams {
  iss: string;
  login_hint: string;
  target_link_uri: string;
  lti_message_hint?: string;
  client_id?: string;
  lti_deployment_id?: string;
  lti_storage_target?: string;
}

/**
 * Start a login for `platform`: the authentication request URL, the state, and the cookie
 * (name, value) to set. `redirectUri` is our launch URL.
 */
export async function startLogin(
  config: Pick<Config, 'jwtSecret'>,
  platform: Platform,
  params: LoginParams,
  redirectUri: string,
): Promise<{ url: string; fields: Record<string, string>; cookie: { name: string; value: string } }> {
  const id = randomBytes(16).toString('base64url');
  const nonce = randomBytes(24).toString('base64url');
  const binding = randomBytes(32).toString('base64url');
  const login = Object.fromEntries(Object.entries(params).filter(([, v]) => typeof v === 'string')) as Record<string, string>;
  const state = await new SignJWT({ tid: platform.tenant_id, pid: platform.id, nonce, bind: sha256(binding), login })
    .setProtectedHeader({ alg: 'HS256' })
    .setJti(id)
    .setAudience(STATE_AUDIENCE)
    .setIssuedAt()
    .setExpirationTime(`${STATE_SECONDS}s`)
    .sign(stateKey(config));
  const fields: Record<string, string> = {
    scope: 'openid',
    response_type: 'id_token',
    response_mode: 'form_post',
    prompt: 'none',
    client_id: platform.client_id,
    redirect_uri: redirectUri,
    login_hint: params.login_hint,
    state,
    nonce,
    ...(params.lti_message_hint !== undefined && { lti_message_hint: params.lti_message_hint }),
  };
  const url = new URL(platform.auth_url);
  for (const [k, v] of Object.entries(fields)) url.searchParams.set(k, v);
  return { url: url.toString(), fields, cookie: { name: bindingCookie(id), value: binding } };
}

/** The state's content, or undefined when it is not ours, altered or expired. */
export async function readState(config: Pick<Config, 'jwtSecret'>, state: string): Promise<LoginState | undefined> {
  try {
    const { payload } = await jwtVerify(state, stateKey(config), { algorithms: ['HS256'], audience: STATE_AUDIENCE, requiredClaims: ['jti', 'exp'] });
    const { tid, pid, nonce, bind, login } = payload as Record<string, unknown>;
    if (typeof tid !== 'string' || typeof pid !== 'string' || typeof nonce !== 'string' || typeof bind !== 'string' || typeof login !== 'object' || !login)
      return undefined;
    return { id: payload.jti!, tenantId: tid, platformId: pid, nonce, binding: bind, login: login as Record<string, string> };
  } catch {
    return undefined;
  }
}
