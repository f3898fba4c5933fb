/**
 * The `postMessage` protocol between a partner page (the loader, `svc-embed.js`) and the player
 * (`/embed/v1/play`), issue #13. Every message is `{type, v: 1, ...}` and is posted with an
 * explicit target origin; each side accepts messages only from the other window (`source`) and
 * origin. Imported by both scripts of the bundle (client/) and by the docs' table (docs/embed.md).
 *
 *   player → host  svc:ready, svc:resize {height}, svc:submitted {activity_id},
 *                  svc:verdict {activity_id, result_id, status, score, review?}, svc:progress {program_id,
 *                  completed_count, total_count}, svc:auth-expiring, svc:error {code, message}
 *   host → player  svc:auth {idp_token}
 */

/** The protocol version every message carries as `v`. */
export const PROTOCOL_VERSION = 1;

/** What the player tells the host. */
export type PlayerMessage =
  | { type: 'svc:ready'; v: 1 }
  | { type: 'svc:resize'; v: 1; height: number }
  | { type: 'svc:submitted'; v: 1; activity_id: string }
  /** `review` (issue #21): present when the verdict is the outcome of an instructor's review — `upheld` (it stands) or `overridden` (changed). */
  | { type: 'svc:verdict'; v: 1; activity_id: string; result_id: string; status: string; score: number | null; review?: 'upheld' | 'overridden' }
  | { type: 'svc:progress'; v: 1; program_id: string; completed_count: number; total_count: number }
  | { type: 'svc:auth-expiring'; v: 1 }
  | { type: 'svc:error'; v: 1; code: string; message: string };

/** What the host tells the player. */
export type HostMessage = { type: 'svc:auth'; v: 1; idp_token: string };

/** Whether `data` looks like a message of this protocol (an object with `v: 1` and an `svc:` type). */
export const isProtocolMessage = (data: unknown): data is { type: string; v: 1 } =>
  typeof data === 'object' &&
  data !== null &&
  (data as { v?: unknown }).v === PROTOCOL_VERSION &&
  typeof (data as { type?: unknown }).type === 'string' &&
  (data as { type: string }).type.startsWith('svc:');

/**
 * What the page hands its script (a JSON data block, `<script type="application/json" id="svc-config">`):
 * the request, checked by the server, or the reason the player cannot start.
 */
export interface PlayerConfig {
  tenant: string;
  activity: string;
  /** The embedding page's origin (the loader's `host` parameter); messages go to it only. */
  host: string;
  /** The tenant's allowed origins (src/embed/origins.ts). */
  origins: string[];
  /** The anon key, for refreshing the session at /auth/v1/token (it is public by design). */
  anonKey: string;
  /** Largest `artifact.content` the judge takes, in UTF-8 bytes. */
  maxContentBytes: number;
  /** Set when the request cannot be served: shown, and sent as `svc:error`. */
  error?: { code: string; message: string };
  /**
   * A session handed to the page by the server (an LTI launch, src/lti/): the player starts with
   * it instead of waiting for `svc:auth`, and talks to no host window. Kept in memory like any session.
   */
  session?: { access_token: string; refresh_token: string; expires_in: number };
  /**
   * An instructor's preview (an LTI instructor launch, src/lti/preview.ts): the player shows the
   * activity handed here as learners see it, marked "Preview", with submitting off, and the
   * course's learners' latest results under it. It talks to no API and no host window.
   */
  preview?: PlayerPreview;
}

/** What an instructor's preview shows (`PlayerConfig.preview`). */
export interface PlayerPreview {
  /** The activity as `GET /v1/embed/activities/{id}` returns it to a learner (with `result` null), or null when learners cannot open it. */
  activity: Record<string, unknown> | null;
  /** Why learners cannot open it (archived), when `activity` is null. */
  unavailable?: string;
  /** The course's title, when the platform sent one. */
  course?: string;
  /** The course's learners (LTI context members with the Learner role) and their latest result, by name. */
  learners: PreviewLearner[];
  /** Learners not listed (past the page's limit). */
  more: number;
}

/** One learner's latest result on the previewed activity. */
export interface PreviewLearner {
  name: string;
  /** not_started: no submission; grading: the latest attempt is being graded; review: held for an instructor's review. */
  status: 'not_started' | 'in_progress' | 'grading' | 'review' | 'passed' | 'failed' | 'not_gradable';
  /** The result's best graded score, 0–100, or null. */
  score: number | null;
  /** RFC 3339: the latest submission, or null. */
  at: string | null;
}
