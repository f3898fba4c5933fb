/**
 * Admin operations behind the `svc` CLI (DESIGN §6). One function per command; each runs as
 * the database owner in one transaction and returns plain JSON. The CLI calls them directly
 * (DATABASE_URL, or an embedded data folder no server holds) or through the running server's
 * `POST /admin/v1/ops/:op` (embedded folder held by `npm start`), so both paths run this code.
 *
 * Errors: `AdminError` with a stable `code` (`not_found`, `conflict`, `invalid`) and a message
 * meant for the person at the terminal.
 */
import { z } from 'zod';
import type { Db, Queryable } from '../db/index.ts';
import { createApiKey, listApiKeys, revokeApiKey } from '../results/api-keys.ts';
import {
  AuthError,
  createUser,
  deleteUser,
  findUserByEmail,
  getUserByIdOrEmail,
  listClients,
  listGrants,
  listParams,
  listUsers,
  normaliseEmail,
  revokeClient,
  revokeGrant,
  updateUser,
  userJson,
  type UserRow,
  type UserUpdate,
} from '../identity/index.ts';
import {
  addOrigin,
  callsOf,
  CONSISTENCY_DEFAULT_REPEATS,
  CONSISTENCY_MARGIN_MAX,
  consistencyOf,
  decide,
  frameAncestors,
  grantByEmail,
  grantBySubject,
  listOrigins,
  listReviews,
  normalizeOrigin,
  removeOrigin,
  requestBody,
  revokeByEmail,
  revokeBySubject,
  setConsistency,
  setThresholds,
  thresholdsOf,
  type ConsistencySettings,
} from '../embed/index.ts';
import { slugSchema } from '../lib/ids.ts';
import { auditOp } from './audited.ts';
import { retentionOf, runRetention, setRetention, type Days } from './retention.ts';
import { eraseEveryTenant, eraseLearnerData, exportLearnerData, isLearnerOf, learnerScope } from './learner-data.ts';
import { listAuditEvents } from '../audit/index.ts';
import { addPlatform, listKeys, listPlatforms, listScores, mintRegistrationUrl, PlatformTaken, removePlatform, rotateKey, toolConfig, type PlatformInput } from '../lti/index.ts';
import { setRole } from '../lib/memberships.ts';

export class AdminError extends Error {
  constructor(
    readonly code: 'not_found' | 'conflict' | 'invalid',
    message: string,
  ) {
    super(message);
  }
}

const slug = slugSchema('a tenant slug is 1–63 lower-case letters, digits and dashes, starting with a letter or digit');
const email = z.string().min(3).max(320);
const url = z.url().refine((u) => /^https?:\/\//.test(u), 'must be an http(s) URL');

/** Whom `author grant|revoke` is about: a user by email, or an IdP subject (issuer: the tenant's, by default). */
const authorTarget = z
  .object({
    tenant: slug,
    email: email.optional(),
    subject: z.string().min(1).max(255).optional(),
    issuer: url.optional(),
  })
  .refine((a) => (a.email === undefined) !== (a.subject === undefined), 'give an email or --subject, not both')
  .refine((a) => a.issuer === undefined || a.subject !== undefined, '--issuer goes with --subject');
type AuthorTarget = z.infer<typeof authorTarget>;

/** `--margin`: points either side of the pass mark, 0–100 (a number, or its decimal text from the CLI). */
const marginMessage = `a number of points from 0 to ${CONSISTENCY_MARGIN_MAX}`;
const consistencyMargin = z
  .union([z.number(), z.string().regex(/^\s*\d+(\.\d+)?\s*$/, marginMessage)], { error: marginMessage })
  .transform(Number)
  .pipe(z.number().min(0, marginMessage).max(CONSISTENCY_MARGIN_MAX, marginMessage));
/** `--repeats`: runs in all for a borderline verdict, 2 or 3. */
const consistencyRepeats = z
  .union([z.literal(2), z.literal(3), z.literal('2'), z.literal('3')], { error: '2 or 3 (runs in all, the first included)' })
  .transform(Number);

/** A retention window: a positive whole number of days, or `forever` (null). */
const retentionDays = z
  .union([z.literal('forever'), z.number(), z.string().regex(/^\s*\d+\s*$/, 'a positive number of days, or forever')], { error: 'a positive number of days, or forever' })
  .transform((v) => (v === 'forever' ? null : Number(v)))
  .pipe(z.number().int('a positive number of days, or forever').min(1, 'a positive number of days, or forever').max(36_500, 'at most 36500 days (or forever)').nullable());

/** The answer of `svc judge consistency …`: the setting, and whether it is on. */
const consistencyJson = (tenant: string, s: ConsistencySettings) => ({ tenant, enabled: s.margin !== null, margin: s.margin, repeats: s.repeats });

/** The commands, their argument schemas and implementations. */
export const ops = {
  'tenant.create': {
    args: z.object({ slug, name: z.string().min(1).max(200).optional() }),
    run: async (q: Queryable, a: { slug: string; name?: string }) => {
      const rows = await q.query(
        `insert into tenants (slug, name) values ($1, $2) on conflict (slug) do nothing
         returning id, slug, name, to_json(created_at) #>> '{}' as created_at`,
        [a.slug, a.name ?? a.slug],
      );
      if (!rows.length) throw new AdminError('conflict', `tenant "${a.slug}" already exists`);
      return rows[0];
    },
  },
  'tenant.list': {
    args: z.object({}),
    run: (q: Queryable) =>
      q.query(`select id, slug, name, to_json(created_at) #>> '{}' as created_at from tenants order by slug`),
  },
  'user.create': {
    args: z.object({ email, password: z.string().max(1024) }),
    run: async (q: Queryable, a: { email: string; password: string }) => {
      try {
        return userJson(await createUser(q, { email: a.email, password: a.password, emailConfirm: true }));
      } catch (err) {
        if (err instanceof AuthError) throw new AdminError(err.status === 422 && err.code === 'email_exists' ? 'conflict' : 'invalid', err.message);
        throw err;
      }
    },
  },
  // user list|get|update|delete|ban: the code path of /auth/v1/admin/users (identity/admin-users.ts).
  'user.list': {
    args: z.object({ page: z.coerce.number().int().min(1).optional(), per_page: z.coerce.number().int().min(1).optional(), filter: z.string().max(320).optional() }),
    run: (q: Queryable, a: { page?: number; per_page?: number; filter?: string }) =>
      viaIdentity(() => listUsers(q, listParams({ page: a.page?.toString(), per_page: a.per_page?.toString(), filter: a.filter }))),
  },
  'user.get': {
    args: z.object({ user: z.string().min(1).max(320) }),
    run: (q: Queryable, a: { user: string }) => viaIdentity(async () => userJson(await getUserByIdOrEmail(q, a.user))),
  },
  'user.update': {
    args: z.object({
      user: z.string().min(1).max(320),
      email: z.string().max(320).optional(),
      password: z.string().max(1024).optional(),
      email_confirm: z.boolean().optional(),
      user_metadata: z.record(z.string(), z.unknown()).optional(),
      app_metadata: z.record(z.string(), z.unknown()).optional(),
      ban_duration: z.string().max(64).optional(),
    }),
    run: (q: Queryable, { user, ...update }: { user: string } & UserUpdate) =>
      viaIdentity(async () => userJson(await updateUser(q, (await getUserByIdOrEmail(q, user)).id, update, new Date()))),
  },
  'user.ban': {
    args: z.object({ user: z.string().min(1).max(320), duration: z.string().min(1).max(64) }),
    run: (q: Queryable, a: { user: string; duration: string }) =>
      viaIdentity(async () => userJson(await updateUser(q, (await getUserByIdOrEmail(q, a.user)).id, { ban_duration: a.duration }, new Date()))),
  },
  'user.delete': {
    args: z.object({ user: z.string().min(1).max(320) }),
    // Issue #23: the account's data in every tenant goes through the learner-data registry first.
    run: (q: Queryable, a: { user: string }) =>
      viaIdentity(async () => {
        const user = await accountOf(q, a.user);
        const tenants = await eraseEveryTenant(q, user.svc_user_id, user.id);
        return { ...userJson(await deleteUser(q, user.id)), erased_tenants: tenants };
      }),
  },
  'author.grant': {
    args: authorTarget,
    run: async (q: Queryable, a: AuthorTarget) => {
      const target = await resolveAuthor(q, a);
      if (target.by === 'subject') {
        // By IdP subject (src/embed/author-grants.ts): effective now if it signed in, else at its first sign-in.
        const { svc_user_id } = await grantBySubject(q, target.id, target.issuer, target.subject);
        return { tenant: a.tenant, issuer: target.issuer, subject: target.subject, svc_user_id, role: 'author' };
      }
      const { id, mail, user } = target;
      // The email grant also covers IdP sign-ins into the tenant whose token carries the address verified.
      await grantByEmail(q, id, mail);
      if (user) {
        await setRole(q, id, user.svc_user_id, 'author');
      }
      return { tenant: a.tenant, email: mail, svc_user_id: user?.svc_user_id ?? null, role: 'author' };
    },
  },
  'author.revoke': {
    args: authorTarget,
    run: async (q: Queryable, a: AuthorTarget) => {
      const target = await resolveAuthor(q, a);
      if (target.by === 'subject') {
        const { revoked, svc_user_id } = await revokeBySubject(q, target.id, target.issuer, target.subject);
        if (!revoked) throw new AdminError('not_found', `${target.subject} at ${target.issuer} is not an author of "${a.tenant}"`);
        return { tenant: a.tenant, issuer: target.issuer, subject: target.subject, svc_user_id, role: 'learner' };
      }
      const { id, mail, user } = target;
      const rows = user
        ? await q.query(
            `update memberships set role = 'learner' where tenant_id = $1 and user_id = $2 and role = 'author' returning user_id`,
            [id, user.svc_user_id],
          )
        : [];
      const changed = await revokeByEmail(q, id, mail);
      if (!rows.length && !changed) throw new AdminError('not_found', `${mail} is not an author of "${a.tenant}"`);
      return { tenant: a.tenant, email: mail, svc_user_id: user?.svc_user_id ?? null, role: 'learner' };
    },
  },
  'key.create': {
    args: z.object({ tenant: slug, name: z.string().min(1).max(200), rate_limit: z.number().int().min(1).max(1_000_000).optional() }),
    run: async (q: Queryable, a: { tenant: string; name: string; rate_limit?: number }) =>
      createApiKey(q, await tenantId(q, a.tenant), a.name, { rateLimit: a.rate_limit }),
  },
  'key.list': {
    args: z.object({ tenant: slug }),
    run: async (q: Queryable, a: { tenant: string }) => listApiKeys(q, await tenantId(q, a.tenant)),
  },
  'key.revoke': {
    args: z.object({ prefix: z.string().min(1).max(64) }),
    run: async (q: Queryable, a: { prefix: string }) => {
      const info = await revokeApiKey(q, a.prefix.replace(/^svc_/, '').split('_')[0]!);
      if (!info) throw new AdminError('not_found', `no API key with prefix "${a.prefix}"`);
      return info;
    },
  },
  'learner.delete': {
    args: z.object({ tenant: slug, svc_user_id: z.uuid('an svc_user_id is a uuid') }),
    run: async (q: Queryable, a: { tenant: string; svc_user_id: string }) => eraseLearner(q, await tenantId(q, a.tenant), a),
  },
  // svc learner export: everything held about a learner in a tenant (issue #23, src/admin/learner-data.ts).
  'learner.export': {
    args: z.object({ tenant: slug, svc_user_id: z.uuid('an svc_user_id is a uuid') }),
    run: async (q: Queryable, a: { tenant: string; svc_user_id: string }) => {
      const scope = await learnerIn(q, await tenantId(q, a.tenant), a);
      return { tenant: a.tenant, svc_user_id: a.svc_user_id, exported_at: new Date().toISOString(), ...(await exportLearnerData(q, scope)) };
    },
  },
    'idp.set': {
    args: z
      .object({
        tenant: slug,
        issuer: url,
        jwks_url: url.optional(),
        discovery: z.boolean().optional(),
        audience: z.string().min(1).max(500).optional(),
      })
      .refine((a) => Boolean(a.jwks_url) !== Boolean(a.discovery), 'give exactly one of --jwks-url or --discovery'),
    run: async (q: Queryable, a: { tenant: string; issuer: string; jwks_url?: string; discovery?: boolean; audience?: string }) => {
      const id = await tenantId(q, a.tenant);
      const discoveryUrl = a.discovery ? `${a.issuer.replace(/\/$/, '')}/.well-known/openid-configuration` : null;
      // An (issuer, subject) pair is one learner in every tenant, so every tenant naming an
      // issuer must verify it with the same keys: otherwise a tenant's admin could point a
      // known issuer at their own JWKS and sign in as another tenant's learners.
      await q.query('lock table tenant_idps in share row exclusive mode');
      const [clash] = await q.query<{ slug: string }>(
        `select t.slug from tenant_idps i join tenants t on t.id = i.tenant_id
          where i.issuer = $1 and i.tenant_id <> $2
            and (i.jwks_url is distinct from $3 or i.discovery_url is distinct from $4)`,
        [a.issuer, id, a.jwks_url ?? null, discoveryUrl],
      );
      if (clash) {
        throw new AdminError('conflict', `issuer ${a.issuer} is already set for tenant "${clash.slug}" with other keys; use the same --jwks-url or --discovery`);
      }
      const [row] = await q.query(
        `insert into tenant_idps (tenant_id, issuer, jwks_url, discovery_url, audience) values ($1, $2, $3, $4, $5)
         on conflict (tenant_id) do update set issuer = excluded.issuer, jwks_url = excluded.jwks_url,
           discovery_url = excluded.discovery_url, audience = excluded.audience, updated_at = now()
         returning issuer, jwks_url, discovery_url, audience`,
        [id, a.issuer, a.jwks_url ?? null, discoveryUrl, a.audience ?? null],
      );
      return { tenant: a.tenant, ...row };
    },
  },
  'idp.refresh': {
    args: z.object({ tenant: slug }),
    run: async (q: Queryable, a: { tenant: string }) => {
      // Every process keys its cached key set by this version (src/embed/idp.ts): the next token
      // of the tenant is checked against a freshly fetched set, everywhere.
      const [row] = await q.query<{ issuer: string; keys_version: number }>(
        `update tenant_idps set keys_version = keys_version + 1, updated_at = now()
          where tenant_id = $1 returning issuer, keys_version`,
        [await tenantId(q, a.tenant)],
      );
      if (!row) throw new AdminError('not_found', `"${a.tenant}" has no identity provider (svc idp set)`);
      return { tenant: a.tenant, ...row };
    },
  },
  // svc embed origins add|remove|list: who may frame the tenant's player (src/embed/origins.ts).
  'embed.origins.add': {
    args: z.object({ tenant: slug, origin: z.string().min(1).max(300) }),
    run: async (q: Queryable, a: { tenant: string; origin: string }) => {
      const id = await tenantId(q, a.tenant);
      const origin = embedOrigin(a.origin);
      const added = await addOrigin(q, id, origin);
      return { tenant: a.tenant, origin, added, origins: await listOrigins(q, id) };
    },
  },
  'embed.origins.remove': {
    args: z.object({ tenant: slug, origin: z.string().min(1).max(300) }),
    run: async (q: Queryable, a: { tenant: string; origin: string }) => {
      const id = await tenantId(q, a.tenant);
      const origin = embedOrigin(a.origin);
      if (!(await removeOrigin(q, id, origin))) throw new AdminError('not_found', `${origin} is not an allowed origin of "${a.tenant}"`);
      return { tenant: a.tenant, origin, origins: await listOrigins(q, id) };
    },
  },
  'embed.origins.list': {
    args: z.object({ tenant: slug }),
    run: async (q: Queryable, a: { tenant: string }) => {
      const origins = await listOrigins(q, await tenantId(q, a.tenant));
      return { tenant: a.tenant, origins, frame_ancestors: frameAncestors(origins) };
    },
  },
  // svc lti …: the LTI 1.3 tool — platform registrations per tenant, the tool's keys, what an LMS
  // administrator types in (issue #22, src/lti/).
  'lti.platforms.add': {
    args: z.object({
      tenant: slug,
      issuer: url.max(2048),
      client_id: z.string().trim().min(1, '--client-id is required').max(255),
      auth_url: url.max(2048),
      token_url: url.max(2048),
      jwks_url: url.max(2048),
      token_audience: z.string().trim().min(1).max(2048).optional(),
      deployments: z.array(z.string().trim().min(1, 'a deployment id is not empty').max(255)).max(100).default([]),
    }),
    run: async (q: Queryable, a: PlatformInput & { tenant: string }) => {
      const id = await tenantId(q, a.tenant);
      try {
        const { platform, created } = await addPlatform(q, id, a);
        return { ...platform, created };
      } catch (err) {
        if (err instanceof PlatformTaken) throw new AdminError('conflict', err.message);
        throw err;
      }
    },
  },
  'lti.platforms.list': {
    args: z.object({ tenant: slug.optional() }),
    run: async (q: Queryable, a: { tenant?: string }) => listPlatforms(q, a.tenant === undefined ? undefined : await tenantId(q, a.tenant)),
  },
  'lti.platforms.remove': {
    args: z.object({ tenant: slug, issuer: z.string().min(1).max(2048), client_id: z.string().min(1).max(255) }),
    run: async (q: Queryable, a: { tenant: string; issuer: string; client_id: string }) => {
      if (!(await removePlatform(q, await tenantId(q, a.tenant), a.issuer, a.client_id))) {
        throw new AdminError('not_found', `"${a.tenant}" has no registration of ${a.issuer} client ${a.client_id}`);
      }
      return { tenant: a.tenant, issuer: a.issuer, client_id: a.client_id, removed: true };
    },
  },
  // svc lti registration-url: a single-use LTI Dynamic Registration URL for a tenant (24 h; src/lti/registration/).
  'lti.registration_url': {
    args: z.object({ tenant: slug, base_url: url }),
    run: async (q: Queryable, a: { tenant: string; base_url: string }) => mintRegistrationUrl(q, await tenantId(q, a.tenant), a.tenant, a.base_url),
  },
  'lti.config': { args: z.object({ base_url: url }), run: async (_q: Queryable, a: { base_url: string }) => toolConfig(a.base_url) },
  'lti.keys.list': { args: z.object({}), run: (q: Queryable) => listKeys(q) },
  'lti.keys.rotate': { args: z.object({}), run: (q: Queryable) => rotateKey(q) },
  'lti.scores': {
    args: z.object({ tenant: slug, failed: z.boolean().default(false) }),
    run: async (q: Queryable, a: { tenant: string; failed: boolean }) => listScores(q, await tenantId(q, a.tenant), { failed: a.failed }),
  },
  'review.list': {
    args: z.object({ tenant: slug }),
    // The open reviews of the queue (appeals and injection holds), oldest first; `submitted_at` kept for older scripts.
    run: async (q: Queryable, a: { tenant: string }) =>
      (await listReviews(q, { tenantId: await tenantId(q, a.tenant), status: 'open' })).map((r) => ({ ...r, submitted_at: r.created_at })),
  },
  'review.approve': { args: z.object({ result_id: z.uuid('a result id is a uuid') }), run: (q: Queryable, a: { result_id: string }) => review(q, a.result_id, 'approve') },
  'review.reject': { args: z.object({ result_id: z.uuid('a result id is a uuid') }), run: (q: Queryable, a: { result_id: string }) => review(q, a.result_id, 'reject') },
  // svc judge thresholds set|show: the calibration gate's thresholds of a tenant (issue #21, src/embed/calibration/gate.ts).
  'judge.thresholds.show': {
    args: z.object({ tenant: slug }),
    run: async (q: Queryable, a: { tenant: string }) => ({ tenant: a.tenant, ...(await thresholdsOf(q, await tenantId(q, a.tenant))) }),
  },
  'judge.thresholds.set': {
    args: z
      .object({
        tenant: slug,
        min_kappa: z.coerce.number().min(-1, '--min-kappa is between -1 and 1').max(1, '--min-kappa is between -1 and 1').optional(),
        max_false_pass_rate: z.coerce.number().min(0, '--max-false-pass-rate is between 0 and 1').max(1, '--max-false-pass-rate is between 0 and 1').optional(),
        require_adversarial_fail: z.boolean().optional(),
      })
      .refine((a) => a.min_kappa !== undefined || a.max_false_pass_rate !== undefined || a.require_adversarial_fail !== undefined, 'give at least one of --min-kappa, --max-false-pass-rate, --adversarial-must-fail'),
    run: async (q: Queryable, a: { tenant: string; min_kappa?: number; max_false_pass_rate?: number; require_adversarial_fail?: boolean }) => {
      const { tenant, ...change } = a;
      const defined = Object.fromEntries(Object.entries(change).filter(([, v]) => v !== undefined));
      return { tenant, ...(await setThresholds(q, await tenantId(q, tenant), defined)) };
    },
  },
  // svc oauth …: the OAuth clients MCP hosts registered and the grants users gave them (issue #12).
  'oauth.clients.list': { args: z.object({}), run: (q: Queryable) => listClients(q) },
  'oauth.clients.revoke': {
    args: z.object({ client_id: z.string().min(1).max(2048) }),
    run: async (q: Queryable, a: { client_id: string }) => {
      if (!(await revokeClient(q, a.client_id))) throw new AdminError('not_found', `no OAuth client "${a.client_id}"`);
      return { client_id: a.client_id, revoked: true };
    },
  },
  'oauth.grants.list': {
    args: z.object({ email }),
    run: async (q: Queryable, a: { email: string }) => listGrants(q, (await userByEmail(q, a.email)).id),
  },
  'oauth.grants.revoke': {
    args: z.object({ email, client_id: z.string().min(1).max(2048) }),
    run: async (q: Queryable, a: { email: string; client_id: string }) => {
      const user = await userByEmail(q, a.email);
      if (!(await revokeGrant(q, user.id, a.client_id))) throw new AdminError('not_found', `${a.email} has no grant for "${a.client_id}"`);
      return { email: user.email, client_id: a.client_id, revoked: true };
    },
  },
  // svc judge consistency set|off|show: borderline consistency (src/embed/grading/consistency.ts).
  'judge.consistency.set': {
    args: z.object({ tenant: slug, margin: consistencyMargin, repeats: consistencyRepeats.optional() }),
    run: async (q: Queryable, a: { tenant: string; margin: number; repeats?: number }) =>
      consistencyJson(a.tenant, await setConsistency(q, await tenantId(q, a.tenant), { margin: a.margin, repeats: a.repeats ?? CONSISTENCY_DEFAULT_REPEATS })),
  },
  'judge.consistency.off': {
    args: z.object({ tenant: slug }),
    run: async (q: Queryable, a: { tenant: string }) => {
      const id = await tenantId(q, a.tenant);
      return consistencyJson(a.tenant, await setConsistency(q, id, { ...(await consistencyOf(q, id)), margin: null }));
    },
  },
  'judge.consistency.show': {
    args: z.object({ tenant: slug }),
    run: async (q: Queryable, a: { tenant: string }) => consistencyJson(a.tenant, await consistencyOf(q, await tenantId(q, a.tenant))),
  },
  'verdict.show': {
    args: z.object({ artifact_id: z.uuid('an artifact id is a uuid'), with_request: z.boolean().optional() }),
    run: async (q: Queryable, a: { artifact_id: string; with_request?: boolean }) => {
      const [artifact] = await q.query<{ tenant_id: string; verification: Record<string, unknown> | null }>(
        'select tenant_id, verification from artifacts where id = $1',
        [a.artifact_id],
      );
      if (!artifact) throw new AdminError('not_found', `no artifact ${a.artifact_id}`);
      const calls = await callsOf(q, artifact.tenant_id, a.artifact_id);
      const requests: Record<string, unknown> = {};
      if (a.with_request) {
        for (const sha of new Set(calls.map((c) => c.request_sha256).filter((x): x is string => Boolean(x)))) {
          requests[sha] = JSON.parse((await requestBody(q, artifact.tenant_id, sha))!);
        }
      }
      return { artifact_id: a.artifact_id, verification: artifact.verification, calls, ...(a.with_request && { requests }) };
    },
  },
  // svc audit list: the audit log (issue #23, src/audit).
  'audit.list': {
    args: z.object({
      tenant: slug.optional(),
      since: z.string().max(64).refine((v) => !Number.isNaN(Date.parse(v)), 'not a time: give an RFC 3339 time (2026-01-31T09:00:00Z) or a date (2026-01-31)').optional(),
      action: z.string().regex(/^[a-z][a-z0-9_.]*$/, 'an action is a dotted lower-case name (author.grant)').max(64).optional(),
    }),
    run: async (q: Queryable, a: { tenant?: string; since?: string; action?: string }) =>
      listAuditEvents(q, { tenantId: a.tenant ? await tenantId(q, a.tenant) : undefined, since: a.since ? new Date(a.since) : undefined, action: a.action }),
  },
  // svc retention set|show|run: how long a tenant keeps model bodies, artifact content, tombstones (issue #23, retention.ts).
  'retention.show': {
    args: z.object({ tenant: slug }),
    run: async (q: Queryable, a: { tenant: string }) => ({ tenant: a.tenant, ...(await retentionOf(q, await tenantId(q, a.tenant))) }),
  },
  'retention.set': {
    args: z
      .object({ tenant: slug, artifact_content: retentionDays.optional(), model_bodies: retentionDays.optional(), tombstones: retentionDays.optional() })
      .refine((a) => a.artifact_content !== undefined || a.model_bodies !== undefined || a.tombstones !== undefined, 'give at least one of --artifact-content, --model-bodies, --tombstones'),
    run: async (q: Queryable, a: { tenant: string; artifact_content?: Days; model_bodies?: Days; tombstones?: Days }) => {
      const change = {
        ...(a.artifact_content !== undefined && { artifact_content_days: a.artifact_content }),
        ...(a.model_bodies !== undefined && { model_bodies_days: a.model_bodies }),
        ...(a.tombstones !== undefined && { tombstones_days: a.tombstones }),
      };
      return { tenant: a.tenant, ...(await setRetention(q, await tenantId(q, a.tenant), change)) };
    },
  },
  'retention.run': {
    args: z.object({ tenant: slug.optional() }),
    /** Runs its own short transactions (batches): `runOp` hands it the database, not a transaction. */
    ownTransactions: true,
    run: async (db: Db, a: { tenant?: string }) => ({
      ...(a.tenant !== undefined && { tenant: a.tenant }),
      ...(await runRetention(db, { tenantId: a.tenant ? await tenantId(db, a.tenant) : undefined })),
    }),
  },
} as const;

/**
 * Erase a learner from one tenant (right to erasure, issues #14 and #23) through the learner-data
 * registry (src/admin/learner-data.ts): results, artifacts and their content, the model ledger's
 * bodies of their submissions, idempotency records, reviews and overrides, progress, membership,
 * sessions bound to the tenant and the tenant issuer's identity; the account when the learner is
 * left in no tenant and has no password. Tombstones (ids only) appear in /v1/deletions. Not found
 * when the user has no membership and no rows in the tenant.
 */
async function eraseLearner(q: Queryable, tenant: string, a: { tenant: string; svc_user_id: string }) {
  const scope = await learnerIn(q, tenant, a);
  const erased = await eraseLearnerData(q, scope);
  const { results, model_requests } = erased.embed!;
  const { progress, memberships } = erased.results!;
  return {
    tenant: a.tenant,
    svc_user_id: a.svc_user_id,
    deleted: { results, progress, learner: memberships! > 0, account: erased.identity!.account! > 0, model_requests },
    erased,
  };
}

/** The learner `a.svc_user_id` of tenant `tenant`; AdminError not_found when they are not one of its learners. */
async function learnerIn(q: Queryable, tenant: string, a: { tenant: string; svc_user_id: string }) {
  const scope = await learnerScope(q, tenant, a.svc_user_id);
  if (!scope || !(await isLearnerOf(q, scope))) throw new AdminError('not_found', `no learner ${a.svc_user_id} in "${a.tenant}"`);
  return scope;
}

/** An account by auth user id, email or svc_user_id; AuthError 404 when none. */
async function accountOf(q: Queryable, idOrEmail: string): Promise<UserRow> {
  try {
    return await getUserByIdOrEmail(q, idOrEmail);
  } catch (err) {
    if (!(err instanceof AuthError) || err.status !== 404 || !/^[0-9a-f-]{36}$/i.test(idOrEmail)) throw err;
    const [row] = await q.query<{ auth_user_id: string }>('select auth_user_id from users where id = $1', [idOrEmail]);
    if (!row) throw err;
    return getUserByIdOrEmail(q, row.auth_user_id);
  }
}

/** Approve or reject the held submissions of a result (src/embed/grading/review.ts). */
async function review(q: Queryable, resultId: string, decision: 'approve' | 'reject') {
  const [result] = await q.query<{ tenant_id: string }>('select tenant_id from activity_results where id = $1', [resultId]);
  const done = result && (await decide(q, result.tenant_id, resultId, decision, new Date()));
  if (!done) throw new AdminError('not_found', `result ${resultId} has no submission awaiting review`);
  return { result_id: resultId, decision, ...done };
}

export type OpName = keyof typeof ops;
export const isOpName = (name: string): name is OpName => Object.hasOwn(ops, name);

/** Run an identity admin function; its `AuthError`s become `AdminError`s (404 → not_found, 422 email_exists → conflict). */
async function viaIdentity<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (!(err instanceof AuthError)) throw err;
    throw new AdminError(err.status === 404 ? 'not_found' : err.code === 'email_exists' ? 'conflict' : 'invalid', err.message);
  }
}

/** The user with email `address`; AdminError `not_found` when there is none. */
async function userByEmail(q: Queryable, address: string) {
  const user = await findUserByEmail(q, address);
  if (!user) throw new AdminError('not_found', `no user with email ${address}`);
  return user;
}

/** An origin for `svc embed origins`, normalised; AdminError `invalid` when it is not one. */
function embedOrigin(input: string): string {
  const parsed = normalizeOrigin(input);
  if ('error' in parsed) throw new AdminError('invalid', parsed.error);
  return parsed.origin;
}

async function tenantId(q: Queryable, tenantSlug: string): Promise<string> {
  const [row] = await q.query<{ id: string }>('select id from tenants where slug = $1', [tenantSlug]);
  if (!row) throw new AdminError('not_found', `no tenant "${tenantSlug}"`);
  return row.id;
}

/** The issuer of a subject grant: the one given, or the tenant's IdP issuer. */
async function subjectIssuer(q: Queryable, tenant: string, a: AuthorTarget): Promise<string> {
  if (a.issuer) return a.issuer;
  const [row] = await q.query<{ issuer: string }>('select issuer from tenant_idps where tenant_id = $1', [tenant]);
  if (!row) throw new AdminError('invalid', `"${a.tenant}" has no identity provider: give --issuer, or run svc idp set first`);
  return row.issuer;
}

/**
 * Whom an author grant or revocation names, in the tenant `id`: an IdP subject with its issuer
 * (`subjectIssuer`), or an email address (normalised) with its user when one exists.
 * Throws `AdminError` not_found for an unknown tenant, invalid for a subject without an issuer.
 */
async function resolveAuthor(
  q: Queryable,
  a: AuthorTarget,
): Promise<{ by: 'subject'; id: string; issuer: string; subject: string } | { by: 'email'; id: string; mail: string; user: UserRow | undefined }> {
  const id = await tenantId(q, a.tenant);
  if (a.subject !== undefined) return { by: 'subject', id, issuer: await subjectIssuer(q, id, a), subject: a.subject };
  const mail = normaliseEmail(a.email!);
  return { by: 'email', id, mail, user: await findUserByEmail(q, mail) };
}

/** Validate `args` for `op` and run it in one transaction. Throws `AdminError` on bad input. */
export async function runOp(db: Db, op: OpName, args: unknown): Promise<unknown> {
  const spec = ops[op];
  const parsed = spec.args.safeParse(args ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new AdminError('invalid', issue.path.length ? `${issue.path.join('.')}: ${issue.message}` : issue.message);
  }
  if ('ownTransactions' in spec) return (spec.run as (db: Db, a: unknown) => Promise<unknown>)(db, parsed.data);
  return db.transaction(async (tx) => {
    const out = await (spec.run as (q: Queryable, a: unknown) => Promise<unknown>)(tx, parsed.data);
    await auditOp(tx, op, parsed.data, out); // issue #23: the act's audit event, in its transaction
    return out;
  });
}
