/** Shapes shared by the artifact readers (src/embed/read/*). */
import type { FetchOptions } from '../../http/outbound.ts';

/** An artifact that cannot be read: the message says why, in words fit for the learner. */
export class Unreadable extends Error {}

/**
 * The submitted fields of an artifact, as stored (`artifacts`): the one artifact input type of the
 * judge — what read/ reads, what the prompt shows (grading/prompt.ts), what calibration examples hold.
 */
export interface SubmittedArtifact {
  kind: string;
  ref_url?: string | null;
  repo_url?: string | null;
  content?: string | null;
}

export interface ReadOptions {
  /** Allow private / loopback addresses (SVC_FETCH_ALLOW_PRIVATE, tests only). */
  allowPrivate: boolean;
  /** Time for all of one artifact's downloads, in milliseconds. */
  timeoutMs: number;
  /** Largest download per URL, in bytes. */
  maxBytes: number;
  /** Largest text shown to the model, in bytes. */
  inputBytes: number;
  /** Images may be sent to the model. */
  vision: boolean;
  signal?: AbortSignal;
  /** Resolver for host names (tests inject one). */
  lookup?: FetchOptions['lookup'];
  /** Address rule (tests inject one); default `isBlockedAddress`. */
  isBlocked?: FetchOptions['isBlocked'];
}

/** The download bounds of `o` as `fetchResource` takes them (the caller adds what to accept). */
export const fetchBounds = (o: ReadOptions) => ({
  allowPrivate: o.allowPrivate,
  timeoutMs: o.timeoutMs,
  maxBytes: o.maxBytes,
  signal: o.signal,
  lookup: o.lookup,
  isBlocked: o.isBlocked,
});

/** An image for a vision-capable model, as a data URL. */
export interface ArtifactImage {
  /** Where it came from: `content` or the URL. */
  source: string;
  mediaType: string;
  bytes: number;
  dataUrl: string;
}

/** One block of text in the artifact section. */
export interface ArtifactPart {
  heading: string;
  text: string;
}

/** What was read from one field of the artifact, for the verdict's provenance. */
export interface ReadSource {
  field: 'content' | 'ref_url' | 'repo_url';
  ok: boolean;
  /** What was found (`text/html, 12 kB`, `git 3f2a…, 14 files`) or why it could not be read. */
  detail: string;
}

/** Everything the grader will show the model about one artifact. */
export interface ArtifactView {
  parts: ArtifactPart[];
  images: ArtifactImage[];
  sources: ReadSource[];
}
