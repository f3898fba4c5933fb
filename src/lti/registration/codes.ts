/**
 * Single-use registration codes (LTI Dynamic Registration 1.0, issue #22): `svc lti
 * registration-url <tenant>` mints a code and prints `{BASE_URL}/lti/v1/register/<code>`, the URL
 * an LMS administrator gives the platform ("Tool URL"). The code names the tenant the registration
 * will belong to. Only its SHA-256 is stored (`lti_registration_codes`, migration 0154); it
 * expires `CODE_TTL_HOURS` after minting and is consumed in the transaction that stores the
 * registration.
 *
 * While a registration runs (fetching the platform's configuration, posting ours), the code is
 * held by a lease (`claimed_until`, `CLAIM_SECONDS`): a second opening of the same URL meanwhile
 * is refused (`registration_in_progress`) instead of registering twice at the platform. A failure
 * before the registration is stored releases the lease: the code stays usable until it expires.
 */
import { randomBytes } from 'node:crypto';
import type { Queryable } from '../../db/index.ts';
import { sha256Hex } from '../../lib/hash.ts';

/** How long a registration URL is valid, in hours. */
export const CODE_TTL_HOURS = 24;
/** How long one registration attempt holds its code, in seconds (longer than its two outbound calls). */
export const CLAIM_SECONDS = 60;
/** A code: 32 random bytes, base64url. */
export const CODE_PATTERN = /^[A-Za-z0-9_-]{43}$/;

/** A minted code: the URL to give the platform, its id and expiry (RFC 3339). */
export interface MintedCode {
  id: string;
  tenant: string;
  url: string;
  expires_at: string;
}

/** Mint a code for tenant `tenantId` (slug `tenant`); `baseUrl` is the service's public URL. */
export async function mintCode(q: Queryable, tenantId: string, tenant: string, baseUrl: string): Promise<MintedCode> {
  const code = randomBytes(32).toString('base64url');
  const [row] = await q.query<{ id: string; expires_at: string }>(
    `insert into lti_registration_codes (tenant_id, code_sha256, expires_at) values ($1, $2, now() + make_interval(hours => $3))
     returning id, to_char(expires_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') as expires_at`,
    [tenantId, sha256Hex(code), CODE_TTL_HOURS],
  );
  return { id: row!.id, tenant, url: `${baseUrl.replace(/\/$/, '')}/lti/v1/register/${code}`, expires_at: row!.expires_at };
}

/** A code held for one registration attempt. */
export interface ClaimedCode {
  id: string;
  tenant_id: string;
}

/** Why a code cannot be used now. */
export type CodeRefusal = 'unknown' | 'used' | 'expired' | 'in_progress';

/**
 * Hold `code` for one attempt at `now` (the app's clock): the code, or why not. Statement-level
 * atomic, so two openings at once cannot both hold it.
 */
export async function claimCode(q: Queryable, code: string, now: Date): Promise<ClaimedCode | CodeRefusal> {
  if (!CODE_PATTERN.test(code)) return 'unknown';
  const hash = sha256Hex(code);
  const at = now.toISOString();
  const [held] = await q.query<ClaimedCode>(
    `update lti_registration_codes set claimed_until = $2::timestamptz + make_interval(secs => $3)
      where code_sha256 = $1 and used_at is null and expires_at > $2::timestamptz
        and (claimed_until is null or claimed_until <= $2::timestamptz)
      returning id, tenant_id`,
    [hash, at, CLAIM_SECONDS],
  );
  if (held) return held;
  const [row] = await q.query<{ used: boolean; expired: boolean }>(
    'select used_at is not null as used, expires_at <= $2::timestamptz as expired from lti_registration_codes where code_sha256 = $1',
    [hash, at],
  );
  if (!row) return 'unknown';
  return row.used ? 'used' : row.expired ? 'expired' : 'in_progress';
}

/** Let go of a held code after a failed attempt (it stays usable until it expires). */
export async function releaseCode(q: Queryable, code: ClaimedCode): Promise<void> {
  await q.query('update lti_registration_codes set claimed_until = null where tenant_id = $1 and id = $2 and used_at is null', [code.tenant_id, code.id]);
}

/**
 * Consume a held code for registration `platformId`, in the transaction that stored it; false
 * when the code was consumed or expired meanwhile (the caller rolls back).
 */
export async function consumeCode(q: Queryable, code: ClaimedCode, platformId: string, now: Date): Promise<boolean> {
  const rows = await q.query(
    `update lti_registration_codes set used_at = $3::timestamptz, claimed_until = null, platform_id = $4
      where tenant_id = $1 and id = $2 and used_at is null and expires_at > $3::timestamptz returning id`,
    [code.tenant_id, code.id, now.toISOString(), platformId],
  );
  return rows.length > 0;
}
