/**
 * The two calls of LTI Dynamic Registration 1.0 that the tool makes, both through the outbound
 * guard (src/http/outbound.ts: no private addresses unless `SVC_FETCH_ALLOW_PRIVATE`, time and
 * size caps, no redirects):
 *
 * 1. §3.4 `GET openid_configuration` (with `Authorization: Bearer <registration_token>` when the
 *    platform gave one — Canvas guards its configuration with it): the platform's OpenID
 *    configuration. Checked (`readPlatformConfig`): JSON; `issuer`, `authorization_endpoint`,
 *    `token_endpoint`, `jwks_uri`, `registration_endpoint` http(s) URLs; the
 *    `https://purl.imsglobal.org/spec/lti-platform-configuration` object; `private_key_jwt` among
 *    `token_endpoint_auth_methods_supported` when that is listed; and (§3.5.1) the issuer's host
 *    equal to the configuration URL's host — else `issuer_mismatch`.
 * 2. §3.5 `POST registration_endpoint` (JSON, Bearer `registration_token`): the tool's
 *    registration (`toolRegistration`): web application, `id_token` response, the implicit and
 *    client-credentials grants, our login URL, redirect URI and JWK set URL, `private_key_jwt`, the
 *    AGS and NRPS scopes, and the LTI tool configuration (domain, target link URI, claims, the
 *    resource-link and deep-linking messages). The answer (§3.6) must carry a `client_id`; the
 *    deployment id of its tool configuration is taken when present.
 *
 * Every failure throws `RegistrationError` with a code and words for the LMS administrator.
 */
import { z } from 'zod';
import type { Config } from '../../config.ts';
import { fetchResource, FetchRefused } from '../../http/outbound.ts';
import { TOOL_SCOPES, toolConfig } from '../config.ts';

/** Each call's time budget, in milliseconds. */
export const EXCHANGE_TIMEOUT_MS = 10_000;
/** Largest configuration or registration answer read, in bytes. */
export const EXCHANGE_MAX_BYTES = 64 * 1024;

export const PLATFORM_CONFIGURATION = 'https://purl.imsglobal.org/spec/lti-platform-configuration';
export const TOOL_CONFIGURATION = 'https://purl.imsglobal.org/spec/lti-tool-configuration';

/** A refused registration: HTTP status of our page, a stable code, words for the administrator. */
export class RegistrationError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

const httpUrl = z
  .string()
  .max(2048)
  .refine((u) => URL.canParse(u) && ['http:', 'https:'].includes(new URL(u).protocol), 'an http(s) URL');

const platformConfigSchema = z.looseObject({
  issuer: httpUrl,
  authorization_endpoint: httpUrl,
  token_endpoint: httpUrl,
  jwks_uri: httpUrl,
  registration_endpoint: httpUrl,
  /** Dynamic Registration §3.4.1: the `aud` of client assertions when not the token endpoint (Brightspace). */
  authorization_server: z.string().trim().min(1).max(2048).optional(),
  token_endpoint_auth_methods_supported: z.array(z.string()).optional(),
  [PLATFORM_CONFIGURATION]: z.looseObject({
    product_family_code: z.string().max(200).optional(),
    messages_supported: z.array(z.looseObject({ type: z.string() })).optional(),
  }),
});

/** The parts of a platform's OpenID configuration the tool uses. */
export type PlatformConfig = z.infer<typeof platformConfigSchema>;

const registrationAnswerSchema = z.looseObject({
  client_id: z.string().trim().min(1).max(255),
  [TOOL_CONFIGURATION]: z.looseObject({ deployment_id: z.string().trim().min(1).max(255).optional() }).optional(),
});

/** What the platform's answer to our registration gives: our client id, and the deployment id when it made one. */
export interface RegistrationAnswer {
  client_id: string;
  deployment_id?: string;
}

type FetchConfig = Pick<Config, 'fetchAllowPrivate' | 'fetchCa'>;

const bearer = (token: string | undefined): Record<string, string> => (token ? { authorization: `Bearer ${token}` } : {});
const isJson = (type: string) => /^application\/([a-z.+-]*\+)?json\b/i.test(type) || type === '';

/** Parse `body` as a JSON object, or throw `RegistrationError` `code`. */
function jsonObject(body: Buffer, code: string, what: string): Record<string, unknown> {
  try {
    const value = JSON.parse(body.toString('utf8'));
    if (value && typeof value === 'object' && !Array.isArray(value)) return value;
  } catch {
    // below
  }
  throw new RegistrationError(400, code, `The LMS's ${what} is not a JSON object.`);
}

/** Step 1: fetch and check the platform's configuration at `url` (the `openid_configuration` parameter). */
export async function readPlatformConfig(config: FetchConfig, url: string, registrationToken: string | undefined): Promise<PlatformConfig> {
  let body: Buffer;
  try {
    const r = await fetchResource(url, {
      allowPrivate: config.fetchAllowPrivate,
      ca: config.fetchCa,
      timeoutMs: EXCHANGE_TIMEOUT_MS,
      maxBytes: EXCHANGE_MAX_BYTES,
      maxRedirects: 0,
      accept: isJson,
      acceptHeader: 'application/json',
      headers: bearer(registrationToken),
    });
    if (r.truncated) throw new RegistrationError(400, 'configuration_invalid', "The LMS's configuration is too large.");
    body = r.body;
  } catch (err) {
    if (err instanceof FetchRefused)
      throw new RegistrationError(400, 'configuration_unavailable', `The LMS's configuration could not be read: ${err.message}.`);
    throw err;
  }
  const parsed = platformConfigSchema.safeParse(jsonObject(body, 'configuration_invalid', 'configuration'));
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new RegistrationError(
      400,
      'configuration_invalid',
      `The LMS's configuration is not usable: ${issue.path.join('.') || 'the document'} is missing or wrong (${issue.message}).`,
    );
  }
  const platform = parsed.data;
  if (new URL(platform.issuer).host !== new URL(url).host) {
    throw new RegistrationError(
      400,
      'issuer_mismatch',
      `The LMS's configuration names the issuer ${new URL(platform.issuer).host}, which is not the host it was read from (${new URL(url).host}).`,
    );
  }
  const methods = platform.token_endpoint_auth_methods_supported;
  if (methods && !methods.includes('private_key_jwt')) {
    throw new RegistrationError(400, 'configuration_invalid', 'The LMS does not accept private_key_jwt client authentication, which LTI 1.3 tools use.');
  }
  return platform;
}

/** The registration the tool sends (Dynamic Registration §3.5.1), for the service at `baseUrl`. */
export function toolRegistration(baseUrl: string, platform: PlatformConfig, clientName: string): Record<string, unknown> {
  const tool = toolConfig(baseUrl);
  const supported = platform[PLATFORM_CONFIGURATION].messages_supported?.map((m) => m.type);
  // Deep linking only where the platform says it offers it (when it says what it offers).
  const deepLinking = !supported || supported.includes('LtiDeepLinkingRequest');
  return {
    application_type: 'web',
    response_types: ['id_token'],
    grant_types: ['implicit', 'client_credentials'],
    initiate_login_uri: tool.login_url,
    redirect_uris: tool.redirect_uris,
    client_name: clientName,
    jwks_uri: tool.jwks_url,
    token_endpoint_auth_method: 'private_key_jwt',
    scope: TOOL_SCOPES.join(' '),
    [TOOL_CONFIGURATION]: {
      domain: tool.domain,
      target_link_uri: tool.launch_url,
      claims: ['iss', 'sub', 'name', 'given_name', 'family_name', 'email'],
      messages: [
        { type: 'LtiResourceLinkRequest', target_link_uri: tool.launch_url, label: clientName },
        ...(deepLinking ? [{ type: 'LtiDeepLinkingRequest', target_link_uri: tool.deep_linking_url, label: `${clientName}: pick an activity` }] : []),
      ],
    },
  };
}

/** Step 2: post `registration` to the platform's registration endpoint; its answer. */
export async function postRegistration(
  config: FetchConfig,
  platform: PlatformConfig,
  registration: Record<string, unknown>,
  registrationToken: string | undefined,
): Promise<RegistrationAnswer> {
  let body: Buffer;
  try {
    const r = await fetchResource(platform.registration_endpoint, {
      allowPrivate: config.fetchAllowPrivate,
      ca: config.fetchCa,
      timeoutMs: EXCHANGE_TIMEOUT_MS,
      maxBytes: EXCHANGE_MAX_BYTES,
      method: 'POST',
      body: JSON.stringify(registration),
      headers: { 'content-type': 'application/json', ...bearer(registrationToken) },
      accept: isJson,
      acceptHeader: 'application/json',
    });
    if (r.truncated) throw new RegistrationError(400, 'registration_invalid', "The LMS's answer to the registration is too large.");
    body = r.body;
  } catch (err) {
    if (err instanceof FetchRefused) {
      const refused = err.status !== undefined && err.status >= 400 && err.status < 500;
      throw new RegistrationError(
        400,
        refused ? 'registration_refused' : 'registration_failed',
        `The LMS ${refused ? 'refused' : 'did not complete'} the registration: ${err.message}.`,
      );
    }
    throw err;
  }
  const parsed = registrationAnswerSchema.safeParse(jsonObject(body, 'registration_invalid', 'answer to the registration'));
  if (!parsed.success) throw new RegistrationError(400, 'registration_invalid', "The LMS's answer to the registration has no usable client_id.");
  const deployment = parsed.data[TOOL_CONFIGURATION]?.deployment_id;
  return { client_id: parsed.data.client_id, ...(deployment !== undefined && { deployment_id: deployment }) };
}
