/**
 * The line item a placement's scores go to (Assignment and Grade Services 2.0 §3.2): the launch's
 * `lineitem` when the platform sent one (it made the column when the link was placed); else the
 * item of the placement's `lineitems` container whose `resourceId` is the activity id (Deep Linking
 * places activities with `lineItem.resourceId = <activity_id>`), and when there is none the tool
 * creates it there (`scoreMaximum` 100, the activity's title as `label`, `resourceId`,
 * `resourceLinkId`) — some platforms show a column only after it exists. A found or created URL is
 * kept per placement (`lti_score_lineitems`, migration 0152).
 *
 * Query strings of platform URLs are kept (Moodle's `?type_id=`): parameters are added with
 * `URLSearchParams`, and `/scores` is added to the path, not after the query (AGS 2.0 §3.4).
 */
import { z } from 'zod';
import type { Deps } from '../../deps.ts';
import type { Queryable } from '../../db/index.ts';
import { callService, ServiceTokenError, type TokenPlatform } from '../service-token.ts';

export const AGS_SCOPE = {
  lineitem: 'https://purl.imsglobal.org/spec/lti-ags/scope/lineitem',
  lineitemReadonly: 'https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly',
  score: 'https://purl.imsglobal.org/spec/lti-ags/scope/score',
} as const;
export const LINEITEM_MEDIA_TYPE = 'application/vnd.ims.lis.v2.lineitem+json';
export const LINEITEM_CONTAINER_MEDIA_TYPE = 'application/vnd.ims.lis.v2.lineitemcontainer+json';
/** Most container pages read looking for a placement's line item. */
export const MAX_LINEITEM_PAGES = 10;

/** A placement as the delivery needs it. */
export interface Placement {
  tenant_id: string;
  id: string;
  resource_link_id: string;
  activity_id: string;
  activity_title: string;
  lineitem_url: string | null;
  lineitems_url: string | null;
  ags_scopes: string[];
  platform: TokenPlatform;
}

/** Why a placement cannot take scores (a 4xx-like, permanent failure). */
export class PlacementError extends Error {}

const LineItem = z.object({ id: z.string().url(), resourceId: z.string().optional(), resourceLinkId: z.string().optional() });

/** The placement `link` of `tenantId` with its platform and activity, or undefined. */
export async function loadPlacement(q: Queryable, tenantId: string, link: string): Promise<Placement | undefined> {
  const [row] = await q.query<Omit<Placement, 'platform'> & { platform_id: string; client_id: string; token_url: string; token_audience: string | null }>(
    `select l.tenant_id, l.id, l.resource_link_id, l.activity_id, coalesce(a.title, '') as activity_title,
            l.lineitem_url, l.lineitems_url, l.ags_scopes, p.id as platform_id, p.client_id, p.token_url, p.token_audience
       from lti_resource_links l
       join lti_platforms p on p.tenant_id = l.tenant_id and p.id = l.platform_id
       left join activities a on a.id = l.activity_id
      where l.tenant_id = $1 and l.id = $2`,
    [tenantId, link],
  );
  if (!row) return undefined;
  const { platform_id, client_id, token_url, token_audience, ...placement } = row;
  return { ...placement, platform: { id: platform_id, client_id, token_url, token_audience } };
}

/** The scopes to ask for, of those the platform granted the placement (`wanted` in order of preference, first hit each). */
export const grantedScopes = (p: Placement, ...wanted: string[][]) =>
  wanted.map((alternatives) => alternatives.find((s) => p.ags_scopes.includes(s))).filter((s): s is string => Boolean(s));

/** `url` with `/scores` added to its path (query kept). */
export function scoresUrl(lineitem: string): string {
  const u = new URL(lineitem);
  u.pathname = `${u.pathname.replace(/\/+$/, '')}/scores`;
  return u.toString();
}

/** The next page of a `Link` header (`rel="next"`), resolved against `base`, or undefined. */
export function nextLink(header: string | string[] | undefined, base: string): string | undefined {
  for (const value of [header ?? []].flat()) {
    for (const part of value.split(/,(?=\s*<)/)) {
      const m = /^\s*<([^>]*)>\s*;(.*)$/.exec(part);
      if (m && /(^|;)\s*rel\s*=\s*"?([^";]*\s)?next(\s[^";]*)?"?\s*(;|$)/i.test(m[2]!)) {
        return URL.canParse(m[1]!, base) ? new URL(m[1]!, base).toString() : undefined;
      }
    }
  }
  return undefined;
}

/**
 * The line item URL of placement `p` (header): the launch's, the kept one, a found one or a new
 * one. Throws `PlacementError` when the placement cannot take scores, `ServiceTokenError` when the
 * platform fails.
 */
export async function lineItemOf(deps: Pick<Deps, 'db' | 'now' | 'config'>, p: Placement): Promise<string> {
  if (p.lineitem_url) return p.lineitem_url;
  const [kept] = await deps.db.query<{ lineitem_url: string }>('select lineitem_url from lti_score_lineitems where tenant_id = $1 and link = $2', [
    p.tenant_id,
    p.id,
  ]);
  if (kept) return kept.lineitem_url;
  if (!p.lineitems_url) throw new PlacementError('the placement has no line item and no line items container (AGS claim)');
  const scopes = grantedScopes(p, [AGS_SCOPE.lineitem, AGS_SCOPE.lineitemReadonly]);
  if (!scopes.length) throw new PlacementError('the platform granted no line item scope for this placement');
  // 1. Find it by resourceId (the platform filters with resource_id; check again, some do not).
  let page: string | undefined = (() => {
    const u = new URL(p.lineitems_url);
    u.searchParams.set('resource_id', p.activity_id);
    return u.toString();
  })();
  for (let n = 0; page && n < MAX_LINEITEM_PAGES; n++) {
    const answer = await callService(deps, p.platform, scopes, page, { accept: LINEITEM_CONTAINER_MEDIA_TYPE });
    let items: z.infer<typeof LineItem>[];
    try {
      const parsed = JSON.parse(answer.text);
      items = (Array.isArray(parsed) ? parsed : []).flatMap((x: unknown) => {
        const r = LineItem.safeParse(x);
        return r.success ? [r.data] : [];
      });
    } catch {
      throw new ServiceTokenError('the line items container is not JSON');
    }
    const found = items.find((i) => i.resourceId === p.activity_id && (!i.resourceLinkId || i.resourceLinkId === p.resource_link_id));
    if (found) return keep(deps.db, p, found.id, false);
    page = nextLink(answer.headers.link, page);
  }
  // 2. Make it.
  if (!p.ags_scopes.includes(AGS_SCOPE.lineitem))
    throw new PlacementError('no line item for this activity, and the platform did not grant the scope to create one');
  const created = await callService(deps, p.platform, [AGS_SCOPE.lineitem], p.lineitems_url, {
    method: 'POST',
    body: JSON.stringify({
      scoreMaximum: 100,
      label: (p.activity_title || 'Activity').slice(0, 255),
      resourceId: p.activity_id,
      resourceLinkId: p.resource_link_id,
    }),
    contentType: LINEITEM_MEDIA_TYPE,
    accept: LINEITEM_MEDIA_TYPE,
  });
  let item: z.infer<typeof LineItem>;
  try {
    item = LineItem.parse(JSON.parse(created.text));
  } catch {
    throw new ServiceTokenError('the platform did not answer the new line item with its id');
  }
  return keep(deps.db, p, item.id, true);
}

async function keep(q: Queryable, p: Placement, url: string, created: boolean): Promise<string> {
  if (!/^https?:\/\//.test(url) || url.length > 2048) throw new ServiceTokenError('the line item id is not an http(s) URL');
  await q.query(
    `insert into lti_score_lineitems (tenant_id, link, lineitem_url, created) values ($1, $2, $3, $4)
     on conflict (tenant_id, link) do nothing`,
    [p.tenant_id, p.id, url, created],
  );
  // Two deliveries making it at once: both use the first one kept.
  const [kept] = await q.query<{ lineitem_url: string }>('select lineitem_url from lti_score_lineitems where tenant_id = $1 and link = $2', [
    p.tenant_id,
    p.id,
  ]);
  return kept?.lineitem_url ?? url;
}
