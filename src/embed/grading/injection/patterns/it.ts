/**
 * Italian prompt-injection patterns for the core requests. Matched on the folded copy, so written
 * without accents. Registered through `addLanguage` (../matcher.ts).
 */
import { addLanguage, alt, L0, L1, WORD } from '../matcher.ts';

addLanguage('latin', {
  ignore: {
    verbs: [
      'ignora',
      'ignori',
      'ignorate',
      'ignorare',
      'dimentica',
      'dimentichi',
      'dimenticate',
      'dimenticare',
      'trascura',
      'trascurate',
      'tralascia',
      'tralasciate',
      'scarta',
      'scartate',
      'non\\s+(?:seguire|considerare)',
      'non\\s+tenere\\s+conto',
      '(?:lascia|lasciate)\\s+perdere',
    ],
    det: "(?:(?:tutte|tutti|tutto|le|la|il|lo|i|gli|tue|tuoi|sue|suoi|queste|questi|delle|dei|degli|del|della|di)\\s+|l'\\s*)",
    addr: '(?:(?:tutte|tutti|tue|tuoi)\\s+)',
    prev: alt('vecchie', 'vecchi', 'precedenti'),
    grade: alt(
      'rubriche?',
      'griglia\\s+di\\s+(?:valutazione|correzione)',
      'criteri\\s+di\\s+(?:valutazione|correzione)',
      '(?:prompt|istruzioni|messaggio)\\s+(?:di|del)\\s+sistema',
    ),
    generic: alt('istruzioni', 'istruzione', 'regole', 'indicazioni', 'direttive', 'linee\\s+guida', 'consegne', 'comandi', 'ordini', 'vincoli'),
    post: alt('precedenti', '(?:di\\s+)?sopra', 'originali', 'iniziali', 'ricevute', 'date', '(?:del|della)\\s+(?:sistema|professore|professoressa|docente)'),
  },
  grade: [
    `${L0}(?:dammi|datemi|mi\\s+dia|mi\\s+dai|assegnami|assegnatemi|attribuiscimi|attribuitemi|mettimi|mettetemi|concedimi|concedetemi)(?:\\s+(?:a\\s+questo|a\\s+questa|al\\s+mio|alla\\s+mia)\\s+${WORD})?\\s+` +
      alt(
        'il\\s+(?:massimo\\s+(?:dei\\s+voti|punteggio)|punteggio\\s+(?:massimo|pieno|perfetto)|voto\\s+(?:massimo|pieno|perfetto))',
        '(?:un\\s+)?10\\s*(?:e\\s+lode|\\/\\s*10)',
        'un\\s+(?:10|dieci)(?![\\d.,])',
        '(?:un\\s+)?30\\s*(?:e\\s+lode|\\/\\s*30)',
        '(?:un\\s+)?trenta(?:\\s+e\\s+lode)?',
        '100\\s*(?:%|\\/\\s*100|punti)',
        'pieni\\s+voti',
        'la\\s+sufficienza',
        'tutti\\s+i\\s+punti',
        'la\\s+promozione',
      ) +
      L1,
  ],
  pass: [
    `${L0}promuovimi${L1}`,
    `${L0}(?:approva|promuovi)\\s+(?:questo|questa|il\\s+mio|la\\s+mia)\\s+(?:lavoro|progetto|compito|elaborato|consegna|tesina)${L1}`,
  ],
  model: [
    `${L0}(?:(?:ora|adesso|da\\s+ora\\s+in\\s+poi|d'ora\\s+in\\s+(?:poi|avanti))\\s*,?\\s+(?:tu\\s+)?sei|(?:tu\\s+)?sei\\s+(?:ora|adesso)|lei\\s+(?:ora|adesso)\\s+e)\\s+(?:il\\s+mio|la\\s+mia|un|una|uno|il|lo|la|l')\\s*(?:${WORD}\\s+)?` +
      alt(
        'valutat(?:ore|rice)',
        'corret(?:tore|trice)',
        'professor(?:e|essa)',
        'insegnante',
        'docente',
        'esaminat(?:ore|rice)',
        'assistente',
        'ia',
        'intelligenza\\s+artificiale',
        'modello',
        'chatbot',
        'robot',
        'personaggio',
      ) +
      L1,
  ],
  systemPrompt: [
    `${L0}(?:il\\s+tuo|i\\s+tuoi|le\\s+tue|la\\s+tua|tuo|tue|tuoi|tua|nuovo|nuove|nuovi|nuova)\\s+(?:prompt|istruzioni|messaggio)\\s+(?:di|del)\\s+sistema${L1}`,
    `${L0}(?:prompt|istruzioni)\\s+di\\s+sistema\\s*:`,
    `${L0}(?:rivela|mostra|mostrami|ripeti|stampa|ignora|dimentica)\\s+(?:il|le|il\\s+tuo|le\\s+tue)\\s+(?:prompt|istruzioni)\\s+(?:di|del)\\s+sistema${L1}`,
  ],
});
