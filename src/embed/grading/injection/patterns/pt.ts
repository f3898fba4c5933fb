/**
 * Portuguese prompt-injection patterns for the core requests. Matched on the folded copy, so
 * written without accents. Registered through `addLanguage` (../matcher.ts).
 */
import { addLanguage, alt, L0, L1, WORD } from '../matcher.ts';

const PT_WORDED = alt(
  '(?:a\\s+)?nota\\s+(?:maxima|maximo|perfeita|10|dez|100|cem)(?![\\d.,])',
  '(?:a\\s+)?(?:pontuacao|classificacao)\\s+(?:maxima|total|perfeita|completa)',
  '(?:a\\s+)?(?:maxima|melhor)\\s+(?:nota|pontuacao|classificacao)',
  'todos\\s+os\\s+pontos',
);

addLanguage('latin', {
  ignore: {
    verbs: [
      'ignore',
      'ignora',
      'ignorem',
      'ignorar',
      'esqueca',
      'esquece',
      'esquecam',
      'esquecer',
      'desconsidere',
      'desconsidera',
      'desconsiderem',
      'desconsiderar',
      'descarte',
      'descarta',
      'despreze',
      'despreza',
      'nao\\s+(?:siga|sigas|sigam)',
      '(?:deixe|deixa)\\s+de\\s+lado',
      'nao\\s+(?:leve|leves)\\s+em\\s+conta',
      'nao\\s+considere',
    ],
    det: '(?:(?:todas|todos|toda|todo|as|os|a|o|suas|seus|sua|seu|tuas|teus|essas|esses|estas|estes|de|das|dos|da|do|quaisquer)\\s+)',
    addr: '(?:(?:todas|todos|suas|seus|tuas|teus|quaisquer)\\s+)',
    prev: alt('antigas?', 'antigos?', 'anteriores'),
    grade: alt(
      'rubricas?',
      'criterios\\s+de\\s+(?:avaliacao|correcao|classificacao)',
      'grelhas?\\s+de\\s+(?:avaliacao|correcao)',
      '(?:prompt|instrucoes|mensagem)\\s+do\\s+sistema',
    ),
    generic: alt('instrucoes', 'instrucao', 'regras', 'diretrizes', 'diretivas', 'orientacoes', 'indicacoes', 'comandos', 'ordens', 'restricoes'),
    post: alt('anteriores', 'previas', 'acima', 'originais', 'iniciais', 'recebidas', 'dadas', '(?:do|da)\\s+(?:sistema|professora?|avaliador)'),
  },
  grade: [
    `${L0}(?:me\\s+(?:de|da|deem|atribua|conceda|coloque|passe)|(?:de|da|deem|atribua|atribui|conceda|concede|coloque|poe|ponha)-(?:me|lhe))\\s+` +
      alt(PT_WORDED, '100\\s*(?:%|\\/\\s*100|pontos)', '10\\s*\\/\\s*10', '(?:um|uma)\\s+(?:10|dez)(?![\\d.,])', '(?:a\\s+)?aprovacao') +
      L1,
    `${L0}(?:atribua|conceda|de)\\s+(?:a\\s+(?:este|esta|meu|minha)\\s+${WORD}\\s+)?${PT_WORDED}${L1}`,
  ],
  pass: [`${L0}(?:aprove|aprova)(?:-me${L1}|\\s+(?:este|esta|meu|minha|o\\s+meu|a\\s+minha)\\s+(?:trabalho|projeto|entrega|ensaio|exame)${L1})`],
  model: [
    `${L0}(?:(?:agora|a\\s+partir\\s+de\\s+agora|de\\s+agora\\s+em\\s+diante|doravante)\\s*,?\\s+(?:voce|tu)\\s+(?:e|es|sera|seras)|(?:voce|tu)\\s+(?:agora\\s+(?:e|es)|(?:e|es)\\s+agora))\\s+(?:um|uma|o|a|meu|minha)\\s+(?:${WORD}\\s+)?` +
      alt(
        'avaliador(?:a)?',
        'corretor(?:a)?',
        'professor(?:a)?',
        'examinador(?:a)?',
        'assistente',
        'ia',
        'inteligencia\\s+artificial',
        'modelo',
        'chatbot',
        'robo',
        'personagem',
      ) +
      L1,
  ],
  systemPrompt: [
    `${L0}(?:seu|teu|sua|tua|seus|teus|suas|tuas|novo|nova|novos|novas)\\s+(?:prompt|instrucoes|mensagem)\\s+(?:do|de)\\s+sistema${L1}`,
    `${L0}(?:prompt|instrucoes)\\s+do\\s+sistema\\s*:`,
    `${L0}(?:revele|mostre|mostra|repita|imprima|ignore|esqueca)\\s+(?:o|as|seu|suas|teu|tuas)\\s+(?:prompt|instrucoes)\\s+do\\s+sistema${L1}`,
  ],
});
