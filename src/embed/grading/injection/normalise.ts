/**
 * Normalisation before matching, and the copies of the text the patterns run on.
 *
 * Zero-width, bidi-control, variation-selector and Unicode tag characters are removed and the text
 * is NFKC-normalised (full-width and mathematical letters become ASCII) and lower-cased. Latin-script
 * patterns then run on a folded copy: combining marks stripped (so accents and "z̶a̶l̶g̶o̶" do not
 * matter, and the French/Spanish/… patterns are written without accents), Cyrillic/Greek/Armenian
 * look-alikes mapped to Latin letters, curly quotes and dashes made ASCII, and letter-spaced words
 * ("i g n o r e", "i.g.n.o.r.e") joined; the joined runs of ≥ 8 letters (at most 50, each cut to
 * 1,000 characters) are kept for the space-free `COMPACT` patterns (matcher.ts). Russian, Chinese
 * and Japanese patterns run on the unfolded copy.
 */

const UTF16 = new TextDecoder('utf-16le');

/**
 * Zero-width and bidi controls, soft hyphen, word joiners/invisible operators, BOM and variation
 * selectors (BMP, flagged here), plus Unicode tag characters U+E0000–E007F and variation
 * selectors U+E0100–E01EF (surrogate pairs \uDB40\uDC00–\uDC7F and \uDB40\uDD00–\uDDEF).
 */
const INVISIBLE = new Uint8Array(0x10000);
for (const [from, to] of [
  [0xad, 0xad],
  [0x34f, 0x34f],
  [0x180e, 0x180e],
  [0x200b, 0x200f],
  [0x202a, 0x202e],
  [0x2060, 0x2064],
  [0x2066, 0x2069],
  [0xfe00, 0xfe0f],
  [0xfeff, 0xfeff],
] as const) {
  INVISIBLE.fill(1, from, to + 1);
}

/** `s` without the invisible characters. */
function stripInvisible(s: string): string {
  const out = new Uint16Array(s.length);
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (INVISIBLE[c]) continue;
    if (c === 0xdb40 && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if ((d >= 0xdc00 && d <= 0xdc7f) || (d >= 0xdd00 && d <= 0xddef)) {
        i++;
        continue;
      }
    }
    out[n++] = c;
  }
  return n === s.length ? s : UTF16.decode(out.subarray(0, n));
}

/** Cyrillic, Greek and Armenian letters that look like Latin ones; curly quotes, dashes (lower case: the text is lower-cased first). */
const LOOKALIKE = new Uint16Array(0x10000).map((_, c) => c);
for (const pair of (
  'аa вb еe ёe кk мm нh оo рp сc тt уy хx іi їi јj ѕs ԁd ԛq ԝw һh ӏl ' +
  'αa βb εe ιi κk νv οo ρp τt υu χx γy ηn ωw ζz ' +
  "օo սu ոn ɑa ɡg ıi ȷj ‘' ’' ‛' ʼ' ′' ´' `' “\" ”\" „\" ‐- ‑- ‒- –- —- ―- −-"
).split(' ')) {
  LOOKALIKE[pair.charCodeAt(0)] = pair.charCodeAt(1);
}
/** `s` with each UTF-16 code unit mapped through `table`. */
export function mapUnits(s: string, table: Uint16Array): string {
  const out = new Uint16Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = table[s.charCodeAt(i)]!;
  return UTF16.decode(out);
}

/** Single letters separated by one separator, at least two: "i g n o r e", "i.g.n.o.r.e". */
const SPACED = /(?<![\p{L}\p{N}])\p{L}(?:[ .\-_*·•]\p{L})+(?![\p{L}\p{N}])/gu;
const SEPARATORS = /[ .\-_*·•]/g;

/** Remove invisible characters, NFKC-normalise and lower-case. */
export function basic(s: string): string {
  return stripInvisible(s).normalize('NFKC').toLowerCase();
}

const MAX_RUNS = 50; // letter-spaced runs kept for COMPACT
const MAX_COMPACT = 1_000; // characters of one letter-spaced run for COMPACT

/**
 * The copy Latin-script patterns run on: combining marks stripped, look-alikes mapped to Latin,
 * letter-spaced words joined. `runs` collects joined runs of ≥ 8 letters (for `COMPACT`).
 */
export function fold(s: string, runs?: string[]): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: \x00-\x7f is the ASCII range; the test asks for any character outside it
  const stripped = /[^\x00-\x7f]/.test(s) ? mapUnits(s.normalize('NFD').replace(/\p{M}+/gu, ''), LOOKALIKE) : s;
  return stripped.replace(SPACED, (m) => {
    const joined = m.replace(SEPARATORS, '');
    if (runs && joined.length >= 8 && runs.length < MAX_RUNS) runs.push(joined.slice(0, MAX_COMPACT));
    return joined;
  });
}

/** The copies of an artifact the patterns run on (see the module's docstring). */
export interface Copies {
  /** Invisible characters removed, NFKC-normalised, original case (for the decoders). */
  raw: string;
  /** `raw` lower-cased (for `other` rules). */
  plain: string;
  /** `plain` folded (for `latin` rules). */
  folded: string;
  /** The letter-spaced runs joined while folding (for `COMPACT`). */
  runs: string[];
}

/** The copies of `text` to match on. */
export function copies(text: string): Copies {
  const raw = stripInvisible(text).normalize('NFKC'); // decoders need the original case
  const plain = raw.toLowerCase();
  const runs: string[] = [];
  const folded = fold(plain, runs);
  return { raw, plain, folded, runs };
}
