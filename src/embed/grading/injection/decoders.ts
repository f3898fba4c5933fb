/**
 * Decoders of obfuscated text: encoded runs are decoded so the patterns can be matched on them
 * too (matcher.ts names such hits with the encoding, e.g. `ignore instructions (base64)`).
 *
 * - base64 and base64url: runs of ≥ 16 characters, MIME line breaks allowed, kept only if they
 *   decode to mostly printable UTF-8;
 * - hex: `69676e…`, `69 67 6e`, `\x69\x67`, `0x69 0x67`;
 * - percent-encoding and HTML numeric entities (the `entities` library): decoded in place with up
 *   to 200 characters of context either side; a hit must touch the decoded part;
 * - Unicode tag characters ("ASCII smuggling");
 * - ROT13 (`rot13`: English patterns only, on the whole folded text).
 *
 * Bounds: at most 50 decoded runs per encoding (of at most 1,000 candidates looked at), each cut
 * to 8 KB (8,192 bytes decoded).
 */
import { decodeHTML } from 'entities';
import { mapUnits } from './normalise.ts';

const ROT13 = new Uint16Array(0x10000).map((_, c) => (c >= 97 && c <= 122 ? ((c - 97 + 13) % 26) + 97 : c));
/** `s` with a–z rotated by 13 (on lower-cased text). */
export const rot13 = (s: string) => mapUnits(s, ROT13);

const MAX_RUNS = 50; // decoded runs kept per encoding
const MAX_CANDIDATES = 1_000; // candidate runs looked at per encoding
const MAX_DECODED = 8 * 1024; // bytes (and characters) of one decoded run
const CONTEXT = 200; // plain characters kept either side of an in-place run

/** A decoded run; `before`/`after` are the (decoded) text around it for in-place encodings. */
export interface Decoded {
  before: string;
  run: string;
  after: string;
}

const UTF8 = new TextDecoder('utf-8');

/** The bytes as UTF-8 text if they are mostly printable (≤ 5 % replacement or control characters). */
function printable(bytes: Uint8Array): string | undefined {
  if (bytes.length < 8) return undefined;
  const text = UTF8.decode(bytes.subarray(0, MAX_DECODED));
  let bad = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0xfffd || (c < 32 && c !== 9 && c !== 10 && c !== 13) || (c >= 0x7f && c < 0xa0)) bad++;
  }
  return bad <= text.length * 0.05 && /\p{L}{2}/u.test(text) ? text : undefined;
}

/** Base64 or base64url, optionally wrapped over lines (MIME). */
const BASE64_RUN = /[A-Za-z0-9+/_-]{16,}={0,2}(?:[ \t]*\r?\n[ \t]*[A-Za-z0-9+/_-]{4,}={0,2})*/g;
const BASE64_CHARS = Math.ceil(MAX_DECODED / 3) * 4;

function base64(s: string): Decoded[] {
  const out: Decoded[] = [];
  let seen = 0;
  for (const m of s.matchAll(BASE64_RUN)) {
    if (++seen > MAX_CANDIDATES || out.length >= MAX_RUNS) break;
    const lines = m[0].slice(0, BASE64_CHARS * 2).split(/\s+/);
    const whole = lines
      .join('')
      .replace(/=+(?=.)/g, '')
      .slice(0, BASE64_CHARS);
    let text = printable(Buffer.from(whole, 'base64'));
    if (!text && lines.length > 1) text = printable(Buffer.from(lines[0]!.slice(0, BASE64_CHARS), 'base64'));
    if (text) out.push({ before: '', run: text, after: '' });
  }
  return out;
}

/** `\x69\x67…`, `0x69 0x67 …`, `69676e…` (≥ 16 digits) and `69 67 6e …` (≥ 8 bytes). */
const HEX_RUN =
  /(?:\\x[0-9A-Fa-f]{2}){8,}|(?:0x[0-9A-Fa-f]{2}[ ,]*){8,}|(?<![0-9A-Za-z])[0-9A-Fa-f]{16,}(?![0-9A-Za-z])|(?<![0-9A-Za-z])[0-9A-Fa-f]{2}(?:[ :,-][0-9A-Fa-f]{2}){7,}(?![0-9A-Za-z])/g;

function hex(s: string): Decoded[] {
  const out: Decoded[] = [];
  let seen = 0;
  for (const m of s.matchAll(HEX_RUN)) {
    if (++seen > MAX_CANDIDATES || out.length >= MAX_RUNS) break;
    const digits = m[0]
      .slice(0, MAX_DECODED * 5)
      .replace(/\\x|0x|[^0-9A-Fa-f]/g, '')
      .slice(0, MAX_DECODED * 2);
    const text = printable(Buffer.from(digits.length % 2 ? digits.slice(0, -1) : digits, 'hex'));
    if (text) out.push({ before: '', run: text, after: '' });
  }
  return out;
}

/** Invisible Unicode tag characters U+E0020–E007E carry ASCII ("ASCII smuggling"). */
const TAG_RUN = /[\u{E0000}-\u{E007F}]+/gu;

function tags(raw: string): Decoded[] {
  const out: Decoded[] = [];
  for (const m of raw.matchAll(TAG_RUN)) {
    if (out.length >= MAX_RUNS) break;
    let run = '';
    for (const ch of m[0].slice(0, MAX_DECODED * 2)) {
      const c = ch.codePointAt(0)! - 0xe0000;
      if (c >= 0x20 && c < 0x7f) run += String.fromCharCode(c);
    }
    if (run.length >= 4) out.push({ before: '', run, after: '' });
  }
  return out;
}

/**
 * Escapes decoded in place: each run of escapes (gaps ≤ 24 characters) with up to `CONTEXT`
 * characters around it, all decoded, so "&#105;gnore all previous instructions" reads whole.
 */
function inPlace(s: string, run: RegExp, decode: (t: string, inRun: boolean) => string): Decoded[] {
  const out: Decoded[] = [];
  for (const m of s.matchAll(run)) {
    if (out.length >= MAX_RUNS) break;
    const start = m.index;
    const end = start + Math.min(m[0].length, MAX_DECODED * 3);
    out.push({
      before: decode(s.slice(Math.max(0, start - CONTEXT), start), false),
      run: decode(s.slice(start, end), true).slice(0, MAX_DECODED),
      after: decode(s.slice(end, end + CONTEXT), false),
    });
  }
  return out;
}

const PERCENT_RUN = /%[0-9A-Fa-f]{2}(?:[^%\n]{0,24}%[0-9A-Fa-f]{2})*/g;
const percentDecode = (t: string, inRun: boolean) =>
  (inRun ? t.replace(/\+/g, ' ') : t).replace(/(?:%[0-9A-Fa-f]{2})+/g, (esc) => UTF8.decode(Buffer.from(esc.replace(/%/g, ''), 'hex')));

const ENTITY_RUN = /&#(?:[xX][0-9A-Fa-f]{1,6}|[0-9]{1,7});?(?:[^&\n]{0,24}&#(?:[xX][0-9A-Fa-f]{1,6}|[0-9]{1,7});?)*/g;
/** HTML character references decoded by the `entities` library (numeric ones, with or without `;`). */
const entityDecode = (t: string) => decodeHTML(t);

/**
 * Each encoding's label (hits are named `… (<label>)`) and decoder, in the order they are tried: of
 * `base` (invisible characters removed, NFKC, original case) or, for tags, of the `raw` input.
 */
export const ENCODINGS: [label: string, decode: (base: string, raw: string) => Decoded[]][] = [
  ['base64', (base) => base64(base)],
  ['hex', (base) => hex(base)],
  ['url-encoded', (base) => inPlace(base, PERCENT_RUN, percentDecode)],
  ['html entities', (base) => inPlace(base, ENTITY_RUN, entityDecode)],
  ['unicode tags', (_, raw) => tags(raw)],
];
