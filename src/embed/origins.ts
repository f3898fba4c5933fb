/**
 * The partner origins allowed to embed a tenant's player (`embed_origins`, migration 0090;
 * `svc embed origins add|remove|list`).
 *
 * An entry is an exact origin — scheme, host, optional port, nothing else
 * (`https://learn.example.com`, `http://127.0.0.1:5173`) — or a wildcard of one subdomain level
 * (`https://*.example.com`: `https://a.example.com` matches, `https://example.com` and
 * `https://a.b.example.com` do not). They are used twice, with the same meaning:
 * - the player page's `Content-Security-Policy: frame-ancestors` (CSP's own host-source
 *   wildcard also matches deeper subdomains, CSP Level 3 §6.7.2.6, so a page on
 *   `https://a.b.example.com` may frame the player but `allows` refuses to talk to it); none
 *   configured → `'none'`: it cannot be framed;
 * - the player's check of the origin it talks to (`allows`), before it accepts a message.
 */
import type { Queryable } from '../db/index.ts';

const ORIGIN_RE = /^(https?):\/\/(\*\.)?([a-z0-9-]+(?:\.[a-z0-9-]+)*|\[[0-9a-f:.]+\])(?::(\d{1,5}))?$/;

/**
 * `input` as a stored entry (lower-cased, default port dropped), or an error message saying what
 * is wrong with it.
 */
export function normalizeOrigin(input: string): { origin: string } | { error: string } {
  const text = input.trim().toLowerCase().replace(/\/$/, '');
  const m = ORIGIN_RE.exec(text);
  if (!m) return { error: `"${input}" is not an origin: give scheme://host[:port] (http or https, no path), or https://*.example.com` };
  const [, scheme, wildcard, host, port] = m;
  if (wildcard && (host!.startsWith('[') || !host!.includes('.'))) return { error: `"${input}": a wildcard needs a domain below it (https://*.example.com)` };
  if (port !== undefined && (Number(port) < 1 || Number(port) > 65535)) return { error: `"${input}": the port must be 1–65535` };
  const defaultPort = (scheme === 'https' && port === '443') || (scheme === 'http' && port === '80');
  return { origin: `${scheme}://${wildcard ?? ''}${host}${port === undefined || defaultPort ? '' : `:${port}`}` };
}

/** Whether `origin` (a browser's `location.origin`) is allowed by `entries`. */
export function allows(entries: readonly string[], origin: string): boolean {
  return entries.some((entry) => {
    if (entry === origin) return true;
    const star = entry.indexOf('://*.');
    if (star < 0) return false;
    const scheme = entry.slice(0, star + 3);
    const suffix = entry.slice(star + 4); // ".example.com[:port]"
    if (!origin.startsWith(scheme) || !origin.endsWith(suffix)) return false;
    const label = origin.slice(scheme.length, origin.length - suffix.length);
    return /^[a-z0-9-]+$/.test(label);
  });
}

/** The `frame-ancestors` source list of `entries`: the entries, or `'none'`. */
export const frameAncestors = (entries: readonly string[]) => (entries.length ? entries.join(' ') : "'none'");

/** The allowed origins of tenant `tenantId`, sorted. */
export async function listOrigins(q: Queryable, tenantId: string): Promise<string[]> {
  const rows = await q.query<{ origin: string }>('select origin from embed_origins where tenant_id = $1 order by origin', [tenantId]);
  return rows.map((r) => r.origin);
}

/** Tenant `slug`'s id and allowed origins, or undefined for an unknown tenant. */
export async function tenantOrigins(q: Queryable, slug: string): Promise<{ tenantId: string; origins: string[] } | undefined> {
  const [row] = await q.query<{ id: string; origins: string[] }>(
    `select t.id, coalesce(array_agg(o.origin order by o.origin) filter (where o.origin is not null), '{}') as origins
       from tenants t left join embed_origins o on o.tenant_id = t.id
      where t.slug = $1 group by t.id`,
    [slug],
  );
  return row && { tenantId: row.id, origins: row.origins };
}

/** Add `origin` (normalised) for `tenantId`; false when it was there already. */
export async function addOrigin(q: Queryable, tenantId: string, origin: string): Promise<boolean> {
  const rows = await q.query('insert into embed_origins (tenant_id, origin) values ($1, $2) on conflict do nothing returning origin', [tenantId, origin]);
  return rows.length > 0;
}

/** Remove `origin` (normalised) of `tenantId`; false when it was not there. */
export async function removeOrigin(q: Queryable, tenantId: string, origin: string): Promise<boolean> {
  const rows = await q.query('delete from embed_origins where tenant_id = $1 and origin = $2 returning origin', [tenantId, origin]);
  return rows.length > 0;
}
