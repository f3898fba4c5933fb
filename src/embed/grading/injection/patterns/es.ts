/**
 * Spanish prompt-injection patterns for the core requests. Matched on the folded copy, so written
 * without accents. Registered through `addLanguage` (../matcher.ts).
 */
import { addLanguage, alt, L0, L1, WORD } from '../matcher.ts';

addLanguage('latin', {
  ignore: {
    verbs: [
      'ignora',
      'ignore',
      'ignoren',
      'ignorad',
      'ignorar',
      'olvida',
      'olvide',
      'olviden',
      'olvidad',
      'olvidate\\s+de',
      'olvidese\\s+de',
      '(?:haz|haga|hagan)\\s+caso\\s+omiso\\s+(?:de|a)',
      'no\\s+(?:hagas|haga|hagan)\\s+caso\\s+(?:de|a)',
      '(?:pasa|pase)\\s+por\\s+alto',
      'descarta',
      'descarte',
      'desestima',
      'omite',
      'omita',
      'no\\s+sigas',
      'no\\s+siga',
      '(?:deja|deje)\\s+de\\s+lado',
    ],
    det: '(?:(?:todas|todos|toda|todo|las|los|la|el|lo|tus|sus|tu|su|estas|estos|esas|esos|de|del|a|al)\\s+)',
    addr: '(?:(?:todas|todos|tus)\\s+)',
    prev: alt('anteriores?', 'previas?', 'viejas?', 'antiguas?'),
    grade: alt(
      'rubricas?',
      'criterios\\s+de\\s+(?:evaluacion|calificacion|correccion)',
      'pautas?\\s+de\\s+(?:evaluacion|correccion|calificacion)',
      '(?:prompt|indicaciones|instrucciones|mensaje)\\s+del?\\s+sistema',
    ),
    generic: alt(
      'instrucciones',
      'instruccion',
      'indicaciones',
      'reglas',
      'normas',
      'directrices',
      'directivas',
      'ordenes',
      'consignas',
      'pautas',
      'restricciones',
    ),
    post: alt(
      'anteriores',
      'previas',
      'precedentes',
      'de\\s+arriba',
      '(?:mas\\s+)?arriba',
      'originales',
      'iniciales',
      'recibidas',
      'dadas',
      '(?:del|de\\s+la)\\s+(?:sistema|profesora?|evaluador)',
    ),
  },
  grade: [
    `${L0}(?:dame|deme|denme|dale|dele|denle|otorgame|otorgale|asigname|asignale|ponme|ponle|ponedme|pongame)(?:\\s+(?:a\\s+)?(?:este|esta|mi)\\s+${WORD})?\\s+` +
      alt(
        '(?:la\\s+)?(?:nota|puntuacion|calificacion)\\s+(?:maxima|perfecta|completa|mas\\s+alta)',
        '(?:la\\s+)?maxima\\s+(?:nota|puntuacion|calificacion)',
        '(?:un|una\\s+nota\\s+de)\\s+10(?![\\d.,])',
        '(?:un\\s+)?100\\s*(?:%|\\/\\s*100|puntos)',
        '10\\s*\\/\\s*10',
        'todos\\s+los\\s+puntos',
        '(?:un\\s+)?aprobado',
        '(?:un\\s+)?sobresaliente',
        'matricula\\s+de\\s+honor',
      ) +
      L1,
  ],
  pass: [`${L0}(?:apruebame|apruebeme|aprueba|apruebe)\\s+(?:este|esta|mi)\\s+(?:trabajo|proyecto|entrega|ensayo|examen)${L1}`],
  model: [
    `${L0}(?:(?:ahora|a\\s+partir\\s+de\\s+ahora|desde\\s+ahora|de\\s+ahora\\s+en\\s+adelante)\\s*,?\\s+(?:tu\\s+)?(?:eres|usted\\s+es|seras)|(?:tu\\s+)?eres\\s+ahora|usted\\s+es\\s+ahora)\\s+(?:un|una|el|la|mi)\\s+(?:${WORD}\\s+)?` +
      alt(
        'evaluador(?:a)?',
        'corrector(?:a)?',
        'profesor(?:a)?',
        'examinador(?:a)?',
        'calificador(?:a)?',
        'asistente',
        'ia',
        'inteligencia\\s+artificial',
        'modelo',
        'chatbot',
        'robot',
        'personaje',
      ) +
      L1,
  ],
  systemPrompt: [
    `${L0}(?:tu|su|tus|sus|nuevos?|nuevas?)\\s+(?:prompt|indicaciones|instrucciones|mensaje)\\s+del?\\s+sistema${L1}`,
    `${L0}(?:prompt|indicaciones|instrucciones)\\s+del?\\s+sistema\\s*:`,
    `${L0}(?:revela|muestra|muestrame|repite|imprime|ignora|olvida)\\s+(?:el|las|tu|tus|su|sus)\\s+(?:prompt|indicaciones|instrucciones)\\s+del?\\s+sistema${L1}`,
  ],
});
