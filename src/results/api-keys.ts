/**
 * Results-API keys: `svc_<prefix>_<secret>`, prefix 12 and secret 40 base62 characters from a
 * CSPRNG. Only the prefix (for listing and revocation) and the sha256 hex digest of the whole
 * key are stored; a lookup is by digest, so the comparison never touches the raw secret.
 */
import { createHash, randomInt } from 'node:crypto';
import type { Queryable } from '../db/index.ts';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
export const KEY_RE = /^svc_([0-9A-Za-z]{12})_([0-9A-Za-z]{40})$/;

function base62(length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) out += BASE62[randomInt(62)];
  return out;
}

export const hashApiKey = (key: string) => createHash('sha256').update(key).digest('hex');

export interface ApiKeyInfo {
  id: string;
  tenant_id: string;
  name: string;
  prefix: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

const INFO_COLUMNS = `id, tenant_id, name, prefix, to_json(created_at) #>> '{}' as created_at,
  to_json(last_used_at) #>> '{}' as last_used_at, to_json(revoked_at) #>> '{}' as revoked_at`;

/** Create a key for a tenant; returns the stored info and the raw key (shown once). */
export async function createApiKey(q: Queryable, tenantId: string, name: string): Promise<ApiKeyInfo & { key: string }> {
  const prefix = base62(12);
  const key = `svc_${prefix}_${base62(40)}`;
  const [info] = await q.query<ApiKeyInfo>(
    `insert into api_keys (tenant_id, name, prefix, key_hash) values ($1, $2, $3, $4) returning ${INFO_COLUMNS}`,
    [tenantId, name, prefix, hashApiKey(key)],
  );
  return { ...info!, key };
}

export function listApiKeys(q: Queryable, tenantId: string): Promise<ApiKeyInfo[]> {
  return q.query<ApiKeyInfo>(`select ${INFO_COLUMNS} from api_keys where tenant_id = $1 order by created_at, id`, [tenantId]);
}

/** Revoke by prefix; returns the key's info, or undefined when no such key exists. */
export async function revokeApiKey(q: Queryable, prefix: string): Promise<ApiKeyInfo | undefined> {
  const [info] = await q.query<ApiKeyInfo>(
    `update api_keys set revoked_at = coalesce(revoked_at, now()) where prefix = $1 returning ${INFO_COLUMNS}`,
    [prefix],
  );
  return info;
}

/** The tenant of a live key, or undefined for a malformed, unknown or revoked key. */
export async function tenantOfApiKey(q: Queryable, key: string): Promise<{ tenant_id: string; id: string } | undefined> {
  if (!KEY_RE.test(key)) return undefined;
  const [row] = await q.query<{ tenant_id: string; id: string }>(
    'select tenant_id, id from api_keys where key_hash = $1 and revoked_at is null',
    [hashApiKey(key)],
  );
  return row;
}
