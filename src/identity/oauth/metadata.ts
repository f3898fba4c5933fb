/**
 * Authorization-server metadata (RFC 8414) for issuer `{BASE_URL}/auth/v1` — the `iss` of every
 * access token — served where MCP clients look for it (MCP authorization 2025-11-25 §2.3.2,
 * RFC 8414 §3.1 path insertion, OIDC Discovery path appending):
 *
 * - `/.well-known/oauth-authorization-server/auth/v1` and `/.well-known/openid-configuration/auth/v1`
 *   (registered at the root by app.ts, `oauthDiscoveryRoutes`);
 * - `/auth/v1/.well-known/oauth-authorization-server` and `/auth/v1/.well-known/openid-configuration`
 *   (inside the identity plugin).
 *
 * The OpenID-style documents add what OIDC Discovery requires (`jwks_uri`,
 * `subject_types_supported`, `id_token_signing_alg_values_supported`) so clients that parse them
 * strictly accept them; no ID tokens are issued (`openid` is not a supported scope) and the JWKS
 * is empty: access tokens are HS256 with a secret that is never published.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Deps } from '../../deps.ts';
import { issuer } from '../jwt.ts';
import { SUPPORTED_SCOPES } from './scopes.ts';

/** The RFC 8414 document; `oidc` adds the OpenID Provider fields. */
export function authorizationServerMetadata(deps: Pick<Deps, 'config'>, oidc = false) {
  const iss = issuer(deps);
  return {
    issuer: iss,
    authorization_endpoint: `${iss}/oauth/authorize`,
    token_endpoint: `${iss}/oauth/token`,
    registration_endpoint: `${iss}/oauth/clients/register`,
    revocation_endpoint: `${iss}/oauth/revoke`,
    revocation_endpoint_auth_methods_supported: ['none'],
    scopes_supported: SUPPORTED_SCOPES,
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    token_endpoint_auth_methods_supported: ['none'],
    code_challenge_methods_supported: ['S256'],
    client_id_metadata_document_supported: true,
    authorization_response_iss_parameter_supported: true,
    ...(oidc && {
      jwks_uri: `${iss}/.well-known/jwks.json`,
      subject_types_supported: ['public'],
      id_token_signing_alg_values_supported: ['HS256'],
    }),
  };
}

const CACHE = 'public, max-age=300';

/** The two documents inside the identity plugin (`/auth/v1/.well-known/…`), no `apikey` needed. */
export function metadataRoutes(app: FastifyInstance, deps: Deps) {
  const config = { apikey: false };
  app.get('/.well-known/oauth-authorization-server', { config }, async (_req, reply) =>
    reply.header('cache-control', CACHE).send(authorizationServerMetadata(deps)),
  );
  app.get('/.well-known/openid-configuration', { config }, async (_req, reply) =>
    reply.header('cache-control', CACHE).send(authorizationServerMetadata(deps, true)),
  );
  app.get('/.well-known/jwks.json', { config }, async (_req, reply) => reply.header('cache-control', CACHE).send({ keys: [] }));
}

/**
 * The path-inserted documents at the root (RFC 8414 §3.1): `/.well-known/…/auth/v1`. Public
 * documents, readable cross-origin (browser-based MCP clients fetch them).
 */
export async function oauthDiscoveryRoutes(app: FastifyInstance, deps: Deps) {
  const send = (oidc: boolean) => async (_req: unknown, reply: FastifyReply) =>
    reply.header('cache-control', CACHE).header('access-control-allow-origin', '*').send(authorizationServerMetadata(deps, oidc));
  app.get('/.well-known/oauth-authorization-server/auth/v1', send(false));
  app.get('/.well-known/openid-configuration/auth/v1', send(true));
}
