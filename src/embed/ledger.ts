/**
 * The model-call ledger and the per-tenant model budget (issue #10 "Cost bounds", "Replayable
 * verdicts"; tables in migration 0060).
 *
 * Every call to the grading model is a row of `model_calls`, inserted *before* the call by
 * `reserveCall` and completed after it by `completeCall`: the exact request body (stored once,
 * content-addressed by its sha256, in `model_requests`), the raw answer, its id, the model that
 * answered, token usage, HTTP status, outcome and timing. A verdict names the call that made it
 * (`verification.call_id`), so it can be audited and replayed (`svc verdict show`).
 *
 * Budget. A tenant may spend `callsPerHour` / `tokensPerHour` in the current UTC hour and
 * `callsPerDay` / `tokensPerDay` in the current UTC day (SVC_JUDGE_TENANT_*), summed from its
 * ledger rows (tokens = prompt + completion). `reserveCall` checks and inserts under a
 * per-tenant advisory lock, so calls never exceed the call budgets, whatever the number of
 * workers and processes; a call in flight counts (its row exists), and so does one whose
 * process died mid-call. Tokens are known only after a call: a budget of tokens may be passed by
 * at most the calls in flight when it was reached (each bounded by the input budget and
 * `max_tokens`). Windows are fixed: beyond a budget, the answer says when the window that is
 * full ends (`retryAt`), and the submission waits until then.
 */
import type { Db, Queryable } from '../db/index.ts';
import type { ModelBudget } from '../config.ts';
import type { CallRecord, GradingRequest } from './grader.ts';

/** Namespace (first key) of the per-tenant advisory lock of `reserveCall`. */
const BUDGET_LOCK = 7313;
const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;

/** What a tenant spent in the UTC hour and day of `now`. */
export interface TenantUsage {
  callsHour: number;
  tokensHour: number;
  callsDay: number;
  tokensDay: number;
}

/** Which budget is spent, and when its window ends. */
export interface BudgetExhausted {
  /** `calls_per_hour`, `tokens_per_hour`, `calls_per_day` or `tokens_per_day`. */
  limit: string;
  retryAt: Date;
}

const startOf = (now: Date, ms: number) => new Date(Math.floor(now.getTime() / ms) * ms);

/** The tenant's spending in the current UTC hour and day (`now`: the injectable clock). */
export async function tenantUsage(q: Queryable, tenantId: string, now: Date): Promise<TenantUsage> {
  const [row] = await q.query<{ calls_hour: number; tokens_hour: string; calls_day: number; tokens_day: string }>(
    `select count(*) filter (where started_at >= $2)::int as calls_hour,
            coalesce(sum(prompt_tokens + completion_tokens) filter (where started_at >= $2), 0)::text as tokens_hour,
            count(*)::int as calls_day,
            coalesce(sum(prompt_tokens + completion_tokens), 0)::text as tokens_day
       from model_calls where tenant_id = $1 and started_at >= $3`,
    [tenantId, startOf(now, HOUR_MS).toISOString(), startOf(now, DAY_MS).toISOString()],
  );
  return { callsHour: row!.calls_hour, tokensHour: Number(row!.tokens_hour), callsDay: row!.calls_day, tokensDay: Number(row!.tokens_day) };
}

/** The first budget `usage` has reached, or undefined when one more call is allowed. */
export function exhausted(usage: TenantUsage, budget: ModelBudget, now: Date): BudgetExhausted | undefined {
  const nextHour = new Date(startOf(now, HOUR_MS).getTime() + HOUR_MS);
  const nextDay = new Date(startOf(now, DAY_MS).getTime() + DAY_MS);
  if (usage.callsDay >= budget.callsPerDay) return { limit: 'calls_per_day', retryAt: nextDay };
  if (usage.tokensDay >= budget.tokensPerDay) return { limit: 'tokens_per_day', retryAt: nextDay };
  if (usage.callsHour >= budget.callsPerHour) return { limit: 'calls_per_hour', retryAt: nextHour };
  if (usage.tokensHour >= budget.tokensPerHour) return { limit: 'tokens_per_hour', retryAt: nextHour };
  return undefined;
}

/** Whom a call is for. */
export interface CallSlot {
  tenantId: string;
  artifactId: string;
  /** The grading run (1-based) and the attempt within it (1-based). */
  run: number;
  attempt: number;
  model: string;
  request: GradingRequest;
}

/**
 * Reserve one model call for `slot` within `budget`: in one transaction under the tenant's
 * lock, check the budget and insert the ledger row (and the request body, once per hash).
 * Returns the row's id, or which budget is spent.
 */
export async function reserveCall(
  db: Db,
  now: Date,
  budget: ModelBudget,
  slot: CallSlot,
): Promise<{ id: string } | { exhausted: BudgetExhausted }> {
  return db.transaction(async (tx) => {
    await tx.query('select pg_advisory_xact_lock($1::int, hashtext($2::text))', [BUDGET_LOCK, slot.tenantId]);
    const full = exhausted(await tenantUsage(tx, slot.tenantId, now), budget, now);
    if (full) return { exhausted: full };
    await tx.query(
      `insert into model_requests (tenant_id, sha256, body) values ($1, $2, $3) on conflict do nothing`,
      [slot.tenantId, slot.request.sha256, JSON.stringify(slot.request.body)],
    );
    const [row] = await tx.query<{ id: string }>(
      `insert into model_calls (tenant_id, artifact_id, run, attempt, request_sha256, model, started_at)
       values ($1, $2, $3, $4, $5, $6, $7) returning id`,
      [slot.tenantId, slot.artifactId, slot.run, slot.attempt, slot.request.sha256, slot.model, now.toISOString()],
    );
    return { id: row!.id };
  });
}

/** Record what call `id` did (`record` from `Grader.call`). */
export async function completeCall(q: Queryable, tenantId: string, id: string, record: CallRecord): Promise<void> {
  await q.query(
    `update model_calls
        set duration_ms = $3, outcome = $4, http_status = $5, response_id = $6, response = $7::text::jsonb,
            error = $8, prompt_tokens = $9, completion_tokens = $10, model = coalesce($11, model)
      where tenant_id = $1 and id = $2`,
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
