/**
 * The audit log (issue #23): one append-only table, `audit_events` (migration 0160), and this one
 * module every surface calls to append to it. A shared-floor piece like `db/` and `lib/`: it
 * imports nothing of any surface.
 *
 * Write an event with `audit(tx, event)` **in the transaction of the act itself**: the row commits
 * with the act, and an act that is refused (throws, rolls back) leaves no row. The row goes in
 * through `svc.audit()` (SECURITY DEFINER); no role of the service may insert, update or delete
 * rows directly, and a trigger refuses every UPDATE, DELETE and TRUNCATE.
 *
 * Who acted (`actor`), in this order:
 * 1. as `authenticated` (an author's MCP call, RLS on): the caller's own svc_user_id from the JWT
 *    claims — the database sets it, whatever is passed;
 * 2. `event.actor` when given (a first-party user by auth id, a tenant API key by prefix);
 * 3. the actor of the ambient context (`withAuditContext`: the admin HTTP door sets
 *    `service_role`);
 * 4. else `cli` (the `svc` command on its own connection).
 *
 * The request id: `event.requestId`, else the ambient context's, else null (the CLI). A door
 * that records acts enters the context per request with `auditContextHook` (or
 * `serviceRoleHook`) as an `onRequest` hook of its plugin or route — /admin/v1, /auth/v1/admin,
 * `DELETE /auth/v1/user/oauth/grants`, /mcp — so requests that never audit (the results API, the
 * embed and player hot paths) pay nothing for it.
 *
 * Nothing personal goes in: targets and details are ids and settings, never an email or a
 * learner's text (GoTrue's `auth.audit_log_entries` is the anchor for the shape).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Queryable } from '../db/index.ts';
import { rfc3339 } from '../db/sql.ts';

/** Who performed an act. `auth_user`: an account by its auth.users id (stored as its svc_user_id). */
export type AuditActor =
  | { kind: 'user'; id: string }
  | { kind: 'auth_user'; id: string }
  | { kind: 'key'; id: string }
  | { kind: 'cli' }
  | { kind: 'service_role' }
  | { kind: 'system' };

/** The actions the service records (dotted, lower case; new ones are added here). */
export const AUDIT_ACTIONS = [
  'tenant.create',
  'user.create',
  'user.update',
  'user.ban',
  'user.delete',
  'key.create',
  'key.revoke',
  'author.grant',
  'author.revoke',
  'embed.origin.add',
  'embed.origin.remove',
  'idp.set',
  'idp.refresh',
  'oauth.client.revoke',
  'oauth.grant.revoke',
  'review.uphold',
  'verdict.override',
  'grading.mode.set',
  'judge.thresholds.set',
  'judge.consistency.set',
  'retention.set',
  'learner.erase',
  'learner.export',
  'lti.platform.add',
  'lti.platform.register',
  'lti.platform.remove',
  'lti.registration_url.create',
  'lti.keys.rotate',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/** One act. `tenantId` null: an act on no tenant (an account, an OAuth client). */
export interface AuditEvent {
  tenantId: string | null;
  action: AuditAction;
  /** What was acted on, by id (`{type: 'user', id: svc_user_id}`, `{type: 'api_key', id: prefix}`…). */
  target: { type: string; id: string };
  /** Settings and ids only (no email, no learner text). */
  detail?: Record<string, string | number | boolean | null | string[]>;
  actor?: AuditActor;
  requestId?: string;
}

/** The ambient context of an act: the request id, and the actor of a door (admin HTTP: service_role). */
export interface AuditContext {
  requestId?: string;
  actor?: AuditActor;
}

const context = new AsyncLocalStorage<AuditContext>();

/** Run `fn` with `ctx` merged over the current context (nested calls see both). */
export function withAuditContext<T>(ctx: AuditContext, fn: () => T): T {
  return context.run({ ...context.getStore(), ...ctx }, fn);
}

/** Fastify `onRequest` hook: the rest of the request runs in a context carrying its request id. */
export function auditContextHook(req: FastifyRequest, _reply: FastifyReply, done: () => void): void {
  context.run({ requestId: req.id }, done);
}

/** Fastify `onRequest` hook of a door whose every act is the service role's (the admin ops door); carries the request id too. */
export function serviceRoleHook(req: FastifyRequest, _reply: FastifyReply, done: () => void): void {
  context.run({ requestId: req.id, actor: { kind: 'service_role' } }, done);
}

/** Append `event` (see the header); resolves to the row's id. Throws what the database throws. */
export async function audit(tx: Queryable, event: AuditEvent): Promise<string> {
  const ambient = context.getStore();
  const actor = event.actor ?? ambient?.actor ?? { kind: 'cli' };
  const [row] = await tx.query<{ id: string }>('select svc.audit($1, $2, $3, $4, $5, $6, $7, $8::text::jsonb) as id', [
    event.tenantId,
    actor.kind,
    'id' in actor ? actor.id : null,
    event.action,
    event.target.type,
    event.target.id,
    event.requestId ?? ambient?.requestId ?? null,
    JSON.stringify(event.detail ?? {}),
  ]);
  return row!.id;
}

/** The tenant id of the nil uuid the table stores for an act on no tenant. */
export const NO_TENANT = '00000000-0000-0000-0000-000000000000';

/** One event as `svc audit list` and `GET /v1/audit-events` show it. */
export interface AuditEventJson {
  id: string;
  /** null: an act on no tenant. */
  tenant_id: string | null;
  /** RFC 3339 UTC. */
  at: string;
  actor: { kind: AuditActor['kind']; id: string | null };
  action: string;
  target: { type: string; id: string };
  request_id: string | null;
  detail: Record<string, unknown>;
}

/** The SQL of one event's JSON (`AuditEventJson`) of row alias `t`; shared by the CLI list and the Results API. */
export const auditEventJsonSql = (t: string) => `json_build_object(
    'id', ${t}.id,
    'tenant_id', nullif(${t}.tenant_id, '${NO_TENANT}'::uuid),
    'at', ${rfc3339(`${t}.at`)},
    'actor', json_build_object('kind', ${t}.actor_kind, 'id', ${t}.actor_id),
    'action', ${t}.action,
    'target', json_build_object('type', ${t}.target_type, 'id', ${t}.target_id),
    'request_id', ${t}.request_id,
    'detail', ${t}.detail)`;

/**
 * Events for the CLI, oldest first: of `tenantId` (undefined: every tenant and the tenant-less
 * acts), at or after `since`, of `action`; at most `limit` (default 1000) — the newest ones.
 */
export async function listAuditEvents(
  q: Queryable,
  filter: { tenantId?: string; since?: Date; action?: string; limit?: number } = {},
): Promise<AuditEventJson[]> {
  const rows = await q.query<{ e: AuditEventJson }>(
    `select e from (
       select ${auditEventJsonSql('t')} as e, t.at, t.id from audit_events t
        where ($1::uuid is null or t.tenant_id = $1::uuid)
          and ($2::timestamptz is null or t.at >= $2::timestamptz)
          and ($3::text is null or t.action = $3::text)
        order by t.at desc, t.id desc limit $4
     ) s order by s.at, s.id`,
    [filter.tenantId ?? null, filter.since?.toISOString() ?? null, filter.action ?? null, filter.limit ?? 1000],
  );
  return rows.map((r) => (typeof r.e === 'string' ? JSON.parse(r.e) : r.e));
}
