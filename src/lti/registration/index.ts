/**
 * LTI Dynamic Registration 1.0 (1EdTech, 2021; issue #22): an LMS registers the tool by itself.
 * See README.md in this folder for the whole flow and its decisions.
 *
 * - `mintRegistrationUrl` (`svc lti registration-url <tenant>`): a single-use code (codes.ts) →
 *   `{BASE_URL}/lti/v1/register/<code>`, valid 24 h.
 * - `registerWithCode` (`GET /lti/v1/register/<code>?openid_configuration=…&registration_token=…`):
 *   hold the code, read and check the platform's configuration, post the tool's registration
 *   (exchange.ts), then in one transaction store the registration in the code's tenant (issuer,
 *   client id, authorization / token / JWK set URLs, token audience = the configuration's
 *   `authorization_server`, the deployment id of the answer — or, with none, any deployment),
 *   consume the code and write the audit event `lti.platform.register`. The answer is the result
 *   page (page.ts), which posts `org.imsglobal.lti.close` to the platform's window.
 *
 * Refusals are HTML pages (pages.ts `sendErrorPage`), 4xx: a malformed request, an unknown, used
 * or expired code, a registration already running on the code, and every platform failure
 * (exchange.ts). A failure stores nothing and leaves the code usable until it expires.
 */
import type { FastifyReply } from 'fastify';
import type { Deps } from '../../deps.ts';
import { audit } from '../../audit/index.ts';
import type { Queryable } from '../../db/index.ts';
import { isDbUnavailable } from '../../db/errors.ts';
import { originOf, registrationAncestors } from '../framing.ts';
import { sendErrorPage } from '../pages.ts';
import { addPlatform, PlatformTaken } from '../platforms.ts';
import { claimCode, consumeCode, mintCode, releaseCode, type CodeRefusal, type MintedCode } from './codes.ts';
import { postRegistration, readPlatformConfig, RegistrationError, toolRegistration } from './exchange.ts';
import { sendRegisteredPage } from './page.ts';

export { CODE_TTL_HOURS } from './codes.ts';
export type { MintedCode } from './codes.ts';

/** `svc lti registration-url`: a new registration URL for tenant `tenantId` (slug `tenant`) under `baseUrl`. */
export function mintRegistrationUrl(q: Queryable, tenantId: string, tenant: string, baseUrl: string): Promise<MintedCode> {
  return mintCode(q, tenantId, tenant, baseUrl);
}

const TITLE = 'The tool could not be registered';
const MAX_TOKEN_CHARS = 8192;

const REFUSALS: Record<CodeRefusal, [number, string, string]> = {
  unknown: [404, 'unknown_code', 'This registration URL is not valid. Ask the service administrator for a new one (svc lti registration-url).'],
  used: [410, 'code_used', 'This registration URL was already used: each one registers one LMS. Ask the service administrator for a new one.'],
  expired: [410, 'code_expired', 'This registration URL has expired (they are valid for 24 hours). Ask the service administrator for a new one.'],
  in_progress: [409, 'registration_in_progress', 'A registration with this URL is running right now. Wait a minute, then try again if it did not finish.'],
};

/**
 * `GET /lti/v1/register/<code>`: run the registration and answer with its page (see the header).
 * `query` is the request's query string parameters (single-valued; undefined when repeated).
 */
export async function registerWithCode(deps: Deps, code: string, query: Record<string, string> | undefined, reply: FastifyReply) {
  const configUrl = query?.openid_configuration;
  // The platform opens this page (a frame or a window): its pages may frame it, nothing else.
  let ancestors = registrationAncestors(configUrl);
  const refuse = (status: number, errCode: string, message: string) => sendErrorPage(reply, status, errCode, TITLE, message, ancestors);
  if (!query || !configUrl)
    return refuse(
      400,
      'invalid_request',
      'This page is opened by the LMS during registration, with openid_configuration (and usually registration_token): paste the URL in the LMS\'s "register a tool by URL" form.',
    );
  if (configUrl.length > 2048 || !originOf(configUrl)) return refuse(400, 'invalid_request', "The LMS's openid_configuration is not an http(s) URL.");
  const token = query.registration_token || undefined;
  if (token !== undefined && token.length > MAX_TOKEN_CHARS) return refuse(400, 'invalid_request', "The LMS's registration_token is too long.");

  try {
    const held = await claimCode(deps.db, code, deps.now());
    if (typeof held === 'string') return refuse(...REFUSALS[held]);
    try {
      const platform = await readPlatformConfig(deps.config, configUrl, token);
      ancestors = registrationAncestors(configUrl, platform.issuer);
      const [tenant] = await deps.db.query<{ slug: string; name: string | null }>('select slug, name from tenants where id = $1', [held.tenant_id]);
      const clientName = `Learning activities (${tenant?.name || tenant?.slug || 'service'})`;
      const answer = await postRegistration(deps.config, platform, toolRegistration(deps.config.baseUrl, platform, clientName), token);
      const stored = await deps.db.transaction(async (tx) => {
        let added: Awaited<ReturnType<typeof addPlatform>>;
        try {
          added = await addPlatform(tx, held.tenant_id, {
            issuer: platform.issuer,
            client_id: answer.client_id,
            auth_url: platform.authorization_endpoint,
            token_url: platform.token_endpoint,
            jwks_url: platform.jwks_uri,
            ...(platform.authorization_server !== undefined && { token_audience: platform.authorization_server }),
            deployments: answer.deployment_id === undefined ? [] : [answer.deployment_id],
            any_deployment: answer.deployment_id === undefined,
          });
        } catch (err) {
          if (err instanceof PlatformTaken)
            throw new RegistrationError(
              409,
              'platform_taken',
              'The LMS gave a client id that is already registered with another organisation of this service.',
            );
          throw err;
        }
        if (!(await consumeCode(tx, held, added.platform.id, deps.now()))) throw new RegistrationError(410, 'code_used', REFUSALS.used[2]);
        await audit(tx, {
          tenantId: held.tenant_id,
          action: 'lti.platform.register',
          target: { type: 'lti_platform', id: added.platform.id },
          detail: {
            code_id: held.id,
            issuer: platform.issuer,
            client_id: answer.client_id,
            deployment_id: answer.deployment_id ?? null,
            created: added.created,
          },
          actor: { kind: 'system' },
        });
        return added.platform;
      });
      return sendRegisteredPage(
        reply,
        {
          tenant: stored.tenant,
          issuer: stored.issuer,
          client_id: stored.client_id,
          ...(answer.deployment_id !== undefined && { deployment_id: answer.deployment_id }),
        },
        ancestors,
      );
    } catch (err) {
      await releaseCode(deps.db, held).catch(() => undefined);
      throw err;
    }
  } catch (err) {
    if (err instanceof RegistrationError) {
      const tail =
        err.code === 'code_used'
          ? ''
          : ' Nothing was stored; the registration URL stays valid until it expires, so the registration can be tried again from the LMS.';
      return refuse(err.status, err.code, err.message + tail);
    }
    if (isDbUnavailable(err)) return refuse(503, 'unavailable', 'The service cannot register tools right now. Try again in a few seconds.');
    reply.log.error({ err }, 'lti: dynamic registration failed');
    return refuse(500, 'internal_error', 'The registration failed because of an error on our side. Nothing was stored.');
  }
}
