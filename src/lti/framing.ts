/**
 * Who may frame the LTI pages (issue #22 "Framing"): the registered platforms' origins — no
 * `svc embed origins` entry needed — and nothing else. A platform's origins are those of its
 * issuer and its authorization URL, plus, once a launch's id_token has been verified, those of
 * its `launch_presentation.return_url` and `tool_platform.url` (an institution's own LMS host,
 * e.g. a Canvas instance under the shared Canvas issuer). Before the platform is known (a
 * malformed login), every registered platform's origins.
 */
import type { Queryable } from '../db/index.ts';
import type { Platform } from './platforms.ts';

/** The origin of `url` when it is an http(s) URL, else undefined. */
const originOf = (url: unknown): string | undefined => {
  if (typeof url !== 'string' || !URL.canParse(url)) return undefined;
  const u = new URL(url);
  return u.protocol === 'https:' || u.protocol === 'http:' ? u.origin : undefined;
};

/** A `frame-ancestors` source list of `origins` (deduplicated), or `'none'`. */
export const ancestorsOf = (origins: Array<string | undefined>) => {
  const set = [...new Set(origins.filter((o): o is string => Boolean(o)))];
  return set.length ? set.join(' ') : "'none'";
};

/** The origins of `platform`, and of the verified launch `claims` when given. */
export function platformAncestors(platform: Pick<Platform, 'issuer' | 'auth_url'>, claims?: Record<string, unknown>): string {
  const presentation = claims?.['https://purl.imsglobal.org/spec/lti/claim/launch_presentation'] as { return_url?: unknown } | undefined;
  const toolPlatform = claims?.['https://purl.imsglobal.org/spec/lti/claim/tool_platform'] as { url?: unknown } | undefined;
  return ancestorsOf([originOf(platform.issuer), originOf(platform.auth_url), originOf(presentation?.return_url), originOf(toolPlatform?.url)]);
}

/** Most registrations whose origins an error page lists (the query is capped to them, newest first). */
export const MAX_ANCESTOR_PLATFORMS = 200;

/** Every registered platform's origins (a page shown before the platform is known), at most `MAX_ANCESTOR_PLATFORMS` registrations. */
export async function allPlatformAncestors(q: Queryable): Promise<string> {
  const rows = await q.query<{ issuer: string; auth_url: string }>('select issuer, auth_url from lti_platforms order by created_at desc limit $1', [
    MAX_ANCESTOR_PLATFORMS,
  ]);
  return ancestorsOf(rows.flatMap((r) => [originOf(r.issuer), originOf(r.auth_url)]));
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
