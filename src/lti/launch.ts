/**
 * Verifying a launch (LTI Core 1.3 §5.1.2–§5.3; 1EdTech Security Framework 1.0 §5.1.3): the
 * platform form-posts `id_token` and `state` to `/lti/v1/launch`. Each rule below refuses with a
 * `LaunchError` (HTTP 4xx, a code, words for the learner); the route shows it as a page:
 *
 * 1. `state` is ours (signature, `aud`), unexpired (login.ts) — `invalid_state`;
 * 2. the browser that started the login sent back the binding cookie with the value whose hash the
 *    state carries — else `browser_binding` (the route offers a new window, never accepts);
 * 3. the id_token is a compact JWS of at most `MAX_ID_TOKEN_CHARS`, `alg` RS256 only (none, HS256
 *    — e.g. signed with the platform's public key — and every other algorithm are refused), with a
 *    `kid` found in the registration's JWK set (platform-keys.ts); signature;
 * 4. `iss` = the registration's issuer; `aud` = its client id, or an array holding it; `azp`
 *    required when there are several audiences, and when present (whatever `aud` is) = the client id;
 * 5. `exp` in the future and `iat` not in the future, each with `CLOCK_SKEW_SECONDS` of leeway;
 * 6. `nonce` = the state's nonce; the nonce and the state are then each used once
 *    (`lti_used_values`, in the launch's transaction: `replayed`);
 * 7. `deployment_id` registered for the registration; `message_type` LtiResourceLinkRequest or
 *    LtiDeepLinkingRequest (`MESSAGE_TYPES`); `version` 1.3.0; `roles` an array; a
 *    `resource_link` with an `id` on a resource-link launch; a non-empty `sub`.
 */
import { decodeProtectedHeader, errors as joseErrors, jwtVerify, type JWTPayload, type JWTVerifyGetKey, type ProtectedHeaderParameters } from 'jose';
import type { Queryable } from '../db/index.ts';
import { CLOCK_SKEW_SECONDS } from './keys.ts';
import type { LoginState } from './login.ts';
import { PlatformKeysError, type PlatformKeys } from './platform-keys.ts';
import { hasDeployment, type Platform } from './platforms.ts';

/** Longest id_token we read, in characters (real ones are a few KB). */
export const MAX_ID_TOKEN_CHARS = 64 * 1024;

export const CLAIM = {
  messageType: 'https://purl.imsglobal.org/spec/lti/claim/message_type',
  version: 'https://purl.imsglobal.org/spec/lti/claim/version',
  deploymentId: 'https://purl.imsglobal.org/spec/lti/claim/deployment_id',
  roles: 'https://purl.imsglobal.org/spec/lti/claim/roles',
  resourceLink: 'https://purl.imsglobal.org/spec/lti/claim/resource_link',
  targetLinkUri: 'https://purl.imsglobal.org/spec/lti/claim/target_link_uri',
  custom: 'https://purl.imsglobal.org/spec/lti/claim/custom',
  context: 'https://purl.imsglobal.org/spec/lti/claim/context',
  /** Assignment and Grade Services 2.0 §3.1: `{scope, lineitems, lineitem}`. */
  ags: 'https://purl.imsglobal.org/spec/lti-ags/claim/endpoint',
  /** Names and Role Provisioning Services 2.0 §3.6.1: `{context_memberships_url, service_versions}`. */
  nrps: 'https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice',
  /** Deep Linking 2.0 §4.4.1: `{deep_link_return_url, accept_types, accept_multiple, data, …}`. */
  deepLinkingSettings: 'https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings',
} as const;

/** The launches the tool handles (LTI Core 1.3 §5.3.1; Deep Linking 2.0 §4.4.1). */
export const MESSAGE_TYPES = ['LtiResourceLinkRequest', 'LtiDeepLinkingRequest'] as const;
export type MessageType = (typeof MESSAGE_TYPES)[number];

/**
 * Context (course membership) roles: the LIS membership vocabulary, principal roles and sub-roles
 * (`…/membership#Instructor`, `…/membership/Instructor#TeachingAssistant`), and short names, which
 * LTI Core 1.3 §A.2.3.1 reads as context roles.
 */
const CONTEXT_ROLE = /^(?:http:\/\/purl\.imsglobal\.org\/vocab\/lis\/v2\/membership(?:\/\w+)?#)?\w+$/;
/** The context roles that make a launch an instructor's (Deep Linking 2.0 §1.1 names Instructor, ContentDeveloper and Administrator). */
const STAFF_ROLE = /^(?:http:\/\/purl\.imsglobal\.org\/vocab\/lis\/v2\/membership#)?(?:Instructor|ContentDeveloper|Administrator)$/;
const LEARNER_ROLE = /^(?:http:\/\/purl\.imsglobal\.org\/vocab\/lis\/v2\/membership#)?Learner$/;
/** An institution or system administrator (LTI Core 1.3 §A.2.1, §A.2.2). */
const ADMIN_ROLE = /^http:\/\/purl\.imsglobal\.org\/vocab\/lis\/v2\/(?:institution|system)\/person#(?:Administrator|SysAdmin)$/;

/**
 * Whether the launch's `roles` are an instructor's in its course: a staff context role and no
 * Learner context role. Institution and system roles describe the person, not their part in this
 * course (an institution Instructor who is a Mentor here is not this course's instructor), so they
 * count only for a launch with no context role at all, and only an administrator's.
 */
export const isInstructorLaunch = (claims: Record<string, unknown>) => {
  const roles = claims[CLAIM.roles] as string[];
  const context = roles.filter((r) => CONTEXT_ROLE.test(r));
  if (context.length === 0) return roles.some((r) => ADMIN_ROLE.test(r));
  return context.some((r) => STAFF_ROLE.test(r)) && !context.some((r) => LEARNER_ROLE.test(r));
};

/** A refused launch: the HTTP status, a stable code, a title and words for the person. */
export class LaunchError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly title: string,
    message: string,
  ) {
    super(message);
  }
}

const refuse = (code: string, message: string, status = 400) => new LaunchError(status, code, 'This activity could not be opened', message);

/** The verified launch claims. */
export type LaunchClaims = JWTPayload & { sub: string; nonce: string } & Record<string, unknown>;

/**
 * Verify `idToken` for `platform` (read with its deployments: rule 7 makes no query) and `state`
 * (rules 3–7 but single use, which `useLaunchOnce` does in the launch's transaction). Throws
 * `LaunchError`.
 */
export async function verifyIdToken(keys: PlatformKeys, platform: Platform, state: LoginState, idToken: string, now: Date): Promise<LaunchClaims> {
  if (idToken.length > MAX_ID_TOKEN_CHARS) throw refuse('invalid_id_token', 'The sign-in token from the LMS is too long.');
  if (!/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/.test(idToken)) throw refuse('invalid_id_token', 'The sign-in token from the LMS is not a JWT.');
  let header: ProtectedHeaderParameters;
  try {
    header = decodeProtectedHeader(idToken);
  } catch {
    throw refuse('invalid_id_token', 'The sign-in token from the LMS is not a JWT.');
  }
  if (header.alg !== 'RS256') throw refuse('invalid_id_token', `The sign-in token from the LMS is signed with ${String(header.alg)}; only RS256 is accepted.`);
  if (typeof header.kid !== 'string' || !header.kid) throw refuse('invalid_id_token', 'The sign-in token from the LMS names no key (kid).');
  let getKey: JWTVerifyGetKey;
  try {
    getKey = await keys.resolver(platform.jwks_url, header.kid);
  } catch (err) {
    if (err instanceof PlatformKeysError) throw refuse('platform_keys', `The LMS's keys could not be read (${err.message}). Try again later.`);
    throw err;
  }
  let payload: JWTPayload;
  try {
    ({ payload } = await jwtVerify(idToken, getKey, {
      algorithms: ['RS256'],
      issuer: platform.issuer,
      audience: platform.client_id,
      clockTolerance: CLOCK_SKEW_SECONDS,
      currentDate: now,
      requiredClaims: ['exp', 'iat', 'sub', 'nonce'],
    }));
  } catch (err) {
    if (err instanceof joseErrors.JWKSNoMatchingKey)
      throw refuse('invalid_id_token', 'The sign-in token from the LMS is signed with a key the LMS does not publish.');
    if (err instanceof joseErrors.JWTExpired)
      throw refuse('invalid_id_token', 'The sign-in token from the LMS has expired. Open the activity again from the LMS.');
    if (err instanceof joseErrors.JWTClaimValidationFailed)
      throw refuse('invalid_id_token', `The sign-in token from the LMS is not for this tool (${err.claim} is wrong or missing).`);
    throw refuse('invalid_id_token', 'The sign-in token from the LMS does not verify.');
  }
  const c = payload as LaunchClaims;
  if (typeof c.iat !== 'number' || c.iat > now.getTime() / 1000 + CLOCK_SKEW_SECONDS)
    throw refuse('invalid_id_token', 'The sign-in token from the LMS is issued in the future; check the LMS clock.');
  // OpenID Connect Core §3.1.3.7 (6, 7): several audiences need `azp`; an `azp`, whatever `aud` is, must be us.
  if (Array.isArray(c.aud) && c.aud.length > 1 && c.azp === undefined) {
    throw refuse('invalid_id_token', 'The sign-in token from the LMS has several audiences and does not name this tool as its authorized party (azp).');
  }
  if (c.azp !== undefined && c.azp !== platform.client_id) {
    throw refuse('invalid_id_token', 'The sign-in token from the LMS names another authorized party (azp) than this tool.');
  }
  if (c.nonce !== state.nonce) throw refuse('invalid_id_token', 'The sign-in token from the LMS does not answer this sign-in (nonce).');
  if (typeof c.sub !== 'string' || !c.sub.trim() || c.sub.length > 255) throw refuse('invalid_id_token', 'The LMS did not say who you are (sub is empty).');
  const deployment = c[CLAIM.deploymentId];
  if (typeof deployment !== 'string' || !hasDeployment(platform, deployment)) {
    throw refuse('unknown_deployment', 'This LMS deployment is not registered with the service. Ask the LMS administrator to register its deployment id.');
  }
  if (c[CLAIM.messageType] === undefined) throw refuse('invalid_launch', 'The launch does not say what it is (message_type).');
  if (!MESSAGE_TYPES.includes(c[CLAIM.messageType] as MessageType))
    throw refuse('unsupported_message', `This tool does not handle ${String(c[CLAIM.messageType]).slice(0, 60)} launches.`);
  if (c[CLAIM.version] !== '1.3.0') throw refuse('invalid_launch', 'The launch is not LTI version 1.3.0.');
  if (!Array.isArray(c[CLAIM.roles]) || !(c[CLAIM.roles] as unknown[]).every((r) => typeof r === 'string'))
    throw refuse('invalid_launch', 'The launch does not say your role (roles).');
  if (c[CLAIM.messageType] === 'LtiResourceLinkRequest') {
    const link = c[CLAIM.resourceLink] as { id?: unknown } | undefined;
    if (!link || typeof link !== 'object' || typeof link.id !== 'string' || !link.id)
      throw refuse('invalid_launch', 'The launch does not say which link was opened (resource_link).');
    // LTI Core 1.3 §5.3.4: required, and the same value as the login's target_link_uri.
    if (c[CLAIM.targetLinkUri] !== state.login.target_link_uri)
      throw refuse('invalid_launch', 'The launch does not go where its sign-in started (target_link_uri differs from the login request).');
  }
  return c;
}

/**
 * A launch that passed every check of `verifyIdToken` and the browser binding, handed to the
 * handler of its message type (resource-link.ts, deep-linking/). `framed` is the
 * `frame-ancestors` value for its pages; `clearCookie` the Set-Cookie that removes the binding.
 */
export interface VerifiedLaunch {
  platform: Platform;
  state: LoginState;
  claims: LaunchClaims;
  framed: string;
  clearCookie: string;
  now: Date;
}

/**
 * Use the launch's state and nonce once, in the transaction that stores what the launch makes
 * (a replay fails there, before anything is kept). Throws `LaunchError` `replayed`.
 */
export async function useLaunchOnce(tx: Queryable, launch: VerifiedLaunch, stateSeconds: number): Promise<void> {
  const { platform, state, claims, now } = launch;
  const expires = new Date(now.getTime() + (stateSeconds + 120) * 1000);
  await tx.query('delete from lti_used_values where tenant_id = $1 and expires_at < now()', [platform.tenant_id]);
  await consumeOnce(tx, platform.tenant_id, 'state', state.id, expires);
  await consumeOnce(tx, platform.tenant_id, 'nonce', claims.nonce, new Date(Math.max(expires.getTime(), ((claims.exp ?? 0) + 120) * 1000)));
}

/**
 * Record `value` (a state id, a nonce, or a deep-linking picker token's id) of `kind` as used in
 * tenant `tenantId` until `expiresAt`; throws `LaunchError` `replayed` when it was used before.
 * (`useLaunchOnce` sweeps the expired rows, once per launch.)
 */
export async function consumeOnce(q: Queryable, tenantId: string, kind: 'state' | 'nonce' | 'picker', value: string, expiresAt: Date): Promise<void> {
  const rows = await q.query(
    'insert into lti_used_values (tenant_id, kind, value, expires_at) values ($1, $2, $3, $4) on conflict do nothing returning value',
    [tenantId, kind, value, expiresAt.toISOString()],
  );
  if (!rows.length)
    throw refuse(
      'replayed',
      kind === 'state'
        ? 'This sign-in was already used. Open the activity again from the LMS.'
        : 'This sign-in token from the LMS was already used. Open the activity again from the LMS.',
    );
}
