/**
 * What a launch tells the tool about where it was placed (migration 0151): the course (LTI
 * context, LTI Core 1.3 §5.4.1), the launching user as a member of it, and the resource link
 * (placement) with its Assignment and Grade Services endpoint (AGS 2.0 §3.1). The roster read
 * (NRPS) adds members with source 'nrps'; the score delivery finds a learner's placements here.
 */
import type { Queryable } from '../db/index.ts';
import { CLAIM, type LaunchClaims } from './launch.ts';
import type { Platform } from './platforms.ts';

const httpUrl = (v: unknown): string | null => (typeof v === 'string' && /^https?:\/\//.test(v) && v.length <= 2048 ? v : null);
const text = (v: unknown, max = 500): string | null => (typeof v === 'string' && v.length <= max ? v : null);

/**
 * The context id standing for a launch's course when the launch names none (the context claim is
 * optional, LTI Core 1.3 §5.4.1): its resource link alone, so the people who launch it are its
 * members and their scores reach the link's line item (the outbox joins placements to members by
 * context, migration 0152). Prefixed so it does not meet an LMS's own opaque context ids in practice.
 */
export const linkContextId = (resourceLinkId: string) => `svc:resource_link:${resourceLinkId}`;

/**
 * The launch's course as stored: its row id (`lti_contexts.id`) — the context claim's, else
 * (a resource link launch without one) the resource link's own (`linkContextId`); null for a
 * launch that names neither (a deep-linking request without a context).
 */
export async function recordContext(tx: Queryable, platform: Platform, claims: LaunchClaims): Promise<string | null> {
  const claimed = claims[CLAIM.context] as { id?: unknown; title?: unknown; label?: unknown } | undefined;
  const link = claims[CLAIM.resourceLink] as { id?: unknown; title?: unknown } | undefined;
  const linkId = text(link?.id, 200);
  const context = claimed ?? (linkId ? { id: linkContextId(linkId), title: link?.title } : undefined);
  const contextId = text(context?.id, 255);
  if (!contextId) return null;
  const nrps = claims[CLAIM.nrps] as { context_memberships_url?: unknown } | undefined;
  const [row] = await tx.query<{ id: string }>(
    `insert into lti_contexts (tenant_id, platform_id, context_id, title, label, memberships_url)
          values ($1, $2, $3, $4, $5, $6)
     on conflict (tenant_id, platform_id, context_id) do update
          set title = excluded.title, label = excluded.label,
              memberships_url = coalesce(excluded.memberships_url, lti_contexts.memberships_url), updated_at = now()
     returning id`,
    [platform.tenant_id, platform.id, contextId, text(context?.title), text(context?.label), httpUrl(nrps?.context_memberships_url)],
  );
  return row!.id;
}

/** Record `userId` as a member of course `context` with the launch's roles (source 'launch'). */
export async function recordMember(
  tx: Queryable,
  tenantId: string,
  context: string,
  userId: string,
  roles: string[],
  source: 'launch' | 'nrps',
): Promise<void> {
  await tx.query(
    `insert into lti_context_members (tenant_id, context, user_id, roles, source) values ($1, $2, $3, $4, $5)
     on conflict (tenant_id, context, user_id) do update set roles = excluded.roles, source = excluded.source, updated_at = now()`,
    [tenantId, context, userId, roles.slice(0, 50), source],
  );
}

/**
 * Record the resource link of a resource-link launch placing `activityId`, with the AGS endpoint
 * claim when present (kept from an earlier launch when this one has none). Returns its row id.
 */
export async function recordResourceLink(tx: Queryable, platform: Platform, claims: LaunchClaims, context: string | null, activityId: string): Promise<string> {
  const link = claims[CLAIM.resourceLink] as { id: string };
  const ags = claims[CLAIM.ags] as { lineitem?: unknown; lineitems?: unknown; scope?: unknown } | undefined;
  const scopes = Array.isArray(ags?.scope) ? ags.scope.filter((s): s is string => typeof s === 'string' && s.length <= 255).slice(0, 20) : null;
  const [row] = await tx.query<{ id: string }>(
    `insert into lti_resource_links (tenant_id, platform_id, context, resource_link_id, activity_id, lineitem_url, lineitems_url, ags_scopes)
          values ($1, $2, $3, $4, $5, $6, $7, coalesce($8::text[], '{}'))
     on conflict (tenant_id, platform_id, resource_link_id) do update
          set context = excluded.context, activity_id = excluded.activity_id,
              lineitem_url = coalesce(excluded.lineitem_url, lti_resource_links.lineitem_url),
              lineitems_url = coalesce(excluded.lineitems_url, lti_resource_links.lineitems_url),
              ags_scopes = case when $8::text[] is null then lti_resource_links.ags_scopes else excluded.ags_scopes end,
              updated_at = now()
     returning id`,
    [platform.tenant_id, platform.id, context, link.id, activityId, httpUrl(ags?.lineitem), httpUrl(ags?.lineitems), scopes],
  );
  return row!.id;
}
