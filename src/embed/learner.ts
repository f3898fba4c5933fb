/**
 * Who is calling the embed endpoints: the learner behind an IdP token or a session token
 * (`identifyCaller`, used by the judge and the appeal endpoint).
 *
 * An IdP subject maps to one user forever: the pair (issuer, `sub`) is the identity
 * `auth.identities(provider = 'idp:<issuer>', provider_id = sub)`. On first sight the user is
 * created through `createUser` (the one user-creation path) *without* an email: the IdP's
 * email is not verified by us and could collide with, or be mistaken for, an instructor's
 * password account. The IdP's profile claims are kept in the identity's `identity_data`.
 * Every sign-in also ensures a `learner` membership in the tenant (`on conflict do nothing`,
 * so an author stays an author), and applies the tenant's author grants (author-grants.ts): a
 * teacher an admin granted authorship, by IdP subject or verified email, becomes an author.
 *
 * First sight is serialised per identity with a transaction-scoped advisory lock, so two
 * concurrent first requests of one subject create one user (the second waits, then finds it).
 */
import type { Queryable } from '../db/index.ts';
import type { Deps } from '../deps.ts';
import { AuthError, createUser, findUserById, TokenError, verifySession, type UserRow, type VerifiedSession } from '../identity/index.ts';
import { applyGrants } from './author-grants.ts';
import { forbidden, unauthorized } from './errors.ts';
import { findTenantIdp, type IdpClaims, type IdpVerifier, type TenantIdp } from './idp.ts';
import { addLearner } from '../lib/memberships.ts';

/** Namespace (first key) of the advisory locks taken on first sight of an IdP subject. */
const IDENTITY_LOCK_NAMESPACE = 7310;

/** Profile claims copied into `auth.identities.identity_data` when present. */
const PROFILE_CLAIMS = ['email', 'email_verified', 'name', 'given_name', 'family_name', 'preferred_username', 'locale'];

/** `auth.identities.provider` of an IdP. */
export const idpProvider = (issuer: string) => `idp:${issuer}`;

function identityData(issuer: string, claims: IdpClaims): Record<string, unknown> {
  const data: Record<string, unknown> = { iss: issuer, sub: claims.sub };
  for (const name of PROFILE_CLAIMS) {
    const value = claims[name];
    if (typeof value === 'string' ? value.length <= 500 : typeof value === 'boolean') data[name] = value;
  }
  return data;
}

function refuseBanned(user: UserRow, deps: Pick<Deps, 'now'>) {
  if (user.banned_until && new Date(user.banned_until) > deps.now()) throw unauthorized('user is banned');
}

/**
 * The user of an IdP subject in `idp`'s tenant, created on first sight, with at least a
 * `learner` membership in the tenant. Runs in the caller's transaction `tx`.
 * Throws 401 `unauthorized` when the user is banned.
 */
export async function findOrCreateIdpLearner(tx: Queryable, deps: Pick<Deps, 'now'>, idp: TenantIdp, claims: IdpClaims): Promise<UserRow> {
  const provider = idpProvider(idp.issuer);
  await tx.query('select pg_advisory_xact_lock($1::int, hashtext($2::text))', [IDENTITY_LOCK_NAMESPACE, `${provider}\n${claims.sub}`]);
  const [identity] = await tx.query<{ user_id: string }>('select user_id from auth.identities where provider = $1 and provider_id = $2', [
    provider,
    claims.sub,
  ]);
  const user = identity ? await findUserById(tx, identity.user_id) : await createUser(tx, { provider, providerId: claims.sub });
  if (!user) throw unauthorized('identity without a user');
  refuseBanned(user, deps);
  await tx.query(
    `update auth.identities set identity_data = $3::text::jsonb, last_sign_in_at = now(), updated_at = now()
      where provider = $1 and provider_id = $2`,
    [provider, claims.sub, JSON.stringify(identityData(idp.issuer, claims))],
  );
  await addLearner(tx, idp.tenantId, user.svc_user_id);
  await applyGrants(tx, idp.tenantId, idp.issuer, claims, user.svc_user_id);
  return user;
}

/**
 * A session token, verified by `verifySession` (signature, expiry, live session, user not
 * banned), or undefined when `token` is not a valid session token of this service (it may then
 * be an IdP token; if it is neither, the caller answers 401).
 */
export async function trySessionToken(deps: Deps, token: string): Promise<VerifiedSession | undefined> {
  try {
    return await verifySession(deps, token);
  } catch (err) {
    if (err instanceof TokenError || err instanceof AuthError) return undefined;
    throw err;
  }
}

/**
 * The id of tenant `slug` for a session of `svcUserId` (one query). Throws 401 `unauthorized`
 * when the user is not a member of it (an unknown tenant and a tenant one is not a member of look
 * the same), and 403 `forbidden` when the session is bound to another tenant (`boundTenantId`,
 * the token's `tenant_id` claim): an embed session acts only in the tenant that minted it.
 */
export async function sessionTenantId(tx: Queryable, slug: string, svcUserId: string, boundTenantId: string | null): Promise<string> {
  const [row] = await tx.query<{ id: string; member: boolean }>(
    `select t.id, exists (select 1 from memberships m where m.tenant_id = t.id and m.user_id = $2) as member
       from tenants t where t.slug = $1`,
    [slug, svcUserId],
  );
  if (boundTenantId !== null && row?.id !== boundTenantId) throw forbidden(`this session belongs to another tenant than "${slug}"`);
  if (!row?.member) throw unauthorized('session user is not a member of the tenant');
  return row.id;
}

/**
 * Who submits: a session of this service (its user, and the tenant an embed session is bound to),
 * or an IdP token of the tenant whose learner `verify` resolves (created on first sight) inside
 * the caller's transaction.
 */
export type Caller =
  | { kind: 'session'; svcUserId: string; boundTenantId: string | null }
  | { kind: 'idp'; verify: (tx: Queryable) => Promise<{ tenantId: string; svcUserId: string }> };

/** Authenticate the bearer token for tenant `slug` (no writes yet); throws 401. */
export async function identifyCaller(deps: Deps, idps: IdpVerifier, token: string | undefined, slug: string): Promise<Caller> {
  if (!token) throw unauthorized('no bearer token');
  const session = await trySessionToken(deps, token);
  if (session) return { kind: 'session', svcUserId: session.user.svc_user_id, boundTenantId: session.claims.tenant_id ?? null };
  const idp = await findTenantIdp(deps.db, slug);
  if (!idp) throw unauthorized(`tenant "${slug}" is unknown or has no IdP`);
  const claims = await idps.verify(token, idp);
  return {
    kind: 'idp',
    verify: async (tx) => ({ tenantId: idp.tenantId, svcUserId: (await findOrCreateIdpLearner(tx, deps, idp, claims)).svc_user_id }),
  };
}
