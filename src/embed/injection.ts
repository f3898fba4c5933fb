/**
 * Spotting likely prompt injection in a learner's artifact, so that a pass can be held for a
 * person to review (verdict.ts `hold`, review.ts). The artifact is always sent as data between
 * random delimiters (grader.ts); this only says whether it *tries* to instruct the grader. Two
 * signals are combined in the verdict:
 * - `heuristic`: the patterns below, matched on the artifact section as sent;
 * - `model`: the model's own `injection_suspected` answer (the schema asks for it).
 *
 * What the heuristic sees (issue #10 "the common variants"):
 * 1. The text normalised: Unicode NFKC (full-width and styled letters → plain), invisible and
 *    bidi-control characters removed (U+200B–U+200F, U+202A–U+202E, U+2060–U+2064, U+FEFF, soft
 *    hyphen), Cyrillic and Greek letters that look Latin folded to Latin, and letter-spaced words
 *    ("i g n o r e", "i.g.n.o.r.e") joined.
 * 2. Encoded runs decoded and matched too, each signal naming its encoding: base64 / base64url
 *    (runs of ≥ 16 characters that decode to mostly printable UTF-8), hex (≥ 16 digits), percent
 *    encoding, HTML character references (the `entities` library), and ROT13 of the whole text.
 * 3. Patterns in English — direct phrases and common paraphrases — and in French, Spanish,
 *    German, Portuguese, Italian, Dutch, Russian, Chinese and Japanese, for: ignoring the
 *    instructions or rubric, asking for a grade or a pass, addressing or re-roling the model,
 *    claiming every criterion is met, fake role markers and fake answers.
 * Each pattern pairs an instruction-like verb with a grading object, so ordinary coursework
 * ("Ignore node_modules in .gitignore", "les instructions d'installation") does not fire. False
 * positives cost a review, not a grade.
 *
 * Bounds: the input is cut to `MAX_SCAN_CHARS`, at most `MAX_DECODED_RUNS` runs are decoded,
 * each to at most `MAX_DECODED_CHARS`; every pattern is linear (no nested quantifiers over
 * overlapping classes), so a megabyte of adversarial text is scanned in milliseconds.
 */
import { decodeHTML } from 'entities';

/** Most characters scanned (the artifact section is bounded by SVC_JUDGE_INPUT_BYTES anyway). */
const MAX_SCAN_CHARS = 1_000_000;
const MAX_DECODED_RUNS = 50;
const MAX_DECODED_CHARS = 8192;

const W = String.raw`[\s\p{P}]{0,3}`; // a gap between words: spaces and punctuation, bounded
const B = String.raw`(?<![\p{L}\p{N}])`; // a word's start, for any script (\b knows ASCII only)
const E = String.raw`(?![\p{L}\p{N}])`; // a word's end
const any = (words: string[]) => `(?:${words.join('|')})`;

// The objects a grader is told about.
const EN_RULES = any(['instructions?', 'rules?', 'rubrics?', 'criteria', 'criterion', 'prompts?', 'guidelines?', 'guidance', 'directions?', 'directives?', 'system\\s+prompt', 'grading\\s+(?:criteria|rules|scheme|guide)', 'marking\\s+(?:criteria|scheme|rules)', 'spec(?:ification)?s?']);
const EN_PRIOR = `(?:(?:all|any|the|your|previous|prior|above|earlier|preceding|these|those|original|given|existing|grading|marking|evaluation)${W})*`;

/** [signal name, pattern] — names are stable: they are stored in verdicts. */
const PATTERNS: [name: string, re: RegExp][] = [
  // English, direct and paraphrased.
  ['ignore instructions', new RegExp(String.raw`\b(?:ignore|disregard|forget|override|bypass|skip|drop|discard|set${W}aside|pay${W}no${W}(?:attention|heed)${W}to|never${W}mind|do${W}not${W}(?:follow|apply|use)|don'?t${W}(?:follow|apply|use))${W}${EN_PRIOR}${EN_RULES}\b`, 'iu')],
  ['ignore instructions', new RegExp(String.raw`\b(?:the${W})?(?:above|previous|prior|earlier|original|old)${W}${EN_RULES}${W}(?:no${W}longer${W}appl(?:y|ies)|(?:are|is)${W}(?:void|cancell?ed|obsolete|revoked|superseded))`, 'iu')],
  ['new instructions', new RegExp(String.raw`(?:^|\n)\s*(?:new|updated|real|actual|secret|hidden)${W}(?:instructions?|rules?|task|prompt)${W}:|\bfrom${W}now${W}on,?${W}(?:you|the${W}(?:grader|model|ai|assistant))${W}(?:will|must|should|shall|are)\b`, 'iu')],
  ['asks for a grade', new RegExp(String.raw`\b(?:give|award|grant|assign|mark|score|rate|grade|output|return|respond${W}with|answer${W}with)${W}(?:me${W}|it${W}|this(?:${W}\w+)?${W}|my(?:${W}\w+)?${W}|the(?:${W}\w+)?${W}|a${W}score${W}of${W}|as${W})?(?:a${W}|an${W})?(?:pass(?:ing)?|full${W}(?:marks?|credit|points?|score)|100(?:${W}(?:%|/${W}100|points?|percent))?|perfect${W}(?:score|marks?)|top${W}marks?|maximum(?:${W}(?:score|marks?|points?))?|excellent|an?${W}A\+?)(?!\w)`, 'iu')],
  ['asks for a grade', new RegExp(String.raw`\b(?:this|my)${W}(?:work|submission|artifact|answer|essay|project|assignment)${W}(?:deserves|merits|earns|should${W}(?:get|receive|be${W}given))${W}(?:a${W}|an${W})?(?:pass|full${W}(?:marks?|credit|points?)|100|perfect|top${W}marks?|an?${W}A\b)`, 'iu')],
  ['asks for a grade', new RegExp(String.raw`\b(?:teacher|instructor|professor|author|admin(?:istrator)?)${W}(?:said|says|told${W}(?:you|me)|wants${W}you|asked${W}you)${W}(?:to${W})?(?:give|pass|award|grade)\b`, 'iu')],
  ['asks for a grade', new RegExp(String.raw`\brespond${W}only${W}with${W}["'“]?(?:pass(?:ed)?|true|100)\b`, 'iu')],
  ['asks to pass', new RegExp(String.raw`\b(?:pass|approve|accept)${W}(?:me|this${W}(?:work|submission|artifact|assignment))\b`, 'iu')],
  ['claims every criterion is met', new RegExp(String.raw`\b(?:all|every)${W}(?:the${W})?(?:criteria|criterion|requirements?)${W}(?:are|is|have${W}been)${W}(?:met|fulfill?ed|satisfied)\b`, 'iu')],
  ['speaks to the model', new RegExp(String.raw`\b(?:you${W}are${W}(?:now${W})?(?:a|an|the)${W}\w+|as${W}an?${W}(?:ai|language${W}model|llm|grader)|dear${W}(?:grader|ai|assistant|model|evaluator)|(?:note|message|instructions?)${W}(?:to|for)${W}the${W}(?:grader|ai|model|assistant|evaluator|llm))\b`, 'iu')],
  ['re-roles the model', new RegExp(String.raw`\b(?:act${W}as|pretend${W}(?:to${W}be|you${W}are)|role-?play${W}as|you${W}must${W}now${W}be|switch${W}to)${W}(?:a|an|the)?${W}?(?:different|new|lenient|generous|helpful|unrestricted|jailbroken|dan|developer|admin|teacher|grader|evaluator|ai)\b`, 'iu')],
  ['fake role marker', /(?:^|\n)\s*(?:system|assistant|developer)\s*:|<\|?(?:system|im_start|im_end|endoftext)\|?>|\[\/?(?:INST|SYS)\]/iu],
  ['fake answer', /"(?:met|score|passed|injection_suspected)"\s*:\s*(?:true|100|false)\b/iu],

  // French.
  ['ignore instructions (fr)', new RegExp(String.raw`${B}(?:ignore[zr]?|oublie[zr]?|ne${W}tiens${W}pas${W}compte${W}(?:de|des)|ne${W}tenez${W}pas${W}compte${W}(?:de|des))${W}(?:toutes${W}|tous${W})?(?:les${W}|la${W}|le${W}|vos${W}|tes${W})?(?:instructions|consignes|règles|regles|critères|criteres|grille)${W}(?:précédentes|precedentes|ci-dessus|antérieures|d'évaluation|de${W}notation)?`, 'iu')],
  ['asks for a grade (fr)', new RegExp(String.raw`${B}(?:donne[zr]?|attribue[zr]?|mets|mettez)${W}(?:moi${W}|-moi${W}|à${W}ce${W}travail${W})?(?:la${W}note${W}maximale|20${W}/${W}20|100${W}/${W}100|la${W}note${W}parfaite|toutes${W}les${W}notes|tous${W}les${W}points)`, 'iu')],
  ['speaks to the model (fr)', new RegExp(String.raw`${B}(?:tu${W}es${W}maintenant|vous${W}êtes${W}maintenant|en${W}tant${W}qu'(?:ia|assistant|correcteur)|note${W}(?:au|pour${W}le)${W}correcteur)${E}`, 'iu')],
  // Spanish.
  ['ignore instructions (es)', new RegExp(String.raw`${B}(?:ignora|ignore|ignoren|olvida|olvide|olviden|omite|descarta)${W}(?:todas${W}|todos${W})?(?:las${W}|los${W}|tus${W}|sus${W})?(?:instrucciones|reglas|criterios|rúbrica|rubrica|indicaciones)`, 'iu')],
  ['asks for a grade (es)', new RegExp(String.raw`${B}(?:dame|da(?:le)?|asigna|pon(?:me)?|otorga)${W}(?:a${W}este${W}trabajo${W})?(?:la${W}(?:máxima|maxima)${W}(?:nota|calificación|calificacion|puntuación|puntuacion)|(?:la${W})?nota${W}(?:máxima|maxima|perfecta)|(?:un${W})?10${W}/${W}10|100${W}puntos|todos${W}los${W}puntos|aprobado)`, 'iu')],
  ['speaks to the model (es)', new RegExp(String.raw`${B}(?:ahora${W}eres|eres${W}ahora|como${W}(?:ia|asistente|evaluador)|nota${W}para${W}el${W}(?:evaluador|corrector))${E}`, 'iu')],
  // German.
  ['ignore instructions (de)', new RegExp(String.raw`${B}(?:ignorier(?:e|en|t)?|vergiss|vergessen${W}sie|missachte|übergehe)${W}(?:alle${W}|die${W}|deine${W}|ihre${W})?(?:vorherigen${W}|bisherigen${W}|obigen${W}|vorigen${W})?(?:anweisungen|anleitungen|regeln|bewertungskriterien|kriterien|vorgaben|bewertungsrichtlinien)${E}`, 'iu')],
  ['asks for a grade (de)', new RegExp(String.raw`${B}(?:gib|geben${W}sie|vergib|vergeben${W}sie|erteile)${W}(?:mir${W}|dieser${W}arbeit${W})?(?:die${W})?(?:volle${W}punktzahl|bestnote|note${W}1|eine${W}1|100${W}punkte|alle${W}punkte|höchstpunktzahl)`, 'iu')],
  ['speaks to the model (de)', new RegExp(String.raw`${B}(?:du${W}bist${W}(?:jetzt|nun)|sie${W}sind${W}(?:jetzt|nun)|als${W}(?:ki|sprachmodell|bewerter)|hinweis${W}(?:an${W}den|für${W}den)${W}(?:bewerter|prüfer|korrektor))${E}`, 'iu')],
  // Portuguese.
  ['ignore instructions (pt)', new RegExp(String.raw`${B}(?:ignore|ignora|esqueça|esqueca|desconsidere)${W}(?:todas${W})?(?:as${W}|os${W}|suas${W})?(?:instruções|instrucoes|regras|critérios|criterios|rubrica)`, 'iu')],
  ['asks for a grade (pt)', new RegExp(String.raw`${B}(?:dê|de|dá|atribua)${W}(?:-me${W}|me${W}|a${W}este${W}trabalho${W})?(?:a${W})?(?:nota${W}(?:máxima|maxima|dez)|10${W}/${W}10|pontuação${W}máxima|pontuacao${W}maxima|aprovação)`, 'iu')],
  // Italian.
  ['ignore instructions (it)', new RegExp(String.raw`${B}(?:ignora|ignorate|dimentica|dimenticate|trascura)${W}(?:tutte${W})?(?:le${W}|i${W})?(?:istruzioni|regole|criteri|rubrica)(?:${W}precedenti)?`, 'iu')],
  ['asks for a grade (it)', new RegExp(String.raw`${B}(?:dammi|dai|assegna|metti)${W}(?:a${W}questo${W}lavoro${W})?(?:il${W})?(?:voto${W}(?:massimo|pieno)|punteggio${W}(?:massimo|pieno)|30${W}e${W}lode|10${W}/${W}10|trenta)`, 'iu')],
  // Dutch.
  ['ignore instructions (nl)', new RegExp(String.raw`${B}(?:negeer|vergeet)${W}(?:alle${W})?(?:de${W}|je${W}|uw${W})?(?:vorige${W}|eerdere${W})?(?:instructies|regels|criteria|beoordelingscriteria|rubric)`, 'iu')],
  ['asks for a grade (nl)', new RegExp(String.raw`${B}(?:geef|ken)${W}(?:mij${W}|dit${W}werk${W})?(?:het${W}|een${W})?(?:maximale${W}(?:score|cijfer)|volle${W}punten|een${W}10|10${W}/${W}10)`, 'iu')],
  // Russian.
  ['ignore instructions (ru)', new RegExp(String.raw`(?:игнорируй|игнорируйте|забудь|забудьте|не${W}обращай${W}внимания${W}на|проигнорируй)${W}(?:все${W})?(?:предыдущие${W}|прежние${W}|эти${W})?(?:инструкции|указания|правила|критерии|рубрику)`, 'iu')],
  ['asks for a grade (ru)', new RegExp(String.raw`(?:поставь|поставьте|дай|дайте)${W}(?:мне${W}|этой${W}работе${W})?(?:высший${W}балл|максимальн\p{L}*${W}балл|пятёрку|пятерку|отлично|100${W}баллов)`, 'iu')],
  ['speaks to the model (ru)', new RegExp(String.raw`(?:теперь${W}ты|ты${W}теперь|как${W}(?:ии|языковая${W}модель)|примечание${W}для${W}проверяющего)`, 'iu')],
  // Chinese (simplified) and Japanese: no word boundaries; phrases are specific enough.
  ['ignore instructions (zh)', /(?:忽略|无视|忘记|忘掉|不要理会|跳过)(?:所有|全部|之前|以上|上面|先前|前面)?(?:的)?(?:所有|全部)?(?:指令|指示|说明|规则|评分标准|标准|提示)/u],
  ['asks for a grade (zh)', /(?:给|打|评)(?:我|这份作业|这个作业|本作业)?(?:满分|最高分|一百分|100分|优秀|及格)/u],
  ['speaks to the model (zh)', /(?:你现在是|你是一个|作为(?:一个)?(?:AI|人工智能|语言模型|评分员)|致评分员|给评分员的)/iu],
  ['ignore instructions (ja)', /(?:これまでの|以前の|上記の|前の|全ての|すべての)?(?:指示|命令|ルール|採点基準|基準|指令)(?:を|は)(?:無視|忘れ)/u],
  ['asks for a grade (ja)', /(?:満点|最高点|100点|合格)(?:を|に)(?:ください|つけて|与えて|して)/u],
  ['speaks to the model (ja)', /(?:あなたは今|今からあなたは|AIとして|採点者へ|採点者の方へ)/iu],
];

// Invisible and bidi-control characters, and the soft hyphen.
const INVISIBLE = /[\u00ad\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufeff]/gu;

// Cyrillic and Greek letters that look like Latin ones.
const HOMOGLYPHS: Record<string, string> = {
  а: 'a', в: 'b', е: 'e', ё: 'e', к: 'k', м: 'm', н: 'h', о: 'o', р: 'p', с: 'c', т: 't', у: 'y', х: 'x', і: 'i', ї: 'i', ј: 'j', ѕ: 's', ԁ: 'd', ԛ: 'q', ԝ: 'w', һ: 'h',
  А: 'A', В: 'B', Е: 'E', К: 'K', М: 'M', Н: 'H', О: 'O', Р: 'P', С: 'C', Т: 'T', У: 'Y', Х: 'X', І: 'I', Ј: 'J', Ѕ: 'S',
  α: 'a', β: 'b', ε: 'e', ι: 'i', κ: 'k', ν: 'v', ο: 'o', ρ: 'p', τ: 't', υ: 'u', χ: 'x', γ: 'y',
  Α: 'A', Β: 'B', Ε: 'E', Ζ: 'Z', Η: 'H', Ι: 'I', Κ: 'K', Μ: 'M', Ν: 'N', Ο: 'O', Ρ: 'P', Τ: 'T', Υ: 'Y', Χ: 'X',
};
const HOMOGLYPH_RE = new RegExp(`[${Object.keys(HOMOGLYPHS).join('')}]`, 'gu');
const LATIN = /\p{Script=Latin}/u;
const CYRILLIC_OR_GREEK = /[\p{Script=Cyrillic}\p{Script=Greek}]/u;
/** Fold look-alike letters in a word that mixes them with Latin ones (Russian or Greek words stay as they are). */
const foldMixed = (word: string) =>
  LATIN.test(word) && CYRILLIC_OR_GREEK.test(word) ? word.replace(HOMOGLYPH_RE, (c) => HOMOGLYPHS[c] ?? c) : word;

// Single letters separated by one space, dot, dash or underscore, at least five letters: "i g n o r e".
const SPACED = /(?<![\p{L}\p{N}])\p{L}(?:[ ._\-]\p{L}){4,}(?![\p{L}\p{N}])/gu;

/** The text as the patterns see it (header, point 1). */
export function normalise(text: string): string {
  return text
    .normalize('NFKC')
    .replace(INVISIBLE, '')
    .replace(/\p{L}+/gu, foldMixed)
    .replace(SPACED, (run) => run.replace(/[ ._\-]/g, ''));
}

const printable = (s: string) => {
  if (!s.length) return false;
  let ok = 0;
  for (const ch of s) if (/[\p{L}\p{N}\p{P}\p{Zs}\n\t]/u.test(ch)) ok++;
  return ok / [...s].length > 0.85;
};

const rot13 = (s: string) => s.replace(/[a-z]/gi, (c) => String.fromCharCode(((c.toLowerCase().charCodeAt(0) - 97 + 13) % 26) + (c === c.toLowerCase() ? 97 : 65)));

/** Decoded views of the encoded runs in `text`, each named by its encoding (header, point 2). */
function decodedViews(text: string): [encoding: string, text: string][] {
  const views: [string, string][] = [];
  const add = (encoding: string, decoded: string) => {
    if (views.length < MAX_DECODED_RUNS && printable(decoded)) views.push([encoding, decoded.slice(0, MAX_DECODED_CHARS)]);
  };
  for (const m of text.matchAll(/[A-Za-z0-9+/_-]{16,}={0,2}/g)) {
    if (views.length >= MAX_DECODED_RUNS) break;
    const run = m[0].slice(0, (MAX_DECODED_CHARS * 4) / 3);
    if (/^[0-9a-fA-F]+$/.test(run) && run.length % 2 === 0) {
      add('hex', Buffer.from(run, 'hex').toString('utf8'));
      continue;
    }
    if (!/[A-Z]/.test(run) || !/[a-z]/.test(run)) continue; // plain words and identifiers are not base64
    add('base64', Buffer.from(run.replace(/-/g, '+').replace(/_/g, '/'), 'base64').toString('utf8'));
  }
  if (/(?:%[0-9a-fA-F]{2}){3,}/.test(text)) {
    try {
      add('percent-encoded', decodeURIComponent(text.slice(0, MAX_DECODED_CHARS * 3).replace(/%(?![0-9a-fA-F]{2})/g, '%25')));
    } catch {
      // malformed escapes: nothing to decode
    }
  }
  if (/&(?:#\d{2,7}|#x[0-9a-fA-F]{2,6}|[a-zA-Z]{2,31});/.test(text)) add('HTML entities', decodeHTML(text.slice(0, MAX_DECODED_CHARS)));
  add('ROT13', rot13(text.slice(0, MAX_DECODED_CHARS * 8)));
  return views;
}

/** The names of the patterns `text` (or a decoded run of it) matches; empty when none. */
export function injectionSignals(text: string): string[] {
  const plain = normalise(text.slice(0, MAX_SCAN_CHARS));
  const found = new Set(PATTERNS.filter(([, re]) => re.test(plain)).map(([name]) => name));
  for (const [encoding, decoded] of decodedViews(plain)) {
    const view = normalise(decoded);
    for (const [name, re] of PATTERNS) {
      // ROT13 only turns English back into English; other encodings carry any language.
      if (encoding === 'ROT13' && name.includes('(')) continue;
      if (!found.has(name) && re.test(view)) found.add(`${name} (${encoding})`);
    }
  }
  return [...found];
}

/** The verdict's `injection` field. */
export interface InjectionFlag {
  suspected: boolean;
  /** Pattern names (`heuristic: …`) and the model's evidence (`model: …`). */
  signals: string[];
}

/** Combine the heuristic signals with the model's answer. */
export function injectionFlag(heuristic: string[], model: { suspected: boolean; evidence: string } | undefined): InjectionFlag {
  const signals = heuristic.map((s) => `heuristic: ${s}`);
  if (model?.suspected) signals.push(`model: ${model.evidence.slice(0, 300) || 'suspected'}`);
  return { suspected: signals.length > 0, signals };
}
