/**
 * Admin operations behind the `svc` CLI (DESIGN §6): the one registry and front door. One
 * operation per command; each runs as the database owner in one transaction and returns plain
 * JSON. The CLI calls them directly (DATABASE_URL, or an embedded data folder no server holds) or
 * through the running server's `POST /admin/v1/ops/:op` (embedded folder held by `npm start`), so
 * both paths run this code. src/admin/routes.ts, src/cli and the tests import from here only.
 *
 * The operations live by surface in ops/: tenants, users, authors, keys, privacy (learners and
 * retention), idp, embed, lti, judge (reviews, thresholds, consistency, verdicts), oauth, audit;
 * ops/shared.ts holds `AdminError`, the shared argument schemas and the tenant lookup.
 *
 * Errors: `AdminError` with a stable `code` (`not_found`, `conflict`, `invalid`) and a message
 * meant for the person at the terminal.
 */
import type { Db, Queryable } from '../db/index.ts';
import { auditOp } from './audited.ts';
import { auditOps } from './ops/audit.ts';
import { authorOps } from './ops/authors.ts';
import { embedOps } from './ops/embed.ts';
import { idpOps } from './ops/idp.ts';
import { judgeOps } from './ops/judge.ts';
import { keyOps } from './ops/keys.ts';
import { ltiOps } from './ops/lti.ts';
import { oauthOps } from './ops/oauth.ts';
import { learnerOps, retentionOps } from './ops/privacy.ts';
import { AdminError } from './ops/shared.ts';
import { tenantOps } from './ops/tenants.ts';
import { userOps } from './ops/users.ts';

export { AdminError };

/** The commands, their argument schemas (zod) and implementations, by name (`tenant.create`, …). */
export const ops = {
  ...tenantOps,
  ...userOps,
  ...authorOps,
  ...keyOps,
  ...learnerOps,
  ...idpOps,
  ...embedOps,
  ...ltiOps,
  ...judgeOps,
  ...oauthOps,
  ...auditOps,
  ...retentionOps,
} as const;

export type OpName = keyof typeof ops;
export const isOpName = (name: string): name is OpName => Object.hasOwn(ops, name);

/**
 * `args` for `op` as the process running it fills them in: an op that prints the service's URLs
 * (`base_url`: `svc lti config`, `svc lti registration-url`) gets `baseUrl` — that process's
 * BASE_URL — when the caller sent none. The CLI sends none: run by a server (the embedded folder
 * it holds), the URLs are the server's, which an admin's shell may not have.
 */
export function withBaseUrl(op: OpName, args: unknown, baseUrl: string): unknown {
  const takesBaseUrl = 'base_url' in ops[op].args.shape;
  if (!takesBaseUrl || (args && typeof args === 'object' && 'base_url' in args)) return args;
  return { ...(args && typeof args === 'object' ? args : {}), base_url: baseUrl };
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
