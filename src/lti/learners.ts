/**
 * LTI learners (issue #22 "Learners"): a platform user — (tenant, issuer, `sub`) — is one service
 * user, the same on every launch: the identity `auth.identities(provider = 'lti:<tenant id>:<issuer>',
 * provider_id = sub)`. On first launch the user is made through identity's `createUser` (the one
 * user-creation path) without an email — the LMS's email is not verified by us and could collide
 * with an instructor's password account — and becomes a `learner` member of the registration's
 * tenant (`on conflict do nothing`: an author stays an author). Names and email the platform sends
 * are kept in the identity's `identity_data` on every launch. `/v1/learners` lists the identity in
 * `external_ids` as `{issuer, subject, source: "lti"}` (migration 0150).
 *
 * First sight is serialised per identity with a transaction-scoped advisory lock, so two launches
 * at once make one user.
 */
import type { Queryable } from '../db/index.ts';
import { createUser, findUserById, type UserRow } from '../identity/index.ts';
import { LaunchError, type LaunchClaims } from './launch.ts';
import type { Platform } from './platforms.ts';
import { addLearner } from '../lib/memberships.ts';

/** Namespace (first key) of the advisory locks taken on first sight of an LTI user. */
const LTI_IDENTITY_LOCK = 7311;
const PROFILE = ['email', 'name', 'given_name', 'family_name', 'middle_name', 'locale'];

/** The `auth.identities.provider` prefix of every LTI user of tenant `tenantId` (learner-data.ts erases by it). */
export const ltiProviderPrefix = (tenantId: string) => `lti:${tenantId}:`;

/** `auth.identities.provider` of an LTI user of `platform`'s tenant and issuer. */
export const ltiProvider = (p: Pick<Platform, 'tenant_id' | 'issuer'>) => `${ltiProviderPrefix(p.tenant_id)}${p.issuer}`;

/**
 * The user of the launch's `sub` (made on first launch), a member of the registration's tenant.
 * Throws `LaunchError` `user_banned` (403) on a sign-in when the account is banned (`banned_until`
 * after `options.now`, default the current time). `signIn: false` (a roster read, nrps.ts) keeps
 * the identity's `last_sign_in_at` as it was and does not refuse a banned account (it only lists it).
 */
export async function ltiLearner(
  tx: Queryable,
  platform: Pick<Platform, 'tenant_id' | 'issuer'>,
  claims: Pick<LaunchClaims, 'sub'> & Record<string, unknown>,
  options: { signIn?: boolean; now?: Date } = {},
): Promise<UserRow> {
  const provider = ltiProvider(platform);
  await tx.query('select pg_advisory_xact_lock($1::int, hashtext($2::text))', [LTI_IDENTITY_LOCK, `${provider}\n${claims.sub}`]);
  const [identity] = await tx.query<{ user_id: string }>('select user_id from auth.identities where provider = $1 and provider_id = $2', [
    provider,
    claims.sub,
  ]);
  const user = identity ? await findUserById(tx, identity.user_id) : await createUser(tx, { provider, providerId: claims.sub });
  // A banned account gets no session here either (as at /auth/v1/token): the launch's transaction rolls back.
  if (options.signIn !== false && user?.banned_until && new Date(user.banned_until) > (options.now ?? new Date())) {
    throw new LaunchError(
      403,
      'user_banned',
      'Your account is blocked',
      'Your account on this service is blocked, so the activity cannot be opened. Nothing was recorded. Ask your instructor or the LMS administrator.',
    );
  }
  const data: Record<string, unknown> = { iss: platform.issuer, sub: claims.sub, source: 'lti' };
  for (const name of PROFILE) if (typeof claims[name] === 'string' && (claims[name] as string).length <= 500) data[name] = claims[name];
  await tx.query(
    `update auth.identities set identity_data = $3::text::jsonb, last_sign_in_at = case when $4::boolean then now() else last_sign_in_at end, updated_at = now()
      where provider = $1 and provider_id = $2`,
    [provider, claims.sub, JSON.stringify(data), options.signIn ?? true],
  );
  await addLearner(tx, platform.tenant_id, user!.svc_user_id);
  return user!;
}
