/**
 * Dutch prompt-injection patterns for the core requests, with verb-last word orders. Matched on
 * the folded copy. Registered through `addLanguage` (../matcher.ts).
 */
import { addLanguage, alt, L0, L1, WORD } from '../matcher.ts';

const NL_PREV = alt('vorige', 'eerdere', 'voorgaande', 'bovenstaande', 'oorspronkelijke', 'originele', 'oude', 'gegeven');
const NL_GRADE = alt(
  'beoordelings(?:criteria|schema|rubric|model|richtlijnen)',
  'rubrics?',
  'rubrieken',
  'nakijk(?:model|schema|criteria)',
  'systeem[\\s-]?prompts?',
  'systeeminstructies',
);
const NL_GENERIC = alt('instructies', 'instructie', 'aanwijzingen', 'regels', 'richtlijnen', 'opdrachten', 'voorschriften', 'bevelen', 'orders');

addLanguage('latin', {
  ignore: {
    verbs: ['negeer', 'negeert\\s+u', 'vergeet(?:\\s+u)?', 'let\\s+niet\\s+(?:meer\\s+)?op', 'houd\\s+geen\\s+rekening\\s+(?:meer\\s+)?met'],
    det: '(?:(?:alle|al|de|het|je|jouw|uw|deze|die)\\s+)',
    addr: '(?:(?:alle|al|je|jouw|uw)\\s+)',
    prev: NL_PREV,
    grade: NL_GRADE,
    generic: NL_GENERIC,
    post: alt('hierboven', 'van\\s+(?:het\\s+systeem|de\\s+docent)'),
  },
  ignoreMore: [
    `${L0}(?:(?:alle|al|de|je|jouw|uw)\\s+){0,2}${NL_PREV}\\s+(?:${NL_GENERIC}|${NL_GRADE})\\s+` +
      alt(
        'negeren',
        'vergeten',
        '(?:zijn|worden)\\s+(?:niet\\s+meer\\s+geldig|ongeldig|vervallen|ingetrokken|opgeheven)',
        'gelden\\s+niet\\s+meer',
        'vervallen',
      ) +
      L1,
  ],
  grade: [
    `${L0}(?:geef|geeft\\s+u)\\s+(?:(?:me|mij|ons|(?:dit|deze|mijn)\\s+${WORD})\\s+)?(?:(?:het|de)\\s+)?` +
      alt(
        'maximale?\\s+(?:score|cijfer|punten|puntental)',
        'volle?\\s+(?:punten|score)',
        'alle\\s+punten',
        'hoogste\\s+(?:cijfer|score|punten)',
        'een\\s+(?:10|tien)(?![\\d.,])',
        '10\\s*\\/\\s*10',
        '100\\s*(?:%|\\/\\s*100|punten)',
        'een\\s+voldoende',
        'een\\s+perfecte\\s+score',
      ) +
      L1,
  ],
  pass: [`${L0}(?:keur|laat)\\s+(?:mij|me|(?:dit|mijn)\\s+${WORD})\\s+(?:goed|slagen)${L1}`],
  model: [
    `${L0}(?:(?:je|jij|u)\\s+bent\\s+(?:nu|vanaf\\s+nu|voortaan)|(?:nu|vanaf\\s+nu|voortaan)\\s+ben\\s+(?:je|jij))\\s+(?:een|de|het|mijn)\\s+(?:${WORD}\\s+)?` +
      alt(
        'beoordelaar',
        'corrector',
        'examinator',
        'docent',
        'leraar',
        'lerares',
        'nakijker',
        'assistent',
        'ai',
        'ki',
        'model',
        'taalmodel',
        'chatbot',
        'robot',
        'personage',
      ) +
      L1,
  ],
  systemPrompt: [
    `${L0}(?:je|jouw|uw|nieuwe)\\s+(?:systeem[\\s-]?prompt|systeeminstructies|systeembericht)${L1}`,
    `${L0}(?:systeem[\\s-]?prompt|systeeminstructies)\\s*:`,
    `${L0}(?:toon|herhaal|print|negeer|vergeet)\\s+(?:de|je|jouw|uw)\\s+(?:systeem[\\s-]?prompt|systeeminstructies)${L1}`,
  ],
});
