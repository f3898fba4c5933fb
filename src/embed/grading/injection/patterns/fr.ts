/**
 * French prompt-injection patterns for the core requests (ignore the instructions, full marks or
 * a pass, "you are now …", the system prompt). Matched on the folded copy, so written without
 * accents. Registered through `addLanguage` (../matcher.ts).
 */
import { addLanguage, alt, L0, L1, WORD } from '../matcher.ts';

const FR_TERM = alt(
  '(?:la|une)\\s+note\\s+(?:maximale|maximum|parfaite|de\\s+20(?:\\s*\\/\\s*20)?|de\\s+100)',
  '20\\s*\\/\\s*20',
  'tous\\s+les\\s+points',
  '(?:le\\s+)?maximum\\s+de\\s+points',
  '100\\s*(?:%|\\/\\s*100|points)',
  '10\\s*\\/\\s*10',
);

addLanguage('latin', {
  ignore: {
    verbs: [
      'ignore[rsz]?',
      'oublie[rsz]?',
      'neglige[rsz]?',
      'ne\\s+(?:tiens|tenez)\\s+(?:plus|pas)\\s+compte',
      'ne\\s+pas\\s+tenir\\s+compte',
      '(?:fais|faites|faire)\\s+abstraction',
      'passe[rz]?\\s+outre',
      'ecarte[rz]?',
      'ne\\s+(?:suis|suivez|respecte|respectez)\\s+(?:plus|pas)',
    ],
    det: "(?:(?:les|la|le|toutes|tous|toute|tout|tes|vos|ces|mes|de|des|du|aux?|a)\\s+|[ld]'\\s*)",
    addr: '(?:(?:toutes|tous|tes|vos|ton|ta|votre)\\s+)',
    prev: alt('anciennes?', 'precedentes?', 'premieres?'),
    grade: alt(
      'bareme',
      "grilles?\\s+(?:d'evaluation|de\\s+(?:notation|correction))",
      "criteres?\\s+(?:d'evaluation|de\\s+(?:notation|correction|reussite))",
      'consignes?\\s+de\\s+(?:notation|correction)',
      '(?:prompt|invite)\\s+(?:du\\s+)?systeme',
      "rubrique\\s+d'evaluation",
    ),
    generic: alt('instructions?', 'consignes?', 'regles?', 'directives?', 'indications', 'ordres', 'commandes', 'contraintes'),
    post: alt(
      'precedentes?',
      'anterieures?',
      'ci-dessus',
      'au-dessus',
      "d'origine",
      'originales?',
      'initiales?',
      'donnees',
      'recues',
      '(?:du|de\\s+la)\\s+(?:systeme|professeure?|correcteur)',
    ),
  },
  grade: [
    `${L0}(?:donne[sz]?|attribue[sz]?|accorde[sz]?|mets|mettez)(?:[\\s-]+(?:moi|nous|lui))?\\s+(?:a\\s+(?:ce|cette|mon|ma)\\s+${WORD}\\s+)?${FR_TERM}${L1}`,
  ],
  pass: [`${L0}(?:valide[sz]?|approuve[sz]?)(?:[\\s-]+moi)?\\s+(?:ce|mon|cette|ma)\\s+(?:travail|devoir|projet|rendu|copie|soumission)${L1}`],
  model: [
    `${L0}(?:(?:tu\\s+es|vous\\s+etes)\\s+(?:maintenant|desormais|a\\s+present|dorenavant)|(?:a\\s+partir\\s+de\\s+maintenant|des\\s+maintenant|desormais|maintenant)\\s*,?\\s+(?:tu\\s+es|vous\\s+etes))\\s+(?:un|une|le|la|mon|ma|notre|l')\\s*(?:${WORD}\\s+)?` +
      alt(
        'correct(?:eur|rice)',
        'evaluat(?:eur|rice)',
        'examinat(?:eur|rice)',
        'professeure?',
        'prof',
        'enseignante?',
        'assistante?',
        'ia',
        'intelligence\\s+artificielle',
        'modele',
        'chatbot',
        'robot',
        'personnage',
      ) +
      L1,
  ],
  systemPrompt: [
    `${L0}(?:ton|ta|tes|votre|vos|nouveaux?|nouvelles?)\\s+(?:prompt|invite|instructions?|consignes?|message)\\s+(?:du\\s+)?systeme${L1}`,
    `${L0}(?:prompt|invite|instructions?|consignes?)\\s+(?:du\\s+)?systeme\\s*:`,
    `${L0}(?:revele[sz]?|affiche[sz]?|montre[sz]?|repete[sz]?|ignore[sz]?|oublie[sz]?)(?:[\\s-]+moi)?\\s+(?:le|la|les|ton|ta|tes|votre|vos)\\s+(?:prompt|invite|instructions?|consignes?)\\s+(?:du\\s+)?systeme${L1}`,
  ],
});
