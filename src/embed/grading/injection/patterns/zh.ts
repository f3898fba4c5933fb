/**
 * Chinese (simplified) prompt-injection patterns for the core requests, "claims it deserves a
 * grade" and role play. Matched on the unfolded copy. Registered through `add` (../matcher.ts).
 */
import { add } from '../matcher.ts';

const ZH_QUAL = '(?:之前|以前|先前|此前|上面|上述|以上|前面|前述|原来|原有|原先|原始|所有|全部|一切|你的|你之前|系统|给你的|收到的)';
const ZH_NOUN = '(?:指令|指示|规则|提示词|设定|约束|限制)';
const ZH_GRADE = '(?:评分标准|评分规则|评分细则|评分量规|评分准则|评估标准|评价标准|系统提示词?|系统指令)';
const ZH_VERB = '(?:忽略|忽视|无视|不要理会|别理会|不用理会|不必理会|忘记|忘掉|抛开|丢弃|抛弃|放弃|不要遵守|不要遵循|不要执行|别管)';
add(
  'ignore instructions',
  'other',
  false,
  `${ZH_VERB}\\s*(?:${ZH_QUAL}\\s*的?\\s*){1,3}(?:${ZH_NOUN}|${ZH_GRADE})`,
  `${ZH_VERB}\\s*(?:(?:所有|全部|一切|这些|那些)\\s*的?\\s*)?${ZH_GRADE}`,
  `把\\s*(?:${ZH_QUAL}\\s*的?\\s*){1,3}(?:${ZH_NOUN}|${ZH_GRADE})\\s*(?:都|全部|统统)?\\s*(?:忘掉|忘记|忽略|抛开|丢掉|无视)`,
  `${ZH_QUAL}\\s*的?\\s*(?:${ZH_NOUN}|${ZH_GRADE})\\s*(?:已经|已|现在)?\\s*(?:作废|失效|无效|不再适用|不再有效|被取消)`,
);
const ZH_OBJ = '(?:我|我的(?:作业|提交|作品|项目|论文)|这份(?:作业|提交|作品)|这个(?:作业|项目|作品)|本作业|这篇(?:文章|论文|作文)?)';
add(
  'asks for a grade',
  'other',
  false,
  `给\\s*${ZH_OBJ}?\\s*(?:打|评)?\\s*(?:个|一个)?\\s*(?:满分|100\\s*分|一百分|最高分)`,
  `给\\s*${ZH_OBJ}\\s*(?:打|评)?\\s*(?:个|一个)?\\s*(?:优秀|及格|通过|a\\+?(?![a-z]))`,
  `(?:打|评)\\s*(?:个|一个)?\\s*(?:满分|最高分)`,
  `(?:评为|判为|判定为|评定为|打成)\\s*(?:满分|100\\s*分|一百分|最高分)`,
);
add('asks to pass', 'other', false, '让\\s*(?:我|这份作业|我的作业)\\s*(?:通过|及格|过关)');
add(
  'claims it deserves a grade',
  'other',
  false,
  '(?:这份|这个|我的)\\s*(?:作业|提交|作品|项目|论文)\\s*(?:应该|应当|理应|值得)\\s*(?:得到|获得|拿到|得)?\\s*(?:满分|100\\s*分|最高分)',
);
add(
  'speaks to the model',
  'other',
  false,
  '(?:你现在是|现在你是|从现在(?:起|开始)\\s*[，,]?\\s*你(?:就)?是|你(?:现在)?将(?:会)?是|你已经是)\\s*(?:一个|一名|一位|个)?\\s*[\\p{Script=Han}a-z]{0,8}?(?:评分员|评分者|评分老师|阅卷人|阅卷老师|老师|教师|考官|助手|助理|ai|人工智能|模型|机器人|评审|判卷)',
);
add('role play', 'other', false, '(?:请|你(?:现在)?|从现在(?:起|开始)\\s*[，,]?\\s*你?)\\s*(?:扮演|假装(?:你是|成为?|是))');
add(
  'mentions the system prompt',
  'other',
  false,
  '(?:你的|新的?|显示|输出|泄露|透露|打印|重复|忽略|告诉我)\\s*(?:你的)?\\s*系统(?:提示词?|指令|消息)',
  '系统(?:提示词?|指令)\\s*[:：]',
);
