/**
 * Which `svc` admin operations (ops.ts, ops/) are privileged acts, and the audit event each leaves
 * (issue #23, src/audit). `runOp` calls `auditOp` in the operation's own transaction, after the
 * operation succeeded: a refused operation (AdminError, bad input) rolls back and leaves no row.
 *
 * Reads (`*.list`, `*.show`, `verdict.show`) are not acts. `review.approve|reject` are audited
 * where the decision is made (src/embed/grading/review.ts, override.ts), as the MCP review tools
 * are.
 *
 * Targets are ids: a tenant's id, an auth user id, an API key prefix, an OAuth client id. An
 * author grant by email to an address with no account yet, or by an IdP subject not yet seen,
 * names its target by HMAC-SHA256, under the database's own key (`audit_target_key`, migration
 * 0166), of the normalised email (`email_hmac`) or of `issuer \n subject` (`subject_hmac`) —
 * never the address or subject itself, nor a plain hash a reader could test guesses against.
 */
import { createHmac } from 'node:crypto';
import { audit, type AuditEvent } from '../audit/index.ts';
import type { Queryable } from '../db/index.ts';
import { findUserByEmail } from '../identity/index.ts';
import { findTenantId } from './ops/shared.ts';

type Args = Record<string, unknown>;
type Out = Record<string, unknown>;
type Describe = (q: Queryable, args: Args, out: Out) => Promise<Omit<AuditEvent, 'actor' | 'requestId'> | undefined>;

/** HMAC-SHA256 (hex) of `text` under the database's audit key (see the header). */
async function keyedHash(q: Queryable, text: string): Promise<string> {
  const [row] = await q.query<{ hmac_key: string }>('select hmac_key from audit_target_key');
  return createHmac('sha256', Buffer.from(row!.hmac_key, 'hex')).update(text).digest('hex');
}

/** The target of an author grant or revocation (see the header). */
const authorTarget = async (q: Queryable, out: Out) =>
  out.svc_user_id
    ? { type: 'user', id: String(out.svc_user_id) }
    : out.subject !== undefined
      ? { type: 'subject_hmac', id: await keyedHash(q, `${String(out.issuer)}\n${String(out.subject)}`) }
      : { type: 'email_hmac', id: await keyedHash(q, String(out.email)) };

const tenantAct =
  (action: AuditEvent['action'], detail: (args: Args, out: Out) => AuditEvent['detail'] = () => undefined): Describe =>
  async (q, args, out) => {
    const tenantId = await findTenantId(q, args.tenant);
    return { tenantId, action, target: { type: 'tenant', id: tenantId! }, detail: detail(args, out) };
  };

const userAct =
  (action: AuditEvent['action']): Describe =>
  async (_q, _args, out) => ({ tenantId: null, action, target: { type: 'auth_user', id: String(out.id) } });

/** Turning consistency on or off: one action, the setting after. */
const consistencyAct = tenantAct('judge.consistency.set', (_a, out) => ({ margin: out.margin as number | null, repeats: out.repeats as number }));

const DESCRIBE: Partial<Record<string, Describe>> = {
  'tenant.create': async (_q, _a, out) => ({ tenantId: String(out.id), action: 'tenant.create', target: { type: 'tenant', id: String(out.id) } }),
  'user.create': userAct('user.create'),
  'user.update': userAct('user.update'),
  'user.ban': userAct('user.ban'),
  'user.delete': userAct('user.delete'),
  'author.grant': async (q, args, out) => ({ tenantId: await findTenantId(q, args.tenant), action: 'author.grant', target: await authorTarget(q, out) }),
  'author.revoke': async (q, args, out) => ({ tenantId: await findTenantId(q, args.tenant), action: 'author.revoke', target: await authorTarget(q, out) }),
  'key.create': async (_q, _a, out) => ({ tenantId: String(out.tenant_id), action: 'key.create', target: { type: 'api_key', id: String(out.prefix) } }),
  'key.revoke': async (_q, _a, out) => ({ tenantId: String(out.tenant_id), action: 'key.revoke', target: { type: 'api_key', id: String(out.prefix) } }),
  'embed.origins.add': async (q, args, out) =>
    out.added ? { tenantId: await findTenantId(q, args.tenant), action: 'embed.origin.add', target: { type: 'origin', id: String(out.origin) } } : undefined,
  'embed.origins.remove': async (q, args, out) => ({
    tenantId: await findTenantId(q, args.tenant),
    action: 'embed.origin.remove',
    target: { type: 'origin', id: String(out.origin) },
  }),
  'idp.set': tenantAct('idp.set', (_a, out) => ({ issuer: String(out.issuer) })),
  'idp.refresh': tenantAct('idp.refresh', (_a, out) => ({ keys_version: Number(out.keys_version) })),
  'oauth.clients.revoke': async (_q, args) => ({ tenantId: null, action: 'oauth.client.revoke', target: { type: 'oauth_client', id: String(args.client_id) } }),
  'oauth.grants.revoke': async (q, args) => {
    const user = await findUserByEmail(q, String(args.email));
    return { tenantId: null, action: 'oauth.grant.revoke', target: { type: 'user', id: user!.svc_user_id }, detail: { client_id: String(args.client_id) } };
  },
  'learner.delete': async (q, args) => ({
    tenantId: await findTenantId(q, args.tenant),
    action: 'learner.erase',
    target: { type: 'user', id: String(args.svc_user_id) },
  }),
  'learner.export': async (q, args) => ({
    tenantId: await findTenantId(q, args.tenant),
    action: 'learner.export',
    target: { type: 'user', id: String(args.svc_user_id) },
  }),
  'retention.set': tenantAct('retention.set', (_a, out) => ({
    artifact_content_days: out.artifact_content_days as number | null,
    model_bodies_days: out.model_bodies_days as number | null,
    tombstones_days: out.tombstones_days as number | null,
  })),
  'judge.thresholds.set': tenantAct('judge.thresholds.set', (_a, out) => ({
    min_kappa: out.min_kappa as number,
    max_false_pass_rate: out.max_false_pass_rate as number,
    require_adversarial_fail: out.require_adversarial_fail as boolean,
  })),
  'judge.consistency.set': consistencyAct,
  'judge.consistency.off': consistencyAct,
  // LTI registrations and the tool's keys (issue #22): a platform is named by its registration id, or by issuer and client id once removed.
  'lti.platforms.add': async (_q, _a, out) =>
    out.created ? { tenantId: String(out.tenant_id), action: 'lti.platform.add', target: { type: 'lti_platform', id: String(out.id) } } : undefined,
  'lti.platforms.remove': async (q, args) => ({
    tenantId: await findTenantId(q, args.tenant),
    action: 'lti.platform.remove',
    target: { type: 'lti_platform', id: `${String(args.issuer)} ${String(args.client_id)}` },
  }),
  // A registration URL is named by its code's id (the code itself is never stored or logged).
  'lti.registration_url': async (_q, _a, out) => ({
    tenantId: await findTenantId(_q, out.tenant),
    action: 'lti.registration_url.create',
    target: { type: 'lti_registration_code', id: String(out.id) },
    detail: { expires_at: String(out.expires_at) },
  }),
  'lti.keys.rotate': async (_q, _a, out) => ({ tenantId: null, action: 'lti.keys.rotate', target: { type: 'lti_key', id: String(out.kid) } }),
};

/** Append the audit event of operation `op` (if it is an act) in transaction `tx`. */
export async function auditOp(tx: Queryable, op: string, args: unknown, out: unknown): Promise<void> {
  const describe = DESCRIBE[op];
  if (!describe || !out || typeof out !== 'object') return;
  const event = await describe(tx, (args ?? {}) as Args, out as Out);
  if (event) await audit(tx, event);
}
