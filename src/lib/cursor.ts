/**
 * The one keyset-cursor codec: an opaque base64url string that holds the sort key of the last
 * row of a page (a JSON array of strings), optionally authenticated.
 *
 *   unsigned: base64url( payload )
 *   signed:   base64url( tag[16] ‖ payload )   tag = HMAC-SHA256(key, binding ‖ "\n" ‖ payload)[0..16],
 *                                              key = HMAC-SHA256(secret, label)
 *   payload = JSON array of strings
 *
 * Only the exact encoding we produce decodes (no padding, no other alphabet, no stray bits, at
 * most `MAX_CURSOR_LENGTH` characters); `decode` answers undefined for anything else (garbage,
 * truncated, edited, re-encoded, or signed for another `binding`, e.g. another tenant), and each
 * surface turns that into its own error. A cursor is a position, not a snapshot: every row read
 * after it still goes through the caller's RLS.
 *
 * Used by the authoring list tools (unsigned; src/authoring/cursor.ts) and the Results API
 * (signed per tenant; src/results/cursor.ts).
 */
import { createHmac, createSecretKey, timingSafeEqual } from 'node:crypto';

/** Longest cursor accepted (ours are under 200 characters). */
export const MAX_CURSOR_LENGTH = 512;
const TAG_BYTES = 16;
const BASE64URL_RE = /^[A-Za-z0-9_-]+$/;

export interface KeysetCodec {
  /** The cursor of the key `parts`, bound (when signed) to `binding`. */
  encode(parts: readonly string[], binding?: string): string;
  /** The key parts of `token`, or undefined when it is not a cursor this codec issued for `binding`. */
  decode(token: string, binding?: string): string[] | undefined;
}

/**
 * A codec; with `secret`, cursors carry an HMAC tag keyed by `secret` and `label` (every process
 * sharing the secret accepts them; rotating it invalidates outstanding cursors).
 */
export function keysetCodec(signing?: { secret: string; label: string }): KeysetCodec {
  // A KeyObject made once: an HMAC keyed by a raw Buffer builds one per call, which costs ~20 µs
  // on Node 24 (more than the HMAC itself; measured in bench/README.md "Results API").
  const key = signing && createSecretKey(createHmac('sha256', signing.secret).update(signing.label).digest());
  const tagBytes = key ? TAG_BYTES : 0;
  const tag = (binding: string, payload: Buffer) => createHmac('sha256', key!).update(binding).update('\n').update(payload).digest().subarray(0, TAG_BYTES);

  return {
    encode(parts, binding = '') {
      const payload = Buffer.from(JSON.stringify(parts));
      return (key ? Buffer.concat([tag(binding, payload), payload]) : payload).toString('base64url');
    },

    decode(token, binding = '') {
      if (token.length > MAX_CURSOR_LENGTH || !BASE64URL_RE.test(token)) return undefined;
      const raw = Buffer.from(token, 'base64url');
      if (raw.toString('base64url') !== token || raw.length <= tagBytes) return undefined;
      const payload = raw.subarray(tagBytes);
      if (key && !timingSafeEqual(raw.subarray(0, TAG_BYTES), tag(binding, payload))) return undefined;
      let parsed: unknown;
      try {
        parsed = JSON.parse(payload.toString('utf8'));
      } catch {
        return undefined;
      }
      return Array.isArray(parsed) && parsed.every((part) => typeof part === 'string') ? (parsed as string[]) : undefined;
    },
  };
}

/**
 * Split the `limit + 1` rows a keyset query fetched into the page and the cursor of the next
 * page (`cursorOf` its last row), or null when this is the last page.
 */
export function keysetPage<T>(rows: T[], limit: number, cursorOf: (last: T) => string): { items: T[]; next_cursor: string | null } {
  const items = rows.slice(0, limit);
  const last = items.at(-1);
  return { items, next_cursor: rows.length > limit && last !== undefined ? cursorOf(last) : null };
}
