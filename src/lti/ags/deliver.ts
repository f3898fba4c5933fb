/**
 * Delivering scores (Assignment and Grade Services 2.0 §3.4; issue #22 "Grades back").
 *
 * The outbox (`lti_score_deliveries`, migration 0152) holds one row per change of a learner's
 * result and placement, written by a trigger in the transaction of the change. A stream is one
 * (placement, learner): its rows are sent in order, each once, one at a time (a row is claimed
 * under a transaction-scoped advisory lock of the stream and leased for `LEASE_SECONDS`; the HTTP
 * requests run outside any transaction). For each row:
 *
 * 1. the line item (lineitems.ts) and the score (mapping.ts `scoreFor`) — nothing to say → skipped;
 * 2. the never-lower rule: once a pass was delivered to that line item for the learner, a score with
 *    a lower or missing `scoreGiven` is skipped (`belowSentPass`), with the reason recorded;
 * 3. `timestamp` = when the change committed, moved 1 ms past the last one sent to that line item
 *    for the learner when it is not later (strictly increasing; RFC 3339, UTC);
 * 4. POST to `<lineitem>/scores` with a token for the score scope (service-token.ts).
 * A platform that is down, slow or answers garbage or 5xx (or 408/429) → the row waits
 * (`queued`, `next_attempt_at` = now + 2^(attempts−1) × `RETRY_BASE_SECONDS`, at most
 * `RETRY_MAX_SECONDS`) and the rows behind it wait too: never lost, never out of order. A refusal
 * (another 4xx, a placement without a grade service) → `failed` with the status and the reason,
 * not retried; the stream goes on.
 */
import type { Deps } from '../../deps.ts';
import { ServiceTokenError } from '../service-token.ts';
import { callService } from '../service-token.ts';
import { AGS_SCOPE, lineItemOf, loadPlacement, PlacementError, scoresUrl } from './lineitems.ts';
import { belowSentPass, nextTimestamp, SCORE_MEDIA_TYPE, scoreFor, type AgsScore, type ScoreSnapshot } from './mapping.ts';

/** How long a claimed row is someone's, in seconds (a crashed sender's row is taken again after it). */
export const LEASE_SECONDS = 60;
/** First retry delay, in seconds (doubling per attempt). */
export const RETRY_BASE_SECONDS = 2;
/** Longest retry delay, in seconds. */
export const RETRY_MAX_SECONDS = 3600;
/** Namespace (first key) of the advisory locks of streams. */
const STREAM_LOCK = 7312;

/** A stream: the scores of one learner for one placement. */
export interface StreamKey {
  tenant_id: string;
  link: string;
  user_id: string;
}

/** What is left of a stream: nothing, a row waiting until `at`, or a row another sender holds. */
export type StreamOutcome = { kind: 'idle' } | { kind: 'later'; at: string } | { kind: 'busy' };

interface Claimed {
  id: string;
  subject: string;
  snapshot: ScoreSnapshot;
  created_at: string;
  attempts: number;
}

const isRetryable = (status: number | undefined) => status === undefined || status >= 500 || status === 408 || status === 429;

/** Claim the stream's next row, or say why not. */
async function claim(deps: Pick<Deps, 'db'>, key: StreamKey): Promise<Claimed | StreamOutcome> {
  return deps.db.transaction(async (tx) => {
    await tx.query('select pg_advisory_xact_lock($1::int, hashtext($2::text))', [STREAM_LOCK, `${key.tenant_id}/${key.link}/${key.user_id}`]);
    const [row] = await tx.query<Claimed & { state: string; due: boolean; leased: boolean; next_attempt_at: string }>(
      `select id, subject, snapshot, to_json(created_at) #>> '{}' as created_at, attempts, state,
              next_attempt_at <= now() as due, coalesce(lease_until > now(), false) as leased,
              to_json(next_attempt_at) #>> '{}' as next_attempt_at
         from lti_score_deliveries
        where tenant_id = $1 and link = $2 and user_id = $3 and state in ('queued', 'sending')
        order by id limit 1 for update`,
      [key.tenant_id, key.link, key.user_id],
    );
    if (!row) return { kind: 'idle' } as const;
    if (row.state === 'sending' && row.leased) return { kind: 'busy' } as const;
    if (row.state === 'queued' && !row.due) return { kind: 'later', at: row.next_attempt_at } as const;
    await tx.query(
      `update lti_score_deliveries set state = 'sending', attempts = attempts + 1, lease_until = now() + make_interval(secs => $3), updated_at = clock_timestamp()
        where tenant_id = $1 and id = $2`,
      [key.tenant_id, row.id, LEASE_SECONDS],
    );
    return { id: row.id, subject: row.subject, snapshot: row.snapshot, created_at: row.created_at, attempts: row.attempts + 1 };
  });
}

/** Record the end of a row's attempt. */
async function finish(
  deps: Pick<Deps, 'db'>,
  key: StreamKey,
  row: Claimed,
  end:
    | { state: 'delivered'; lineitem: string; sent: AgsScore; passed: boolean; status: number }
    | { state: 'skipped'; lineitem: string | null; sent: Omit<AgsScore, 'timestamp'> | null; reason: string }
    | { state: 'failed'; lineitem: string | null; status?: number; reason: string }
    | { state: 'queued'; lineitem: string | null; status?: number; reason: string; delaySeconds: number },
): Promise<void> {
  await deps.db.query(
    `update lti_score_deliveries
        set state = $3, lineitem_url = coalesce($4, lineitem_url), sent = coalesce($5::text::jsonb, sent), passed = $6,
            http_status = $7, last_error = left($8, 1000), lease_until = null,
            next_attempt_at = case when $9::float8 is null then next_attempt_at else now() + make_interval(secs => $9::float8) end,
            delivered_at = case when $3 = 'delivered' then now() else delivered_at end, updated_at = clock_timestamp()
      where tenant_id = $1 and id = $2`,
    [
      key.tenant_id,
      row.id,
      end.state,
      end.lineitem,
      'sent' in end && end.sent ? JSON.stringify(end.sent) : null,
      end.state === 'delivered' ? end.passed : null,
      'status' in end ? (end.status ?? null) : null,
      'reason' in end ? end.reason : null,
      end.state === 'queued' ? end.delaySeconds : null,
    ],
  );
}

/** The retry delay after `attempts` failed attempts, in seconds. */
export const retryDelay = (attempts: number) => Math.min(RETRY_MAX_SECONDS, RETRY_BASE_SECONDS * 2 ** Math.max(0, attempts - 1));

/** Send one claimed row (header, steps 1–4) and record how it ended. */
async function sendOne(deps: Pick<Deps, 'db' | 'now' | 'config'>, key: StreamKey, row: Claimed): Promise<void> {
  let lineitem: string | null = null;
  try {
    const placement = await loadPlacement(deps.db, key.tenant_id, key.link);
    if (!placement) return finish(deps, key, row, { state: 'failed', lineitem, reason: 'the placement is gone' });
    const draft = scoreFor(row.snapshot);
    if (!draft) return finish(deps, key, row, { state: 'skipped', lineitem, sent: null, reason: 'no submission to report' });
    if (!placement.ags_scopes.includes(AGS_SCOPE.score)) throw new PlacementError('the platform did not grant the score scope for this placement');
    lineitem = await lineItemOf(deps, placement);
    const [last] = await deps.db.query<{ pass_sent: number | null; last_timestamp: string | null }>(
      `select max((sent->>'scoreGiven')::float8) filter (where passed) as pass_sent, max(sent->>'timestamp') as last_timestamp
         from lti_score_deliveries where tenant_id = $1 and user_id = $2 and lineitem_url = $3 and state = 'delivered'`,
      [key.tenant_id, key.user_id, lineitem],
    );
    const { pass, ...fields } = draft;
    const skip = belowSentPass(draft, last?.pass_sent ?? null);
    if (skip) return finish(deps, key, row, { state: 'skipped', lineitem, sent: { userId: row.subject, ...fields }, reason: skip });
    const score: AgsScore = { userId: row.subject, ...fields, timestamp: nextTimestamp(new Date(row.created_at), last?.last_timestamp ?? null) };
    const answer = await callService(deps, placement.platform, [AGS_SCOPE.score], scoresUrl(lineitem), {
      method: 'POST',
      body: JSON.stringify(score),
      contentType: SCORE_MEDIA_TYPE,
      accept: 'application/json',
      maxBytes: 64 * 1024,
    });
    return finish(deps, key, row, { state: 'delivered', lineitem, sent: score, passed: pass, status: answer.status });
  } catch (err) {
    if (err instanceof PlacementError) return finish(deps, key, row, { state: 'failed', lineitem, reason: err.message });
    if (err instanceof ServiceTokenError) {
      if (isRetryable(err.status))
        return finish(deps, key, row, { state: 'queued', lineitem, status: err.status, reason: err.message, delaySeconds: retryDelay(row.attempts) });
      return finish(deps, key, row, { state: 'failed', lineitem, status: err.status, reason: err.message });
    }
    // Our own failure (the database): hand the row back for a later attempt, and say so.
    await finish(deps, key, row, { state: 'queued', lineitem, reason: 'the tool failed to send it; retrying', delaySeconds: retryDelay(row.attempts) }).catch(
      () => {},
    );
    throw err;
  }
}

/**
 * Send the stream's rows in order until none is left, one must wait (returns when it is due) or
 * another sender holds it.
 */
export async function deliverStream(deps: Pick<Deps, 'db' | 'now' | 'config'>, key: StreamKey): Promise<StreamOutcome> {
  for (;;) {
    const next = await claim(deps, key);
    if ('kind' in next) return next;
    await sendOne(deps, key, next);
  }
}

/** Streams with a row to send now (queued and due, or a lease run out), at most `limit`. */
export async function dueStreams(deps: Pick<Deps, 'db'>, limit = 100): Promise<StreamKey[]> {
  return deps.db.query<StreamKey>(
    `select distinct tenant_id, link, user_id from lti_score_deliveries
      where state in ('queued', 'sending') and next_attempt_at <= now() and (lease_until is null or lease_until <= now())
      limit $1`,
    [limit],
  );
}
