/**
 * The model-call ledger and the per-tenant model budget (issue #10 "Cost bounds", "Replayable
 * verdicts"; tables and `svc.reserve_model_call` in migration 0060).
 *
 * Every call to the grading model is a row of `model_calls`, inserted *before* the call by
 * `reserveCall` and completed after it by `completeCall`: the exact request body (stored once,
 * content-addressed by its sha256, in `model_requests`), the raw answer, its id, the model that
 * answered, token usage, HTTP status, outcome and timing. A verdict names the call that made it
 * (`verification.call_id`), so it can be audited and replayed (`svc verdict show`).
 *
 * Budget. A tenant may spend `callsPerHour` / `tokensPerHour` in the current UTC hour and
 * `callsPerDay` / `tokensPerDay` in the current UTC day (SVC_JUDGE_TENANT_*; tokens = prompt +
 * completion), summed per hour in `model_usage`. `reserveCall` is one statement: under a
 * per-tenant advisory lock it reads at most 24 hourly rows, refuses when a budget is reached, or
 * counts the call and inserts its ledger row — so calls never exceed the call budgets, whatever
 * the number of workers and processes; a call in flight counts, and so does one whose process
 * died mid-call. Tokens are known only after a call (`completeCall` adds them to the call's
 * hour): a token budget may be passed by at most the calls in flight when it was reached (each
 * bounded by the input budget and `max_tokens`). Windows are fixed: beyond a budget, the answer
 * says which and when its window ends (`retryAt`), and the submission waits until then.
 */
import type { Db, Queryable } from '../../db/index.ts';
import type { ModelBudget } from '../../config.ts';
import type { CallRecord, GradingRequest } from './types.ts';

/** Which budget is spent (`calls_per_hour`, `tokens_per_hour`, `calls_per_day`, `tokens_per_day`), and when its window ends. */
export interface BudgetExhausted {
  limit: string;
  retryAt: Date;
}

/**
 * Whom a call is for: a learner's artifact, or a calibration run (migration 0141: the ledger row
 * names exactly one of them, so calibration calls are told apart from learners').
 */
export interface CallSlot {
  tenantId: string;
  artifactId?: string;
  calibrationRunId?: string;
  /** The grading run (1-based) and the attempt within it (1-based). */
  run: number;
  attempt: number;
  model: string;
  request: GradingRequest;
}

/**
 * Reserve one model call for `slot` within `budget` at time `now` (one statement, see the
 * header). Returns the ledger row's id, or which budget is spent.
 */
export async function reserveCall(db: Db, now: Date, budget: ModelBudget, slot: CallSlot): Promise<{ id: string } | { exhausted: BudgetExhausted }> {
  const [row] = await db.query<{ call_id: string | null; exhausted: string | null; retry_at: string | null }>(
    `select call_id, exhausted, to_json(retry_at) #>> '{}' as retry_at
       from svc.reserve_model_call($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
    [
      slot.tenantId,
      slot.artifactId ?? null,
      slot.run,
      slot.attempt,
      slot.model,
      slot.request.sha256,
      JSON.stringify(slot.request.body),
      now.toISOString(),
      budget.callsPerHour,
      budget.callsPerDay,
      budget.tokensPerHour,
      budget.tokensPerDay,
      slot.calibrationRunId ?? null,
    ],
  );
  if (row!.exhausted) return { exhausted: { limit: row!.exhausted, retryAt: new Date(row!.retry_at!) } };
  return { id: row!.call_id! };
}

/** Record what call `id` did (`record` from `Grader.call`), and add its tokens to its hour's usage. One statement. */
export async function completeCall(q: Queryable, tenantId: string, id: string, record: CallRecord): Promise<void> {
  await q.query(
    `with call as (
       update model_calls
          set duration_ms = $3, outcome = $4, http_status = $5, response_id = $6, response = $7::text::jsonb,
              error = $8, prompt_tokens = $9, completion_tokens = $10, model = coalesce($11, model)
        where tenant_id = $1 and id = $2
        returning tenant_id, started_at)
     update model_usage u set tokens = u.tokens + $9::bigint + $10::bigint
       from call where u.tenant_id = call.tenant_id and u.hour = date_trunc('hour', call.started_at at time zone 'UTC') at time zone 'UTC'`,
    [
      tenantId,
      id,
      record.durationMs,
      record.outcome,
      record.httpStatus ?? null,
      record.responseId?.slice(0, 200) ?? null,
      record.response === undefined ? null : JSON.stringify(record.response),
      record.error ?? null,
      record.promptTokens,
      record.completionTokens,
      record.model?.slice(0, 200) ?? null,
    ],
  );
}

/** One ledger row as `svc verdict show` prints it (the request body by reference). */
export interface LedgerCall {
  id: string;
  run: number;
  attempt: number;
  model: string;
  started_at: string;
  duration_ms: number | null;
  outcome: string | null;
  http_status: number | null;
  response_id: string | null;
  prompt_tokens: number;
  completion_tokens: number;
  request_sha256: string | null;
  response: unknown;
  error: string | null;
}

/** Every model call made for artifact `artifactId` of `tenantId`, oldest first. */
export function callsOf(q: Queryable, tenantId: string, artifactId: string): Promise<LedgerCall[]> {
  return q.query<LedgerCall>(
    `select id, run, attempt, model, to_json(started_at) #>> '{}' as started_at, duration_ms, outcome, http_status,
            response_id, prompt_tokens, completion_tokens, request_sha256, response, error
       from model_calls where tenant_id = $1 and artifact_id = $2 order by started_at, run, attempt`,
    [tenantId, artifactId],
  );
}

/** The request body stored under `sha256` for `tenantId`, as the exact JSON text sent (for replay), or undefined. */
export async function requestBody(q: Queryable, tenantId: string, sha256: string): Promise<string | undefined> {
  const [row] = await q.query<{ body: string }>('select body from model_requests where tenant_id = $1 and sha256 = $2', [tenantId, sha256]);
  return row?.body;
}
