/**
 * The grader: one learner artifact against an activity's spec and rubric, by a language model
 * behind any OpenAI-compatible chat-completions endpoint (the `openai` SDK with `baseURL`).
 * `prepare` builds one grading request; `call` makes one model call with it and returns the
 * verdict or the classified failure, with a record of the call for the ledger (grade-job.ts
 * stores it: ledger.ts). Bounded retries, budgets and the queue are the job's.
 *
 * Prompt. The system message states the rules; the user message holds the activity (title,
 * spec, rubric with criterion ids and weights) and then the artifact as read (read/index.ts)
 * between two delimiter lines that carry a random nonce per request (`<<<ARTIFACT-<nonce>` and
 * `ARTIFACT-<nonce>>>>`), which the system message names; images (diagrams) follow as
 * `image_url` parts. The artifact is data, never instructions: the system message says so, every
 * run of `<<<` or `>>>` inside anything we interpolate is broken up (`neutralise`), and the nonce
 * cannot be guessed, so no submission can close the artifact section or open a fake one.
 * `artifact_hash` is the sha256 of what the model saw of the artifact with the nonce left out
 * (the section with plain `<<<ARTIFACT` / `ARTIFACT>>>` lines, then for each image a newline and
 * its data URL), so equal work hashes equally across requests.
 *
 * Every call sends `temperature`, `seed` and a cap on the answer's tokens (`max_completion_tokens`
 * or `max_tokens`, SVC_JUDGE_TOKEN_PARAM), from the judge's config. The exact request body is
 * kept with its sha256 (`GradingRequest`), so a verdict can be audited and replayed.
 *
 * Output. Structured output (`response_format: json_schema`, strict) asks for
 * `{criteria: [{id, met, score, evidence}], feedback, injection_suspected, injection_evidence}`;
 * criterion ids are an `enum` of the rubric's ids. Scores are 0–100. The schema keeps to the
 * subset strict mode accepts everywhere (all fields required, `additionalProperties: false`, no
 * numeric bounds): we validate and clamp ourselves, and refuse output that misses a criterion.
 *
 * Score. We compute it: the mean of the criterion scores weighted by rubric weight (default 1),
 * 0–100, rounded to 2 decimals; `passed` when it is ≥ the activity's `pass_threshold`.
 * Prompt injection: the verdict's `injection` flag combines a phrase heuristic on the section
 * and the model's own answer (injection/); a flagged pass is held for review (verdict.ts).
 *
 * Failures are `GraderError`s in two families (issue #10 "Outage vs. ungradable"):
 * - transient, the model's: `timeout`, `unreachable` (connection refused or dropped), `model_error` (5xx, and 4xx
 *   that are not about this artifact: a bad key or model name is an operator's problem),
 *   `rate_limited` (429) — the submission waits and is tried again (with `Retry-After` honoured);
 * - this artifact's: `invalid_output` (not the schema, truncated), `refused` (a refusal or a
 *   content filter), `model_rejected` (the request itself refused for its content: context too
 *   long, content policy, an image the model cannot read) — after the bounded attempts the
 *   submission ends `not_gradable`.
 */
import OpenAI, { APIError } from 'openai';
import type { JudgeConfig } from '../../config.ts';
import { classify, GraderError } from './failures.ts';
import { injectionFlag, injectionSignals } from './injection/index.ts';
import {
  artifactHash,
  artifactSection,
  buildMessages,
  newNonce,
  PROMPT_VERSION,
  rubricCriteria,
  rubricHash,
  VERDICT_SCHEMA_NAME,
  verdictJsonSchema,
} from './prompt.ts';
import { overallScore, readAnswer } from './answer.ts';
import type { ArtifactView } from '../read/index.ts';
import type { CallRecord, CallResult, GradedActivity, GradingRequest, SubmittedArtifact, Verdict } from './types.ts';
import { sha256Hex } from '../../lib/hash.ts';
import { observeModelCall } from '../../telemetry/instrument.ts';

/** Grades artifacts with the configured model. One instance per app. */
export class Grader {
  private readonly client: OpenAI;

  constructor(readonly judge: JudgeConfig) {
    this.client = new OpenAI({ baseURL: judge.baseUrl, apiKey: judge.apiKey, maxRetries: 0, timeout: judge.timeoutMs });
  }

  /** The model's name (stored with every verdict). */
  get model(): string {
    return this.judge.model;
  }

  /**
   * The request that grades `view` (the artifact as read) for `activity`: messages with a fresh
   * delimiter nonce, the strict schema, and the judge's `temperature`, `seed` and token cap.
   */
  prepare(activity: GradedActivity, artifact: SubmittedArtifact, view: Pick<ArtifactView, 'parts' | 'images'>, nonce = newNonce()): GradingRequest {
    const criteria = rubricCriteria(activity.rubric);
    const plain = artifactSection(artifact, view);
    const body = {
      model: this.judge.model,
      messages: buildMessages(activity, criteria, artifactSection(artifact, view, nonce), view.images, nonce),
      response_format: {
        type: 'json_schema',
        json_schema: { name: VERDICT_SCHEMA_NAME, strict: true, schema: verdictJsonSchema(criteria) },
      },
      temperature: this.judge.temperature,
      seed: this.judge.seed,
      [this.judge.tokenParam]: this.judge.maxTokens,
    };
    return {
      body,
      sha256: sha256Hex(JSON.stringify(body)),
      criteria,
      passThreshold: activity.pass_threshold,
      heuristic: injectionSignals(plain),
      rubricHash: rubricHash(criteria, activity.pass_threshold),
      artifactHash: artifactHash(plain, view.images),
    };
  }

  /**
   * One model call with `request`, of at most the judge's `timeoutMs` (and `signal`); `now`
   * stamps the call and `graded_at`. Never throws for the model's failures: they come back as a
   * classified `GraderError` beside the call's record.
   */
  call(request: GradingRequest, now: () => Date, signal?: AbortSignal): Promise<CallResult> {
    return observeModelCall(this.judge.model, () => this.#call(request, now, signal));
  }

  async #call(request: GradingRequest, now: () => Date, signal?: AbortSignal): Promise<CallResult> {
    const timeout = AbortSignal.timeout(this.judge.timeoutMs);
    const abort = signal ? AbortSignal.any([signal, timeout]) : timeout;
    const startedAt = now();
    const t0 = performance.now();
    const record = (outcome: CallRecord['outcome'], extra: Partial<CallRecord> = {}): CallRecord => ({
      startedAt,
      durationMs: Math.round(performance.now() - t0),
      outcome,
      promptTokens: 0,
      completionTokens: 0,
      ...extra,
    });
    let completion: OpenAI.Chat.Completions.ChatCompletion;
    try {
      completion = await this.client.chat.completions.create(request.body as unknown as OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming, {
        timeout: this.judge.timeoutMs,
        maxRetries: 0,
        signal: abort,
      });
    } catch (err) {
      const error = classify(err, abort.aborted);
      const response = err instanceof APIError ? err.error : undefined;
      return { error, record: record(error.reason, { httpStatus: error.httpStatus, response, error: error.message }) };
    }
    const usage = {
      promptTokens: Math.max(0, Math.trunc(Number(completion.usage?.prompt_tokens) || 0)),
      completionTokens: Math.max(0, Math.trunc(Number(completion.usage?.completion_tokens) || 0)),
    };
    const answered = {
      httpStatus: 200,
      responseId: typeof completion.id === 'string' ? completion.id : undefined,
      response: completion,
      model: completion.model,
      ...usage,
    };
    try {
      const choice = completion.choices?.[0];
      const message = choice?.message;
      if (message?.refusal || choice?.finish_reason === 'content_filter') throw new GraderError('refused', 'the model refused to grade');
      if (choice?.finish_reason === 'length') throw new GraderError('invalid_output', 'the model answer was cut off at the token limit');
      if (typeof message?.content !== 'string') throw new GraderError('invalid_output', 'the model answer has no content');
      const { verdicts, feedback, injection } = readAnswer(message.content, request.criteria);
      const score = overallScore(verdicts);
      const passed = score >= request.passThreshold;
      const verdict: Verdict = {
        status: passed ? 'passed' : 'failed',
        score,
        passed,
        criteria: verdicts,
        feedback,
        injection: injectionFlag(request.heuristic, injection),
        model: this.judge.model,
        prompt_version: PROMPT_VERSION,
        rubric_hash: request.rubricHash,
        artifact_hash: request.artifactHash,
        graded_at: now().toISOString(),
      };
      return { verdict, record: record('ok', answered) };
    } catch (err) {
      const error = classify(err, false);
      return { error, record: record(error.reason, { ...answered, error: error.message }) };
    }
  }
}
