/**
 * Spotting likely prompt injection in a learner's artifact, so the verdict can flag it for a
 * person to look at. The artifact is always sent as data (grader.ts); this only says whether it
 * *tries* to instruct the grader. Two signals are combined in the verdict:
 * - `heuristic`: phrases aimed at a grader or a language model (below), matched on the artifact
 *   section as sent, case-insensitively, across whitespace;
 * - `model`: the model's own `injection_suspected` answer (the schema asks for it).
 * False positives are cheap (a flag, not a grade change); the phrases are kept specific.
 */

const PATTERNS: [name: string, re: RegExp][] = [
  ['ignore instructions', /\b(ignore|disregard|forget|override|bypass)\s+(all\s+|any\s+|the\s+|your\s+|previous\s+|prior\s+|above\s+|earlier\s+|these\s+|those\s+)*(instructions?|rules?|rubric|criteria|prompt|guidelines|system\s+prompt|spec(ification)?)\b/i],
  ['asks for a grade', /\b(give|award|grant|assign|mark|score|rate)\s+(me\s+|it\s+|(this|my|the)(\s+\w+)?\s+)?(a\s+|an\s+)?(pass(ing)?|full\s+marks?|100(\s*(%|\/\s*100|points?))?|perfect\s+score|top\s+marks?|maximum)\b/i],
  ['asks to pass', /\b(pass|approve|accept)\s+(me|this\s+(work|submission|artifact))\b/i],
  ['claims every criterion is met', /\b(all|every)\s+(the\s+)?(criteria|criterion|requirements?)\s+(are|is|have\s+been)\s+(met|fulfill?ed|satisfied)\b/i],
  ['speaks to the model', /\b(you\s+are\s+(now\s+)?(a|an|the)\s+\w+|as\s+an?\s+(ai|language\s+model|llm|grader)|dear\s+(grader|ai|assistant|model)|(note|message)\s+(to|for)\s+the\s+(grader|ai|model|assistant))\b/i],
  ['fake role marker', /(^|\n)\s*(system|assistant|developer)\s*:|<\|?(system|im_start|im_end|endoftext)\|?>|\[\/?(INST|SYS)\]/i],
  ['fake answer', /"(met|score|passed)"\s*:\s*(true|100)\b/i],
];

/** The names of the patterns `text` matches (empty when none). */
export function injectionSignals(text: string): string[] {
  return PATTERNS.filter(([, re]) => re.test(text)).map(([name]) => name);
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
