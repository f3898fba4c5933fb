/**
 * Compiling and running the prompt-injection rules. The pattern data (patterns/*.ts) registers
 * through `add` and `addLanguage`; `findSignals` matches every rule on the copies of the text
 * (normalise.ts), the ROT13 copy and the decoded runs (decoders.ts).
 *
 * Every regular expression is linear or bounded: no nested quantifiers over overlapping classes,
 * repetition of word groups is capped ({0,3}, {0,6}), and runs of one class are anchored with
 * look-behinds so a failed match is not retried inside the run. A 1 MB input is checked in well
 * under a second.
 */
import { type Decoded, ENCODINGS, rot13 } from './decoders.ts';
import { basic, copies, fold } from './normalise.ts';

/** `latin`: matched on the folded copy (English, French, …); `other`: on the unfolded one. */
export type Script = 'latin' | 'other';

/**
 * One pattern. Checks that would sit in a look-behind at the start of the pattern are done in
 * code on the (at most 40) characters before a match instead: a leading look-behind stops the
 * regex engine from scanning for the first character quickly, and one that can span whitespace
 * is retried across a long run of spaces at every position.
 */
interface Rule {
  name: string;
  /** Flags `gu`; matched on lower-cased text. */
  re: RegExp;
  script: Script;
  /** English: also matched on the ROT13 copy. */
  en: boolean;
  /** The match must start a word. */
  wordStart: boolean;
  /** The text just before the match must not match this (a negation or a subject). */
  notAfter?: RegExp;
  /** The text just before the match must match this (the start of a sentence, "you", "please" …). */
  after?: RegExp;
}

const RULES: Rule[] = [];

/** A non-capturing group of the alternatives. */
export const alt = (...xs: string[]) => `(?:${xs.join('|')})`;
/** Start and end of a word (Unicode-aware; `\b` is ASCII-only). */
export const L0 = '(?<![\\p{L}\\p{N}_])';
export const L1 = '(?![\\p{L}\\p{N}_])';
export const WORD = '[\\p{L}\\p{N}_-]+';

/** Not after a negation or a subject ("don't forget the rubric", "you can ignore rules per file"). */
export const EN_NOT = '(?<!NOT)'; // a marker: `add` turns it into the check below
const EN_NOT_BEFORE =
  /(?:^|[^\p{L}\p{N}_'])(?:don't|dont|do\s{1,3}not|never|not|cannot|can't|shouldn't|should\s{1,3}not|won't|didn't|did\s{1,3}not|mustn't|must\s{1,3}not|doesn't|does\s{1,3}not|i|we|you|they|he|she|it|who|that|which|if|students?|users?)\s{1,3}$/u;

/** Patterns for one name; a leading `EN_NOT` or `L0` becomes a check in code (see `Rule`). */
export function add(name: string, script: Script, en: boolean, ...sources: (string | { src: string; after: RegExp })[]): void {
  for (const source of sources) {
    let src = typeof source === 'string' ? source : source.src;
    const notAfter = src.startsWith(EN_NOT) ? EN_NOT_BEFORE : undefined;
    if (notAfter) src = src.slice(EN_NOT.length);
    const wordStart = src.startsWith(L0);
    if (wordStart) src = src.slice(L0.length);
    RULES.push({ name, script, en, re: new RegExp(src, 'gu'), wordStart, notAfter, after: typeof source === 'string' ? undefined : source.after });
  }
}

/**
 * "ignore the instructions" for one language: VERB DET* then a grading word (rubric, grading
 * criteria), or a generic word (instructions, rules) that is addressed — a previous-like adjective
 * before it (`prev`), an after-word (`post`: "above", "précédentes"), or an addressing determiner
 * (`addr`: "all", "your"). `det` and `addr` include their trailing space.
 */
export function ignoreSources(l: IgnoreWords & { verb: string }): string[] {
  const dets = (n: number) => `(?:${l.det}){0,${n}}`;
  const objects = [`(?:${l.prev}\\s+)?${l.grade}`, `${l.prev}\\s+${l.generic}`];
  if (l.post) objects.push(`${l.generic}\\s+${l.post}`);
  return [`${l.verb}\\s+${dets(3)}${alt(...objects)}${L1}`, `${l.verb}\\s+${dets(2)}${l.addr}${dets(2)}(?:${l.prev}\\s+)?${l.generic}${L1}`];
}

/** The words of "ignore the instructions" in one language but its verbs (see `ignoreSources`). */
export interface IgnoreWords {
  det: string;
  addr: string;
  prev: string;
  grade: string;
  generic: string;
  post?: string;
}

/**
 * One language's patterns for the core requests, each list added under the name it stands for:
 * `ignore` → "ignore instructions" (`ignoreSources` of these words; each verb starts a word) and
 * `ignoreMore` (other word orders), `grade` → "asks for a grade", `pass` → "asks to pass",
 * `model` → "speaks to the model", `systemPrompt` → "mentions the system prompt".
 */
export interface Language {
  ignore: IgnoreWords & { verbs: string[] };
  ignoreMore?: string[];
  grade: string[];
  pass?: string[];
  model: string[];
  systemPrompt: string[];
}

/** Add the patterns of a language other than English (they are not matched on the ROT13 copy), in the order of `Language`. */
export function addLanguage(script: Script, l: Language): void {
  const { verbs, ...words } = l.ignore;
  add('ignore instructions', script, false, ...ignoreSources({ ...words, verb: L0 + alt(...verbs) }), ...(l.ignoreMore ?? []));
  add('asks for a grade', script, false, ...l.grade);
  if (l.pass) add('asks to pass', script, false, ...l.pass);
  add('speaks to the model', script, false, ...l.model);
  add('mentions the system prompt', script, false, ...l.systemPrompt);
}

/**
 * Space-free versions of the main English phrases, for letter-spaced text with no word gaps
 * ("i g n o r e a l l p r e v i o u s …" joins to "ignoreallprevious…").
 */
const COMPACT: [name: string, re: RegExp][] = [
  [
    'ignore instructions',
    /(?:ignore|disregard|forget|override|bypass|nevermind)(?:all|any|the|your|my|of|previous|prior|above|earlier|system|grading|these|those){0,4}(?:instructions?|rules|rubric|criteria|prompt|guidelines|guidance|directions)/i,
  ],
  [
    'asks for a grade',
    /(?:give|award|grant)(?:me|it|this|thiswork|mywork)?(?:an?)?(?:fullmarks?|fullcredit|100(?:%|percent|points)|perfectscore|topmarks|pass(?:inggrade)?)/i,
  ],
  ['asks to pass', /(?:pass|approve|accept)(?:me|thiswork|thissubmission|myassignment|mywork)/i],
  ['speaks to the model', /youarenow(?:an?|the)?(?:grader|ai|assistant|model)|notetothegrader|deargrader/i],
  ['new instructions', /newinstructions|fromnowonyou/i],
  ['mentions the system prompt', /(?:your|reveal|print|show)(?:the)?systemprompt/i],
];

/** Text to match, and the part [from, to) a match must touch (all of it unless decoded in place). */
interface View {
  text: string;
  from: number;
  to: number;
}

const WORD_CHAR = /[\p{L}\p{N}_]/u;
const BEFORE = 40; // characters before a match that the checks in code look at

/** Whether the match at `i` passes the rule's checks in code. */
function accepted(rule: Rule, text: string, i: number): boolean {
  if (rule.wordStart && i > 0) {
    const prev = text.charCodeAt(i - 1);
    const ch = prev >= 0xdc00 && prev <= 0xdfff && i > 1 ? text.slice(i - 2, i) : text[i - 1]!;
    if (WORD_CHAR.test(ch)) return false;
  }
  if (!rule.notAfter && !rule.after) return true;
  const before = text.slice(Math.max(0, i - BEFORE), i);
  return !rule.notAfter?.test(before) && (!rule.after || rule.after.test(before));
}

/** Whether `rule` matches `v` (touching [from, to)). */
function matches(rule: Rule, v: View): boolean {
  const re = rule.re;
  re.lastIndex = 0;
  for (let m = re.exec(v.text); m; m = re.exec(v.text)) {
    if (m.index >= v.to) return false;
    if (m.index + m[0].length > v.from && accepted(rule, v.text, m.index)) return true;
    re.lastIndex = m.index + 1;
  }
  return false;
}

const whole = (text: string): View => ({ text, from: 0, to: text.length });

/** The plain (for `other` rules) and folded (for `latin` rules) views of a decoded run. */
function views(d: Decoded): { other: View; latin: View } {
  const [a, b, c] = [basic(d.before), basic(d.run), basic(d.after)];
  const [fa, fb, fc] = [fold(a), fold(b), fold(c)];
  return {
    other: { text: a + b + c, from: a.length, to: a.length + b.length },
    latin: { text: fa + fb + fc, from: fa.length, to: fa.length + fb.length },
  };
}

/**
 * The search behind `injectionSignals` (index.ts): every rule on its copy of `text` (folded for
 * `latin`, plain for `other`), `COMPACT` on the letter-spaced runs, English rules on the ROT13
 * copy (named `… (rot13)`), then every rule on each encoding's decoded runs (named `… (<label>)`).
 * Returns the names in that order, each once.
 */
export function findSignals(text: string): string[] {
  const found = new Set<string>();
  const { raw, plain: plainText, folded: foldedText, runs } = copies(text);
  const plain = whole(plainText);
  const folded = whole(foldedText);

  for (const rule of RULES) {
    if (!found.has(rule.name) && matches(rule, rule.script === 'latin' ? folded : plain)) found.add(rule.name);
  }
  if (runs.length > 0) {
    const compact = runs.join('\n');
    for (const [name, re] of COMPACT) if (!found.has(name) && re.test(compact)) found.add(name);
  }

  const rotated = whole(rot13(folded.text));
  for (const rule of RULES) {
    const name = `${rule.name} (rot13)`;
    if (rule.en && !found.has(name) && matches(rule, rotated)) found.add(name);
  }

  for (const [label, decode] of ENCODINGS) {
    const decoded = decode(raw, text).map(views);
    if (decoded.length === 0) continue;
    for (const rule of RULES) {
      const name = `${rule.name} (${label})`;
      if (!found.has(name) && decoded.some((v) => matches(rule, rule.script === 'latin' ? v.latin : v.other))) found.add(name);
    }
  }
  return [...found];
}
