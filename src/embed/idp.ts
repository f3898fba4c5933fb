/**
 * Verifying a tenant's identity-provider (IdP) tokens (DESIGN §5 "Tokens").
 *
 * A tenant's IdP settings live in `tenant_idps` (set by `svc idp set`): the `issuer`, and either
 * a JWKS URL or an OIDC discovery URL whose document names the `jwks_uri`. A token is accepted
 * when all of these hold:
 * - its `alg` is asymmetric (`IDP_ALGORITHMS`): HS256 and `none` are refused, so a token
 *   HMAC-signed with the IdP's *public* key (the classic key-confusion attack) or an unsigned
 *   one never passes, even if a JWKS carried a symmetric key;
 * - its signature verifies with a key of the tenant's JWKS (selected by `kid`/`alg`);
 * - `iss` equals the stored issuer exactly; `aud` contains the stored audience when one is set;
 * - `exp` is present and not past, `nbf` (if any) is reached, both with `CLOCK_TOLERANCE_SECONDS`
 *   of leeway for clock skew between the IdP and us; `sub` is a non-empty string.
 *
 * Key sets come from jose's `createRemoteJWKSet`, one per JWKS URL per app, trusted for
 * `jwksMaxAgeMs` (SVC_IDP_JWKS_MAX_AGE, default 5 minutes): a key the IdP removed from its set
 * stops being accepted at most that long after (the set is fetched again on the next token
 * after its age). A token with an unknown `kid` triggers a refetch (key rotation) at most once
 * per `JWKS_COOLDOWN_MS`, so random kids cannot make us hammer the IdP. Discovery documents are
 * cached as long; their `issuer` must equal the stored issuer (OpenID Connect Discovery §4.3).
 *
 * Immediate removal: `svc idp refresh <tenant>` bumps the tenant's `keys_version`, which every
 * process reads with the tenant's settings on each token; a new version is a new cache entry, so
 * the next token of that tenant, in every process, is checked against a freshly fetched set.
 *
 * The URLs are set by an administrator, not by learners, so these fetches are not SSRF-guarded
 * like the judge's page fetch; they are http(s) only (checked by `idp.set`), time-capped and
 * never follow redirects.
 */
import { createRemoteJWKSet, jwtVerify, type JWTPayload } from 'jose';
import type { Queryable } from '../db/index.ts';
import type { Deps } from '../deps.ts';
import { unauthorized } from './errors.ts';

/** Accepted signature algorithms: asymmetric only. */
export const IDP_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'];
/** Leeway on `exp` and `nbf`, in seconds. */
export const CLOCK_TOLERANCE_SECONDS = 30;
/** An unknown `kid` refetches the JWKS at most once per this many milliseconds. */
export const JWKS_COOLDOWN_MS = 30_000;
/** Time cap of one JWKS or discovery fetch, in milliseconds. */
export const IDP_FETCH_TIMEOUT_MS = 5_000;
const DISCOVERY_MAX_BYTES = 64 * 1024;
/** Largest `sub` we map to a user (auth.identities.provider_id). */
const MAX_SUBJECT_LENGTH = 255;

/** A tenant and its IdP settings (a row of `tenant_idps`). */
export interface TenantIdp {
  tenantId: string;
  slug: string;
  issuer: string;
  jwksUrl: string | null;
  discoveryUrl: string | null;
  /** Expected `aud`; null → not checked. */
  audience: string | null;
  /** Bumped by `svc idp refresh`: cached key sets of an older version are not used. */
  keysVersion: number;
}

/** The verified claims of an IdP token (`sub` guaranteed). */
export type IdpClaims = JWTPayload & { sub: string };

/** The tenant with slug `slug` and its IdP settings; undefined when either is missing. */
export async function findTenantIdp(q: Queryable, slug: string): Promise<TenantIdp | undefined> {
  const [row] = await q.query<TenantIdp>(
    `select t.id as "tenantId", t.slug, i.issuer, i.jwks_url as "jwksUrl", i.discovery_url as "discoveryUrl", i.audience,
            i.keys_version as "keysVersion"
       from tenants t join tenant_idps i on i.tenant_id = t.id
      where t.slug = $1`,
    [slug],
  );
  return row;
}

type RemoteKeySet = ReturnType<typeof createRemoteJWKSet>;

/**
 * Verifies IdP tokens and caches key sets and discovery documents. One instance per app
 * (created by the embed plugin); safe under concurrent requests.
 */
export class IdpVerifier {
  private readonly keySets = new Map<string, { version: number; set: RemoteKeySet }>();
  private readonly discovery = new Map<string, { jwksUri: Promise<string>; expiresAt: number; version: number }>();

  /** `jwksMaxAgeMs`: how long a fetched key set (and discovery document) is trusted. */
  constructor(
    private readonly deps: Pick<Deps, 'now'>,
    private readonly jwksMaxAgeMs: number,
  ) {}

  /**
   * Verify `token` against `idp`. Returns the claims; throws `ApiError` 401 `unauthorized`
   * on any failure (the reason goes to `internal`, for the log), including an unreachable IdP.
   */
  async verify(token: string, idp: TenantIdp): Promise<IdpClaims> {
    let keySet: RemoteKeySet;
    try {
      keySet = this.keySet(await this.jwksUrl(idp), idp.keysVersion);
    } catch (err) {
      throw unauthorized(`IdP key set unavailable: ${(err as Error).message}`);
    }
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, keySet, {
        algorithms: IDP_ALGORITHMS,
        issuer: idp.issuer,
        audience: idp.audience ?? undefined,
        clockTolerance: CLOCK_TOLERANCE_SECONDS,
        currentDate: this.deps.now(),
        requiredClaims: ['exp', 'sub'],
      }));
    } catch (err) {
      throw unauthorized(`IdP token refused: ${(err as Error).message}`);
    }
    if (typeof payload.sub !== 'string' || payload.sub.length === 0 || payload.sub.length > MAX_SUBJECT_LENGTH) {
      throw unauthorized('IdP token refused: unusable sub claim');
    }
    return payload as IdpClaims;
  }

  /** The key set of `url`, made anew when `version` is newer than the cached one's. */
  private keySet(url: string, version: number): RemoteKeySet {
    const cached = this.keySets.get(url);
    if (cached && cached.version >= version) return cached.set;
    const set = createRemoteJWKSet(new URL(url), {
      timeoutDuration: IDP_FETCH_TIMEOUT_MS,
      cooldownDuration: JWKS_COOLDOWN_MS,
      cacheMaxAge: this.jwksMaxAgeMs,
    });
    this.keySets.set(url, { version, set });
    return set;
  }

  /** The JWKS URL of `idp`: stored directly, or the `jwks_uri` of its discovery document. */
  private async jwksUrl(idp: TenantIdp): Promise<string> {
    if (idp.jwksUrl) return idp.jwksUrl;
    const url = idp.discoveryUrl!;
    const key = `${url}\n${idp.issuer}`;
    const cached = this.discovery.get(key);
    if (cached && cached.expiresAt > Date.now() && cached.version >= idp.keysVersion) return cached.jwksUri;
    const jwksUri = readDiscovery(url, idp.issuer);
    this.discovery.set(key, { jwksUri, expiresAt: Date.now() + this.jwksMaxAgeMs, version: idp.keysVersion });
    jwksUri.catch(() => {
      if (this.discovery.get(key)?.jwksUri === jwksUri) this.discovery.delete(key);
    });
    return jwksUri;
  }
}

/** Fetch an OIDC discovery document and return its `jwks_uri` (checking its `issuer`). */
async function readDiscovery(url: string, issuer: string): Promise<string> {
  const res = await fetch(url, {
    redirect: 'manual',
    headers: { accept: 'application/json' },
    signal: AbortSignal.timeout(IDP_FETCH_TIMEOUT_MS),
  });
  if (res.status !== 200) throw new Error(`discovery document answered HTTP ${res.status}`);
  const text = await res.text();
  if (text.length > DISCOVERY_MAX_BYTES) throw new Error('discovery document too large');
  const doc = JSON.parse(text) as { issuer?: unknown; jwks_uri?: unknown };
  if (doc.issuer !== issuer) throw new Error('discovery document names another issuer');
  if (typeof doc.jwks_uri !== 'string' || !/^https?:\/\//i.test(doc.jwks_uri)) {
    throw new Error('discovery document has no http(s) jwks_uri');
  }
  return doc.jwks_uri;
}
