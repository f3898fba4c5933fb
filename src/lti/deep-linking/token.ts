/**
 * The two tokens of a deep link (Deep Linking 2.0):
 *
 * - the picker token: what the picker page carries back to `POST /lti/v1/deep-linking/response`
 *   in a hidden field. A JWT we sign for ourselves (HS256 with a key derived from the service's
 *   JWT secret for this use only, `aud` `lti-picker`), valid `PICKER_SECONDS`, bound to the
 *   launch: tenant, registration, deployment, `deep_link_return_url`, `data`, `accept_multiple`
 *   and the page's `frame-ancestors`. It is the only state of a picker (nothing is stored at
 *   launch but the single use of the launch's state and nonce); the response records its `jti` as
 *   used (`lti_used_values`, kind `picker`), so a picker answers once. A cross-site page cannot
 *   read it, so it also stops a forged submission (CSRF).
 * - the response: the `JWT` form field posted to `deep_link_return_url` (Deep Linking 2.0 §4.5):
 *   RS256 with the tool's current key and its `kid` (keys.ts), `iss` = the registration's client
 *   id, `aud` = the platform's issuer, a fresh `nonce`, `iat`/`exp` (`TOKEN_LIFETIME_SECONDS`),
 *   `deployment_id`, `message_type` LtiDeepLinkingResponse, `version` 1.3.0, `data` echoed
 *   unaltered when the request had it, and the `ltiResourceLink` content items (§3.1).
 */
import { createHash, randomBytes } from 'node:crypto';
import { decodeJwt, errors as joseErrors, jwtVerify, SignJWT } from 'jose';
import type { Config } from '../../config.ts';
import { epochSeconds } from '../../deps.ts';
import { TOKEN_LIFETIME_SECONDS, type SigningKey } from '../keys.ts';

/** How long a picker page may be used, in seconds (an instructor browsing the catalogue). */
export const PICKER_SECONDS = 1800;

const PICKER_AUDIENCE = 'lti-picker';
const pickerKey = (config: Pick<Config, 'jwtSecret'>) => createHash('sha256').update(`lti-picker\n${config.jwtSecret}`).digest();

/** What a picker token binds: the deep-linking launch it answers. */
export interface PickerBinding {
  tenantId: string;
  platformId: string;
  deploymentId: string;
  returnUrl: string;
  /** The request's `data`, echoed in the response; absent when it had none. */
  data?: string;
  acceptMultiple: boolean;
  /** `frame-ancestors` of the response page: the launch's platform origins. */
  ancestors: string;
}

/** A verified picker token: its binding, id and expiry (seconds since the epoch). */
export interface PickerToken extends PickerBinding {
  id: string;
  exp: number;
}

/** Sign a picker token for `binding`, issued at `now`. */
export function signPickerToken(config: Pick<Config, 'jwtSecret'>, binding: PickerBinding, now: Date): Promise<string> {
  const iat = epochSeconds(now);
  return new SignJWT({
    tid: binding.tenantId,
    pid: binding.platformId,
    dep: binding.deploymentId,
    ret: binding.returnUrl,
    ...(binding.data !== undefined && { data: binding.data }),
    multi: binding.acceptMultiple,
    anc: binding.ancestors,
  })
    .setProtectedHeader({ alg: 'HS256' })
    .setJti(randomBytes(16).toString('base64url'))
    .setAudience(PICKER_AUDIENCE)
    .setIssuedAt(iat)
    .setExpirationTime(iat + PICKER_SECONDS)
    .sign(pickerKey(config));
}

/**
 * Why a picker token was refused: not ours, altered or malformed; or expired — then its signature
 * did verify (jose checks the claims after the signature), so its `frame-ancestors` can be trusted
 * for the refusal page, which shows in the platform's frame.
 */
export type PickerTokenProblem = 'invalid' | { expired: true; ancestors: string };

/** The picker token's content, or the problem. */
export async function readPickerToken(config: Pick<Config, 'jwtSecret'>, token: string, now: Date): Promise<PickerToken | PickerTokenProblem> {
  if (token.length > 16 * 1024) return 'invalid';
  try {
    const { payload } = await jwtVerify(token, pickerKey(config), {
      algorithms: ['HS256'],
      audience: PICKER_AUDIENCE,
      currentDate: now,
      requiredClaims: ['jti', 'exp'],
    });
    const { tid, pid, dep, ret, data, multi, anc } = payload as Record<string, unknown>;
    if (
      typeof tid !== 'string' ||
      typeof pid !== 'string' ||
      typeof dep !== 'string' ||
      typeof ret !== 'string' ||
      typeof multi !== 'boolean' ||
      typeof anc !== 'string'
    )
      return 'invalid';
    if (data !== undefined && typeof data !== 'string') return 'invalid';
    return {
      id: payload.jti!,
      exp: payload.exp!,
      tenantId: tid,
      platformId: pid,
      deploymentId: dep,
      returnUrl: ret,
      ...(data !== undefined && { data }),
      acceptMultiple: multi,
      ancestors: anc,
    };
  } catch (err) {
    if (!(err instanceof joseErrors.JWTExpired)) return 'invalid';
    const anc = decodeJwt(token).anc;
    return { expired: true, ancestors: typeof anc === 'string' ? anc : "'none'" };
  }
}

/** A content item of type `ltiResourceLink` (Deep Linking 2.0 §3.1) placing one activity. */
export interface ResourceLinkItem {
  type: 'ltiResourceLink';
  title: string;
  text: string;
  url: string;
  custom: { activity_id: string };
  lineItem: { scoreMaximum: 100; label: string; resourceId: string };
}

export const DL_CLAIM = {
  contentItems: 'https://purl.imsglobal.org/spec/lti-dl/claim/content_items',
  data: 'https://purl.imsglobal.org/spec/lti-dl/claim/data',
  msg: 'https://purl.imsglobal.org/spec/lti-dl/claim/msg',
} as const;

/**
 * The signed `LtiDeepLinkingResponse` for `picker` placing `items`, from the registration
 * (`clientId`, `issuer`), signed with `key` at `now`.
 */
export function signResponse(
  key: SigningKey,
  p: { clientId: string; issuer: string; picker: PickerBinding; items: ResourceLinkItem[]; now: Date },
): Promise<string> {
  const iat = epochSeconds(p.now);
  return new SignJWT({
    nonce: randomBytes(16).toString('base64url'),
    'https://purl.imsglobal.org/spec/lti/claim/deployment_id': p.picker.deploymentId,
    'https://purl.imsglobal.org/spec/lti/claim/message_type': 'LtiDeepLinkingResponse',
    'https://purl.imsglobal.org/spec/lti/claim/version': '1.3.0',
    ...(p.picker.data !== undefined && { [DL_CLAIM.data]: p.picker.data }),
    [DL_CLAIM.contentItems]: p.items,
    [DL_CLAIM.msg]: p.items.length === 1 ? `Placed "${p.items[0]!.title}".` : `Placed ${p.items.length} activities.`,
  })
    .setProtectedHeader({ alg: 'RS256', kid: key.kid, typ: 'JWT' })
    .setIssuer(p.clientId)
    .setAudience(p.issuer)
    .setIssuedAt(iat)
    .setExpirationTime(iat + TOKEN_LIFETIME_SECONDS)
    .sign(key.privateKey);
}
