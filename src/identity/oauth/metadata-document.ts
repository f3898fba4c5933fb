/**
 * Client ID Metadata Documents (MCP authorization 2025-11-25; draft-ietf-oauth-client-id-
 * metadata-document): a client whose `client_id` is an https URL publishes its metadata there.
 *
 * Fetched through the outbound-fetch guard (src/http/outbound.ts: no private addresses unless
 * `SVC_FETCH_ALLOW_PRIVATE`, the connection pinned to the checked address), with no redirects,
 * at most 5 KiB (the draft's advice), within 5 s, JSON only. The document must name itself
 * (`client_id` equal to the URL, character for character), be a public client (no secret;
 * `token_endpoint_auth_method` absent or "none") and carry valid redirect URIs
 * (clients.ts#checkClientMetadata).
 *
 * The checked document is cached in `auth.oauth_clients` (kind `metadata_document`), shared by
 * every process, for its `Cache-Control: max-age`, kept within 60 s … 24 h (5 min without one;
 * `no-store`/`no-cache` → 60 s). A revoked URL is never fetched again.
 */
import type { Deps } from '../../deps.ts';
import { fetchResource, FetchRefused, type FetchedResource } from '../../http/outbound.ts';
import { checkClientMetadata, type ClientMetadata, type OAuthClient } from './clients.ts';
import { OAuthError } from './errors.ts';

const MAX_BYTES = 5 * 1024;
const TIMEOUT_MS = 5000;
const MIN_CACHE_SECONDS = 60;
const MAX_CACHE_SECONDS = 24 * 3600;
const DEFAULT_CACHE_SECONDS = 300;

/** True when `clientId` is a metadata document URL: https, a host, a path other than `/`, no fragment or credentials. */
export function isMetadataDocumentUrl(clientId: string): boolean {
  if (!clientId.startsWith('https://') || clientId.length > 2048 || !URL.canParse(clientId)) return false;
  const url = new URL(clientId);
  return url.pathname !== '/' && !url.hash && !url.username && !url.password;
}

/** Seconds to keep a document fetched with `cacheControl`, within the bounds above. */
export function cacheSeconds(cacheControl: string | undefined): number {
  const value = (cacheControl ?? '').toLowerCase();
  if (/(^|,)\s*(no-store|no-cache)\b/.test(value)) return MIN_CACHE_SECONDS;
  const maxAge = /(^|,)\s*max-age\s*=\s*"?(\d+)"?/.exec(value)?.[2];
  const seconds = maxAge === undefined ? DEFAULT_CACHE_SECONDS : Number(maxAge);
  return Math.min(MAX_CACHE_SECONDS, Math.max(MIN_CACHE_SECONDS, seconds));
}

const refused = (url: string, why: string) => new OAuthError(400, 'invalid_client', `the client metadata document at ${url} ${why}`);

/**
 * The client `url` names: the cached document while fresh, else fetched, checked and cached.
 * Undefined when the URL was revoked. Throws `OAuthError` 400 `invalid_client` when the document
 * cannot be fetched or is not valid.
 */
export async function resolveMetadataDocument(deps: Deps, url: string): Promise<OAuthClient | undefined> {
  const [cached] = await deps.db.query<OAuthClient & { revoked: boolean; fresh: boolean }>(
    `select client_id, kind, client_name, client_uri, logo_uri, redirect_uris, revoked_at is not null as revoked,
            expires_at > $2::timestamptz as fresh
       from auth.oauth_clients where client_id = $1`,
    [url, deps.now().toISOString()],
  );
  if (cached?.revoked) return undefined;
  if (cached?.fresh) return { ...cached, kind: 'metadata_document' };

  let fetched: FetchedResource;
  try {
    fetched = await fetchResource(url, {
      allowPrivate: deps.config.fetchAllowPrivate,
      timeoutMs: TIMEOUT_MS,
      maxBytes: MAX_BYTES,
      maxRedirects: 0,
      ca: deps.config.fetchCa,
      accept: (type) => /^application\/([a-z.+-]*\+)?json\b/i.test(type),
      acceptHeader: 'application/json',
    });
  } catch (err) {
    if (err instanceof FetchRefused) throw refused(url, `could not be fetched: ${err.message}`);
    throw err;
  }
  if (fetched.truncated) throw refused(url, `is larger than ${MAX_BYTES} bytes`);
  let doc: unknown;
  try {
    doc = JSON.parse(fetched.body.toString('utf8'));
  } catch {
    throw refused(url, 'is not valid JSON');
  }
  const d = (doc && typeof doc === 'object' && !Array.isArray(doc) ? doc : {}) as Record<string, unknown>;
  if (d.client_id !== url) throw refused(url, 'must name itself: its client_id must equal its URL');
  if (d.client_secret !== undefined || d.client_secret_expires_at !== undefined) throw refused(url, 'must not carry a client secret');
  if (d.token_endpoint_auth_method !== undefined && d.token_endpoint_auth_method !== 'none') {
    throw refused(url, 'must use token_endpoint_auth_method "none" (public clients only)');
  }
  let meta: ClientMetadata;
  try {
    meta = checkClientMetadata(d);
  } catch (err) {
    if (err instanceof OAuthError) throw refused(url, `is not valid: ${err.description}`);
    throw err;
  }
  const expires = new Date(deps.now().getTime() + cacheSeconds(fetched.headers['cache-control']) * 1000);
  const [row] = await deps.db.query<OAuthClient>(
    `insert into auth.oauth_clients (client_id, kind, client_name, client_uri, logo_uri, redirect_uris, expires_at)
     values ($1, 'metadata_document', $2, $3, $4, $5, $6)
     on conflict (client_id) do update
        set client_name = excluded.client_name, client_uri = excluded.client_uri, logo_uri = excluded.logo_uri,
            redirect_uris = excluded.redirect_uris, expires_at = excluded.expires_at, updated_at = now()
        where auth.oauth_clients.revoked_at is null and auth.oauth_clients.kind = 'metadata_document'
     returning client_id, kind, client_name, client_uri, logo_uri, redirect_uris`,
    [url, meta.client_name, meta.client_uri, meta.logo_uri, meta.redirect_uris, expires.toISOString()],
  );
  return row;
}
