/**
 * Who may frame the LTI pages (issue #22 "Framing"): the registered platforms' origins — no
 * `svc embed origins` entry needed — and nothing else. A platform's origins are those of its
 * issuer and its authorization URL, the LMS hosts of a shared issuer (`SHARED_ISSUER_HOSTS`:
 * every Canvas Cloud course page is on its institution's `*.instructure.com` host, not on the
 * issuer's), the registration's own `frame_origins` (vanity domains: `svc lti platforms add
 * --frame-origin`; migration 0165), plus, once a launch's id_token has been verified, those of
 * its `launch_presentation.return_url` and `tool_platform.url`. The login's pages (the auto-submit form, platform storage) are shown
 * before any id_token is verified, so only what is registered can let them into a frame. Before
 * the platform is known (a malformed login), every registered platform's origins.
 */
import type { Queryable } from '../db/index.ts';
import type { Platform } from './platforms.ts';

/** The origin of `url` when it is an http(s) URL, else undefined. */
export const originOf = (url: unknown): string | undefined => {
  if (typeof url !== 'string' || !URL.canParse(url)) return undefined;
  const u = new URL(url);
  return u.protocol === 'https:' || u.protocol === 'http:' ? u.origin : undefined;
};

/** A `frame-ancestors` source list of `origins` (deduplicated), or `'none'`. */
export const ancestorsOf = (origins: Array<string | undefined>) => {
  const set = [...new Set(origins.filter((o): o is string => Boolean(o)))];
  return set.length ? set.join(' ') : "'none'";
};

/**
 * The hosts of the LMSes that share one issuer across institutions (FIELD-NOTES "Platform
 * quirks"): Canvas Cloud (production, beta and test instances: `https://<school>.instructure.com`,
 * `https://<school>.beta.instructure.com`) and Blackboard Learn SaaS. A CSP `*.` host source
 * matches any subdomain depth (CSP Level 3 §6.7.2.6).
 */
const SHARED_ISSUER_HOSTS: Record<string, string> = {
  'https://canvas.instructure.com': 'https://*.instructure.com',
  'https://canvas.beta.instructure.com': 'https://*.instructure.com',
  'https://canvas.test.instructure.com': 'https://*.instructure.com',
  'https://blackboard.com': 'https://*.blackboard.com',
};

/** The registered origins of a platform: issuer, authorization URL, a shared issuer's LMS hosts, its frame origins. */
const registeredOrigins = (p: { issuer: string; auth_url: string; frame_origins?: readonly string[] | null }) => [
  originOf(p.issuer),
  originOf(p.auth_url),
  SHARED_ISSUER_HOSTS[originOf(p.issuer) ?? ''],
  ...(p.frame_origins ?? []),
];

/** The origins of `platform`, and of the verified launch `claims` when given. */
export function platformAncestors(platform: Pick<Platform, 'issuer' | 'auth_url' | 'frame_origins'>, claims?: Record<string, unknown>): string {
  const presentation = claims?.['https://purl.imsglobal.org/spec/lti/claim/launch_presentation'] as { return_url?: unknown } | undefined;
  const toolPlatform = claims?.['https://purl.imsglobal.org/spec/lti/claim/tool_platform'] as { url?: unknown } | undefined;
  return ancestorsOf([...registeredOrigins(platform), originOf(presentation?.return_url), originOf(toolPlatform?.url)]);
}

/** The origins that may frame the page of a dynamic registration of `issuer` run from `configUrl` (the LMS's openid_configuration). */
export const registrationAncestors = (configUrl: string | undefined, issuer?: string) =>
  ancestorsOf([originOf(configUrl), ...(issuer === undefined ? [] : [originOf(issuer), SHARED_ISSUER_HOSTS[originOf(issuer) ?? '']])]);

/** Most registrations whose origins an error page lists (the query is capped to them, newest first). */
export const MAX_ANCESTOR_PLATFORMS = 200;

/** Every registered platform's origins (a page shown before the platform is known), at most `MAX_ANCESTOR_PLATFORMS` registrations. */
export async function allPlatformAncestors(q: Queryable): Promise<string> {
  const rows = await q.query<{ issuer: string; auth_url: string; frame_origins: string[] | null }>(
    'select issuer, auth_url, frame_origins from lti_platforms order by created_at desc limit $1',
    [MAX_ANCESTOR_PLATFORMS],
  );
  return ancestorsOf(rows.flatMap(registeredOrigins));
}

/**
 * `allPlatformAncestors` for the error pages of one app, read at most once per `maxAgeMs` (a
 * burst of refused logins makes one query, not one each). `last()` is the value of the latest
 * read without a query (`'none'` before any): what a page shows while the database is down.
 */
export class AllPlatformAncestors {
  private value = "'none'";
  private at = 0;
  private pending: Promise<string> | undefined;
  constructor(
    private readonly q: Queryable,
    private readonly maxAgeMs = 30_000,
  ) {}

  last(): string {
    return this.value;
  }

  async get(): Promise<string> {
    if (Date.now() - this.at < this.maxAgeMs) return this.value;
    this.pending ??= allPlatformAncestors(this.q)
      .then((v) => {
        this.value = v;
        this.at = Date.now();
        return v;
      })
      .catch(() => this.value)
      .finally(() => {
        this.pending = undefined;
      });
    return this.pending;
  }
}
