/**
 * `Idempotency-Key` on `POST /v1/embed/judge` (issue #11; the header of the IETF HTTPAPI draft
 * "The Idempotency-Key HTTP Header Field", as Stripe uses it): a client that lost its answer
 * retries with the same key, and within `KEY_TTL_HOURS` the retry gets the first submission's
 * answer — the same `result_id` and `artifact_id`, its outcome as it stands now — and creates
 * nothing: no artifact, no job, no model call, no count against the learner's rate.
 *
 * - A key is the learner's own: (tenant, learner, key). Printable ASCII, 1–`MAX_KEY_LENGTH`
 *   characters; anything else → 400 `invalid_request`.
 * - The request is identified by the sha256 of its validated body (`requestHash`: zod's output,
 *   so key order does not matter). The same key with another body → 422 `idempotency_key_reused`.
 * - Requests with the same key are serialised by a transaction-scoped advisory lock taken in the
 *   submission's transaction, so two concurrent first tries make one submission; the key row is
 *   written in that transaction with the artifact it made (all or nothing).
 * - Keys older than 24 h are forgotten (replaced on reuse; `forgetExpired` removes the rest).
 */
import { createHash } from 'node:crypto';
import type { Queryable } from '../db/index.ts';
import { ApiError } from '../http/api-errors.ts';
import { invalidRequest } from './errors.ts';

export const MAX_KEY_LENGTH = 255;
export const KEY_TTL_HOURS = 24;
/** Namespace (first key) of the per-key advisory lock. */
const KEY_LOCK = 7314;

/** The header's value, checked: undefined when absent; throws 400 `invalid_request` when malformed. */
export function idempotencyKey(header: string | string[] | undefined): string | undefined {
  if (header === undefined) return undefined;
  if (Array.isArray(header)) throw invalidRequest('Idempotency-Key: give one key');
  if (header.length > MAX_KEY_LENGTH) throw invalidRequest(`Idempotency-Key: at most ${MAX_KEY_LENGTH} characters`);
  if (!/^[\x21-\x7e]+$/.test(header)) throw invalidRequest('Idempotency-Key: printable ASCII characters only, no spaces');
  return header;
}

/** sha256 hex of a validated request body. */
export const requestHash = (body: unknown) => createHash('sha256').update(JSON.stringify(body)).digest('hex');

/** A submission made earlier with the key. */
export interface KeyedSubmission {
  resultId: string;
  artifactId: string;
}

/**
 * In the submission's transaction: lock the key of (tenant, learner) and return the submission
 * it already made within 24 h, or undefined (then the caller makes it and calls `remember`).
 * Throws 422 `idempotency_key_reused` when the key was used with another body.
 */
export async function recall(tx: Queryable, tenantId: string, userId: string, key: string, hash: string): Promise<KeyedSubmission | undefined> {
  await tx.query('select pg_advisory_xact_lock($1::int, hashtext($2::text))', [KEY_LOCK, `${tenantId}\n${userId}\n${key}`]);
  const [row] = await tx.query<{ request_sha256: string; result_id: string; artifact_id: string; fresh: boolean }>(
    `select request_sha256, result_id, artifact_id, created_at > now() - make_interval(hours => $4) as fresh
       from judge_idempotency_keys where tenant_id = $1 and user_id = $2 and key = $3`,
    [tenantId, userId, key, KEY_TTL_HOURS],
  );
  if (!row?.fresh) return undefined;
  if (row.request_sha256 !== hash) {
    throw new ApiError('idempotency_key_reused', 'this Idempotency-Key was used for another request; use a new key for a new submission');
  }
  return { resultId: row.result_id, artifactId: row.artifact_id };
}

/** In the submission's transaction: remember that `key` made `made` (replacing an expired use). */
export async function remember(tx: Queryable, tenantId: string, userId: string, key: string, hash: string, made: KeyedSubmission): Promise<void> {
  await tx.query(
    `insert into judge_idempotency_keys (tenant_id, user_id, key, request_sha256, result_id, artifact_id) values ($1, $2, $3, $4, $5, $6)
     on conflict (tenant_id, user_id, key) do update
       set request_sha256 = excluded.request_sha256, result_id = excluded.result_id, artifact_id = excluded.artifact_id, created_at = now()`,
    [tenantId, userId, key, hash, made.resultId, made.artifactId],
  );
}

/** Remove keys older than 24 h (the queue's periodic sweep); returns how many. */
export async function forgetExpired(q: Queryable): Promise<number> {
  const rows = await q.query(`delete from judge_idempotency_keys where created_at < now() - make_interval(hours => $1) returning 1`, [KEY_TTL_HOURS]);
  return rows.length;
}
