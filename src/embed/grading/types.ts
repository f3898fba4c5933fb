/**
 * The grader's types: an activity as graded, the submitted artifact (`SubmittedArtifact`, defined
 * with what reads it in read/types.ts), rubric criteria, a verdict, a prepared request and the ledger's record of
 * one model call. The design of the grader is in model.ts's header.
 */
import type { GraderError, GraderFailure } from './failures.ts';
import type { InjectionFlag } from './injection/index.ts';
import type { SubmittedArtifact } from '../read/types.ts';

export type { SubmittedArtifact };

/** One rubric criterion as graded: `id` is the rubric entry's `id` or `c<n>` (1-based). */
export interface Criterion {
  id: string;
  criterion: string;
  /** Relative weight, ≥ 0 (default 1). */
  weight: number;
}

export interface CriterionVerdict extends Criterion {
  met: boolean;
  /** 0–100. */
  score: number;
  evidence: string;
}

/** What the model made of one artifact (`Grader.grade`); the job adds provenance of the run. */
export interface Verdict {
  status: 'passed' | 'failed';
  /** Weighted mean of the criterion scores, 0–100, 2 decimals. */
  score: number;
  passed: boolean;
  criteria: CriterionVerdict[];
  feedback: string;
  /** Likely prompt injection in the artifact (flag only; the score stands). */
  injection: InjectionFlag;
  model: string;
  prompt_version: string;
  /** sha256 hex of the normalised criteria (ids, texts, weights) and the pass threshold. */
  rubric_hash: string;
  /** sha256 hex of what the model saw of the artifact (section, then each image's data URL). */
  artifact_hash: string;
  /** RFC 3339. */
  graded_at: string;
}

export interface GradedActivity {
  title: string;
  kind: string;
  spec: string;
  rubric: unknown;
  /** 0–100. */
  pass_threshold: number;
}

/** One grading request, ready to send: the exact body, its hash, and what reading the answer needs. */
export interface GradingRequest {
  /** The chat-completions request body exactly as sent. */
  body: Record<string, unknown>;
  /** sha256 hex of `JSON.stringify(body)` (the ledger's content address). */
  sha256: string;
  criteria: Criterion[];
  passThreshold: number;
  /** Heuristic injection signals of the section (injection/). */
  heuristic: string[];
  rubricHash: string;
  artifactHash: string;
}

/** What one model call did, for the ledger (model_calls). */
export interface CallRecord {
  startedAt: Date;
  /** Wall time of the call in milliseconds. */
  durationMs: number;
  /** `ok`, or the failure's reason. */
  outcome: 'ok' | GraderFailure;
  httpStatus?: number;
  /** The completion's `id`. */
  responseId?: string;
  /** The model's answer as received (the completion object, or the error body). */
  response?: unknown;
  /** The model that answered (the completion's `model`). */
  model?: string;
  promptTokens: number;
  completionTokens: number;
  error?: string;
}

export type CallResult = { verdict: Verdict; record: CallRecord } | { error: GraderError; record: CallRecord };
