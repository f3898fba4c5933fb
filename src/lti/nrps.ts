/**
 * Names and Role Provisioning Services 2.0 (issue #22): an instructor's launch carrying the NRPS
 * claim (`context_memberships_url`, recorded on the course, contexts.ts) queues a roster read, so
 * `/v1/learners` lists the class before anyone submits.
 *
 * `queueRosterRead(tx, platform, claims)` — in the launch's transaction — records the course with
 * its roster URL and puts a job on `lti-roster` (src/jobs; policy `stately` keyed by the course:
 * at most one read queued and one running per course). The job (`readRoster`):
 *
 * 1. GETs the roster (`application/vnd.ims.lti-nrps.v2.membershipcontainer+json`) with a service
 *    token for `contextmembership.readonly` (service-token.ts), following `Link: rel="next"` pages
 *    (at most `MAX_ROSTER_PAGES`, `MAX_ROSTER_MEMBERS` members; NRPS 2.0 §2.4.2);
 * 2. for each member with the Learner role and an `Active` status (or none): the service user of
 *    (tenant, issuer, `user_id`) — learners.ts, the same mapping as a launch, with the names and
 *    email the roster gives; a learner member of the tenant — and the course membership with
 *    source `nrps` (a membership a launch recorded keeps its source). Instructors and inactive
 *    members are not provisioned. Each page is one transaction; the HTTP requests run outside.
 * A platform that fails (down, 5xx, garbage) fails the job, which pg-boss retries with backoff;
 * a refusal (4xx) ends it.
 */
import { z } from 'zod';
import type { Deps } from '../deps.ts';
import type { Queryable } from '../db/index.ts';
import { defineQueue } from '../jobs/index.ts';
import { nextLink } from './ags/lineitems.ts';
import { ltiLearner } from './learners.ts';
import { callService, ServiceTokenError } from './service-token.ts';

export const NRPS_SCOPE = 'https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly';
export const MEMBERSHIP_MEDIA_TYPE = 'application/vnd.ims.lti-nrps.v2.membershipcontainer+json';
/** Most roster pages read in one read. */
export const MAX_ROSTER_PAGES = 50;
/** Most members read in one read. */
export const MAX_ROSTER_MEMBERS = 10_000;

const LEARNER = /^(http:\/\/purl\.imsglobal\.org\/vocab\/lis\/v2\/membership#)?Learner$/;

const Member = z.object({
  user_id: z.string().min(1).max(255),
  roles: z.array(z.string().max(500)).max(50),
  status: z.string().optional(),
  name: z.string().max(500).optional(),
  given_name: z.string().max(500).optional(),
  family_name: z.string().max(500).optional(),
  email: z.string().max(500).optional(),
});
type Member = z.infer<typeof Member>;

/** What a roster read did. */
export interface RosterRead {
  pages: number;
  /** Learners provisioned (new or already known). */
  learners: number;
  /** Members skipped (not learners, inactive, malformed). */
  skipped: number;
  /** True when a page or member cap stopped the read. */
  capped: boolean;
}

/** The job of one course's roster read. */
interface RosterJob {
  tenant_id: string;
  context: string;
}

/**
 * In the launch's transaction: when course `context` (its `lti_contexts.id`, recorded by
 * contexts.ts `recordContext`; null when the launch names none) has a roster URL (the NRPS
 * claim), queue its roster read. Returns the job id, or null (no course, no roster URL, a read
 * already queued).
 */
export async function queueRosterRead(tx: Queryable, tenantId: string, context: string | null): Promise<string | null> {
  if (!context) return null;
  const [row] = await tx.query<{ memberships_url: string | null }>('select memberships_url from lti_contexts where tenant_id = $1 and id = $2', [
    tenantId,
    context,
  ]);
  if (!row?.memberships_url) return null;
  return rosterQueue.enqueue(tx, { tenant_id: tenantId, context }, { singletonKey: `${tenantId}/${context}` });
}

/** Provision one page's learners (step 2) in one transaction. */
async function provision(deps: Pick<Deps, 'db'>, platform: { tenant_id: string; issuer: string }, context: string, members: Member[]): Promise<number> {
  return deps.db.transaction(async (tx) => {
    let n = 0;
    for (const m of members) {
      const user = await ltiLearner(
        tx,
        platform,
        { sub: m.user_id, name: m.name, given_name: m.given_name, family_name: m.family_name, email: m.email },
        { signIn: false },
      );
      await tx.query(
        `insert into lti_context_members (tenant_id, context, user_id, roles, source) values ($1, $2, $3, $4, 'nrps')
         on conflict (tenant_id, context, user_id) do update set roles = excluded.roles, updated_at = now()`,
        [platform.tenant_id, context, user.svc_user_id, m.roles],
      );
      n++;
    }
    return n;
  });
}

/** Read the roster of course `job.context` (header). Throws `ServiceTokenError` when the platform fails. */
export async function readRoster(deps: Pick<Deps, 'db' | 'now' | 'config'>, job: RosterJob): Promise<RosterRead> {
  const [c] = await deps.db.query<{
    memberships_url: string | null;
    platform_id: string;
    issuer: string;
    client_id: string;
    token_url: string;
    token_audience: string | null;
  }>(
    `select c.memberships_url, p.id as platform_id, p.issuer, p.client_id, p.token_url, p.token_audience
       from lti_contexts c join lti_platforms p on p.tenant_id = c.tenant_id and p.id = c.platform_id
      where c.tenant_id = $1 and c.id = $2`,
    [job.tenant_id, job.context],
  );
  const read: RosterRead = { pages: 0, learners: 0, skipped: 0, capped: false };
  if (!c?.memberships_url) return read;
  const platform = { id: c.platform_id, client_id: c.client_id, token_url: c.token_url, token_audience: c.token_audience };
  let page: string | undefined = c.memberships_url;
  let seen = 0;
  while (page) {
    if (read.pages >= MAX_ROSTER_PAGES || seen >= MAX_ROSTER_MEMBERS) {
      read.capped = true;
      break;
    }
    const answer = await callService(deps, platform, [NRPS_SCOPE], page, { accept: MEMBERSHIP_MEDIA_TYPE, maxBytes: 4 * 1024 * 1024 });
    let raw: unknown[];
    try {
      const body = JSON.parse(answer.text) as { members?: unknown };
      if (!Array.isArray(body?.members)) throw new Error('no members');
      raw = body.members;
    } catch {
      throw new ServiceTokenError('the roster page is not a membership container');
    }
    read.pages++;
    const learners: Member[] = [];
    for (const m of raw.slice(0, MAX_ROSTER_MEMBERS - seen)) {
      const parsed = Member.safeParse(m);
      if (parsed.success && parsed.data.roles.some((r) => LEARNER.test(r)) && (parsed.data.status ?? 'Active') === 'Active') learners.push(parsed.data);
      else read.skipped++;
    }
    seen += raw.length;
    read.learners += await provision(deps, { tenant_id: job.tenant_id, issuer: c.issuer }, job.context, learners);
    page = nextLink(answer.headers.link, page);
  }
  return read;
}

/** The roster-read job queue (header). A refusal (4xx) ends the job; anything else is retried. */
export const rosterQueue = defineQueue<RosterJob>({
  name: 'lti-roster',
  options: { policy: 'stately', retryLimit: 5, retryDelay: 30, retryBackoff: true, expireInSeconds: 600, retentionDays: 7 },
  handler: async (job, { deps, log }) => {
    try {
      return await readRoster(deps, job.data);
    } catch (err) {
      if (err instanceof ServiceTokenError && err.status !== undefined && err.status >= 400 && err.status < 500 && err.status !== 408 && err.status !== 429) {
        log.warn({ err, context: job.data.context }, 'lti roster: the platform refused the read');
        return { refused: err.message, status: err.status };
      }
      throw err;
    }
  },
});
