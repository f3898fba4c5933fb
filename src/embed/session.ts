/**
 * `POST /v1/embed/session` — exchange a tenant's IdP token for a session of this service.
 *
 *   body {idp_token, tenant (slug)} → 200 {access_token, refresh_token, expires_in, svc_user_id}
 *
 * 1. find the tenant's IdP settings (unknown tenant / no IdP → the same 401 as a bad token);
 * 2. verify the IdP token (idp.ts);
 * 3. in one transaction: find or create the learner and their membership (learner.ts), then
 *    start a session as a password sign-in does (`startSession(…, 'idp', tenantId)`), bound to
 *    this tenant.
 * The access token is a session JWT with a `tenant_id` claim: it works on `/mcp`, `/auth/v1/user`
 * and the embed endpoints, and its refresh token on `/auth/v1/token?grant_type=refresh_token`
 * (the claim survives refreshes) — but it acts in this tenant only. The same learner may belong
 * to other tenants that trust the same issuer; a token one tenant refuses (say, for its
 * audience) cannot reach it through another: `/v1/embed/judge` refuses another tenant's body
 * (403), and on `/mcp` RLS narrows the caller's tenants to the claim's (migration 0060). Author
 * rights exist only where an admin granted them, and only in the session's tenant.
 */
import { z } from 'zod';
import type { Deps } from '../deps.ts';
import { startSession } from '../identity/index.ts';
import { unauthorized } from './errors.ts';
import { findTenantIdp, type IdpVerifier } from './idp.ts';
import { findOrCreateIdpLearner } from './learner.ts';
import { slugSchema } from '../lib/ids.ts';

export const tenantSlug = slugSchema('must be a tenant slug').describe('The tenant, by slug.');

export const sessionBody = z.object({
  idp_token: z.string().min(1).max(16_384).describe("A JWT issued by the tenant's identity provider."),
  tenant: tenantSlug,
});
export type SessionBody = z.infer<typeof sessionBody>;

export const sessionResponse = z.object({
  access_token: z
    .string()
    .describe('Session JWT (HS256) bound to this tenant (`tenant_id` claim), usable on /mcp, /auth/v1 and /v1/embed in this tenant only.'),
  refresh_token: z.string().describe('Refresh token for /auth/v1/token?grant_type=refresh_token.'),
  expires_in: z.number().int().describe('Lifetime of the access token in seconds.'),
  svc_user_id: z.uuid().describe("The learner's id in this service (stable per IdP issuer and subject)."),
});
export type SessionResponse = z.infer<typeof sessionResponse>;

/** Verify the IdP token and start a session for its learner; throws `ApiError` 401. */
export async function createEmbedSession(deps: Deps, idps: IdpVerifier, body: SessionBody): Promise<SessionResponse> {
  const idp = await findTenantIdp(deps.db, body.tenant);
  if (!idp) throw unauthorized(`tenant "${body.tenant}" is unknown or has no IdP`);
  const claims = await idps.verify(body.idp_token, idp);
  return deps.db.transaction(async (tx) => {
    const user = await findOrCreateIdpLearner(tx, deps, idp, claims);
    const tokens = await startSession(tx, deps, user, 'idp', idp.tenantId);
    return {
      access_token: tokens.access_token,
      refresh_token: tokens.refresh_token,
      expires_in: tokens.expires_in,
      svc_user_id: user.svc_user_id,
    };
  });
}
