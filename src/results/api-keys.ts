/**
 * Results-API keys: `svc_<prefix>_<secret>`, prefix 12 and secret 40 base62 characters drawn
 * from the CSPRNG (`crypto.randomInt`, uniform, no modulo bias): 71 bits to find a key by, 238
 * bits of secret. Only the prefix (to list and revoke by) and the sha256 hex digest of the whole
 * key are stored; the raw key is shown once, at creation.
 *
 * A lookup finds the row by prefix and compares the digests with `crypto.timingSafeEqual`, so the
 * time it takes does not depend on how much of a guessed key is right.
 *
 * A key may carry its own rate limit (requests per window; null → the configured default).
 * Revocation, deletion and limit changes send NOTIFY `svc_api_keys` from a trigger (migration
 * 0020), which every process's key cache (key-cache.ts) listens to.
 */
import { randomInt, timingSafeEqual } from 'node:crypto';
import { sha256Hex } from '../lib/hash.ts';
import type { Queryable } from '../db/index.ts';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
export const PREFIX_LENGTH = 12;
export const SECRET_LENGTH = 40;
export const KEY_RE = /^svc_([0-9A-Za-z]{12})_([0-9A-Za-z]{40})$/;

function base62(length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) out += BASE62[randomInt(62)];
  return out;
}

/** sha256 of the whole key, hex. */
export const hashApiKey = (key: string) => sha256Hex(key);

export interface ApiKeyInfo {
  id: string;
  tenant_id: string;
  name: string;
  prefix: string;
  /** Requests per rate-limit window for this key; null → the configured default. */
  rate_limit: number | null;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

const INFO_COLUMNS = `id, tenant_id, name, prefix, rate_limit, to_json(created_at) #>> '{}' as created_at,
  to_json(last_used_at) #>> '{}' as last_used_at, to_json(revoked_at) #>> '{}' as revoked_at`;

/** Create a key for a tenant; returns the stored info and the raw key (shown once). */
export async function createApiKey(q: Queryable, tenantId: string, name: string, options: { rateLimit?: number } = {}): Promise<ApiKeyInfo & { key: string }> {
  const prefix = base62(PREFIX_LENGTH);
  const key = `svc_${prefix}_${base62(SECRET_LENGTH)}`;
  const [info] = await q.query<ApiKeyInfo>(
    `insert into api_keys (tenant_id, name, prefix, key_hash, rate_limit) values ($1, $2, $3, $4, $5) returning ${INFO_COLUMNS}`,
    [tenantId, name, prefix, hashApiKey(key), options.rateLimit ?? null],
  );
  return { ...info!, key };
}

/** A tenant's keys, oldest first, revoked ones included. */
export function listApiKeys(q: Queryable, tenantId: string): Promise<ApiKeyInfo[]> {
  return q.query<ApiKeyInfo>(`select ${INFO_COLUMNS} from api_keys where tenant_id = $1 order by created_at, id`, [tenantId]);
}

/** Revoke by prefix; returns the key's info, or undefined when no such key exists. */
export async function revokeApiKey(q: Queryable, prefix: string): Promise<ApiKeyInfo | undefined> {
  const [info] = await q.query<ApiKeyInfo>(`update api_keys set revoked_at = coalesce(revoked_at, now()) where prefix = $1 returning ${INFO_COLUMNS}`, [
    prefix,
  ]);
  return info;
}

/** What a live key grants. */
export interface LiveKey {
  id: string;
  tenantId: string;
  prefix: string;
  rateLimit: number | null;
}

/**
 * The live key `key` names, or undefined for a malformed, unknown or revoked key. One indexed
 * read by prefix as the database owner (`api_keys` is not readable by the results role), then a
 * constant-time comparison of the sha256 digests.
 */
export async function findLiveKey(q: Queryable, key: string): Promise<LiveKey | undefined> {
  const m = KEY_RE.exec(key);
  if (!m) return undefined;
  const [row] = await q.query<{ id: string; tenant_id: string; key_hash: string; rate_limit: number | null; revoked: boolean }>(
    'select id, tenant_id, key_hash, rate_limit, revoked_at is not null as revoked from api_keys where prefix = $1',
    [m[1]],
  );
  if (!row) return undefined;
  const presented = Buffer.from(hashApiKey(key), 'hex');
  const stored = Buffer.from(row.key_hash, 'hex');
  if (stored.length !== presented.length || !timingSafeEqual(stored, presented) || row.revoked) return undefined;
  return { id: row.id, tenantId: row.tenant_id, prefix: m[1]!, rateLimit: row.rate_limit };
}

/**
 * Write the keys' last use: `used` maps key id → time of its latest request seen by this
 * process. One statement for all keys; never moves `last_used_at` backwards.
 */
export async function recordKeyUse(q: Queryable, used: ReadonlyMap<string, Date>): Promise<void> {
  if (used.size === 0) return;
  await q.query(
    `update api_keys k set last_used_at = greatest(k.last_used_at, u.at)
       from unnest($1::uuid[], $2::timestamptz[]) as u(id, at)
      where k.id = u.id and k.last_used_at is distinct from greatest(k.last_used_at, u.at)`,
    [[...used.keys()], [...used.values()].map((d) => d.toISOString())],
  );
}
