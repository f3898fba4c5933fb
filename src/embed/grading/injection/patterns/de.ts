/**
 * German prompt-injection patterns for the core requests, with verb-last word orders ("alle
 * vorherigen Anweisungen ignorieren"). Matched on the folded copy (ä → a, ß kept); "Anweisungen"
 * fires only when addressed. Registered through `addLanguage` (../matcher.ts).
 */
import { addLanguage, alt, L0, L1, WORD } from '../matcher.ts';

const DE_PREV = alt(
  'vorherigen?',
  'bisherigen?',
  'obigen?',
  'frue?heren?',
  'vorangegangenen?',
  'vorstehenden?',
  'urspru(?:e)?nglichen?',
  'alten',
  'gegebenen',
  'erhaltenen',
);
const DE_GRADE = alt('bewertungs(?:kriterien|schema|raster|richtlinien|rubrik|vorgaben|regeln)', 'rubrik', 'system[\\s-]?prompts?', 'systemanweisung(?:en)?');
const DE_GENERIC = alt('anweisung(?:en)?', 'instruktion(?:en)?', 'regeln', 'vorgaben', 'befehle', 'richtlinien', 'anordnungen', 'hinweise', 'vorschriften');
const DE_DET = '(?:(?:alle|alles|die|der|den|das|deine|deinen|ihre|ihren|samtliche|jegliche|diese|jede)\\s+)';

const DE_TERM = alt(
  'volle\\s+punkt(?:zahl|e)',
  'ho(?:e)?chst(?:punktzahl|note)',
  'bestnote',
  'note\\s+1(?:[.,]0)?(?![\\d.,])',
  'eine\\s+(?:1(?:[.,]0)?(?![\\d.,])|eins)',
  'ein\\s+sehr\\s+gut',
  '100\\s*(?:%|prozent|punkte|\\/\\s*100)',
  '10\\s*\\/\\s*10',
  'ein\\s+bestanden',
  '(?:die\\s+)?(?:ho(?:e)?chste|beste|maximale)\\s+(?:note|punktzahl|bewertung|punkte)',
  'alle\\s+punkte',
);

addLanguage('latin', {
  ignore: {
    verbs: [
      'ignorier(?:e|en\\s+sie)?',
      'vergiss',
      'vergesst',
      'vergessen\\s+sie',
      'missachte',
      'missachtet',
      'missachten\\s+sie',
      'ubergehe',
      'ubergeht',
      'ubergehen\\s+sie',
      'verwirf',
      'verwerft',
      'verwerfen\\s+sie',
    ],
    det: DE_DET,
    addr: '(?:(?:alle|samtliche|jegliche|deine|deinen|ihre|ihren)\\s+)',
    prev: DE_PREV,
    grade: DE_GRADE,
    generic: DE_GENERIC,
    post: alt('(?:von\\s+)?oben', 'davor'),
  },
  ignoreMore: [
    // verb last: "alle vorherigen Anweisungen ignorieren", "die obigen Regeln gelten nicht mehr"
    `${L0}${DE_DET}{0,2}${DE_PREV}\\s+(?:${DE_GENERIC}|${DE_GRADE})\\s+` +
      alt(
        'ignorieren',
        'vergessen',
        'missachten',
        'verwerfen',
        'nicht\\s+(?:mehr\\s+)?(?:beachten|befolgen)',
        'au(?:ss|ß)er\\s+acht\\s+lassen',
        '(?:sind|gelten\\s+als)\\s+(?:ab\\s+sofort\\s+|nun\\s+|jetzt\\s+|hiermit\\s+)?(?:ungultig|aufgehoben|nichtig|hinfallig|obsolet|au(?:ss|ß)er\\s+kraft)',
        'gelten\\s+nicht\\s+mehr',
      ) +
      L1,
    `${L0}(?:die\\s+)?${DE_GRADE}\\s+(?:ignorieren|vergessen|missachten)${L1}`,
    `${L0}(?:beachte|befolge|beachten\\s+sie|befolgen\\s+sie)\\s+${DE_DET}{0,2}(?:${DE_PREV}\\s+${DE_GENERIC}|${DE_GRADE})\\s+(?:mehr\\s+)?nicht${L1}`,
  ],
  grade: [
    `${L0}(?:gib|gebt|geben\\s+sie|vergib|vergebt|vergeben\\s+sie)\\s+(?:(?:mir|uns|(?:dieser|diesem|meiner|meinem)\\s+${WORD})\\s+)?(?:die\\s+)?${DE_TERM}${L1}`,
    `${L0}(?:bewerte|benote|bewerten\\s+sie|benoten\\s+sie)\\s+(?:mich|das|dies|(?:diese|dieses|diesen|meine|mein|meinen)\\s+${WORD})\\s+(?:mit|als)\\s+` +
      alt(
        'sehr\\s+gut',
        'bestanden',
        '100\\s*(?:%|prozent|punkten)?',
        '(?:einer?\\s+)?(?:1(?:[.,]0)?(?![\\d.,])|eins)',
        '(?:der\\s+)?(?:vollen?|maximalen?|ho(?:e)?chsten?)\\s+punkt(?:zahl|en)',
        '(?:der\\s+)?bestnote',
        'ausgezeichnet',
      ) +
      L1,
  ],
  model: [
    `${L0}(?:(?:du\\s+bist|sie\\s+sind|ihr\\s+seid)\\s+(?:jetzt|nun|ab\\s+sofort|ab\\s+jetzt|von\\s+nun\\s+an|fortan)|(?:jetzt|nun|ab\\s+sofort|ab\\s+jetzt|von\\s+nun\\s+an|fortan)\\s+bist\\s+du)\\s+(?:ein|eine|der|die|das|mein|meine|unser)\\s+(?:[^\\s]+\\s+)?` +
      alt(
        'bewerter(?:in)?',
        'korrektor(?:in)?',
        'prue?fer(?:in)?',
        'lehrer(?:in)?',
        'dozent(?:in)?',
        'tutor(?:in)?',
        'assistent(?:in)?',
        'ki',
        'modell',
        'sprachmodell',
        'chatbot',
        'roboter',
        'bot',
        'gutachter(?:in)?',
        'figur',
        'charakter',
      ) +
      L1,
  ],
  systemPrompt: [
    `${L0}(?:dein(?:en|e|er)?|ihr(?:en|e)?|neu(?:er|e|es|en)?)\\s+system[\\s-]?(?:prompts?|anweisung(?:en)?|nachricht)${L1}`,
    `${L0}system[\\s-]?(?:prompt|anweisung(?:en)?)\\s*:`,
    `${L0}(?:zeige?|gib|verrate|wiederhole|ignoriere|vergiss)\\s+(?:mir\\s+)?(?:den|die|deinen|deine)\\s+system[\\s-]?(?:prompt|anweisung(?:en)?)${L1}`,
  ],
});
