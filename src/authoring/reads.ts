/**
 * The bounded reads (issue #16): get_program, get_unit, get_lesson, get_activity.
 *
 * Each answers one record in full and what lies under it at a `depth`: `outline` (the default:
 * id, title and position of every record below, and the kind of each activity, with counts) or
 * `full` (every record below in full). No answer may exceed `MAX_ANSWER_CHARS` characters (the
 * whole tool result as JSON, text and `structuredContent` together): a larger one is refused
 * with an `isError` result that says how large it would be and which narrower read to use, since
 * an assistant's host truncates or drops tool output of that size (Claude Code caps it near
 * 25,000 tokens by default). The Odin full-stack path (331 records, about 1 MB of text) answers
 * get_program in outline at about 70,000 characters; get_program at depth full is refused.
 *
 * An outline too large to fit (get_program of 20 units × 10 lessons × 10 activities is about
 * 430,000 characters) is answered `shallow` instead, so that a large program can still be walked:
 * only the records directly below (id, title, position), each with the counts of what lies under
 * it, and a `note` saying to read each with the next narrower read. Only when even that does not
 * fit (thousands of units) is the outline refused.
 */
import { z } from 'zod';
import { ToolFailure } from './errors.ts';
import { ActivityRecord, findRecord, LessonRecord, notFoundFailure, ProgramRecord, UnitRecord, uuid } from './records.ts';
import { answerSize, defineTool, READ, type AnyTool, type ToolAnswer } from './tool.ts';
import { readTree, treeCounts, type Json, type Parent } from './tree.ts';

/** Most characters one tool answer may hold (the result as JSON). */
export const MAX_ANSWER_CHARS = 100_000;

const DEPTHS = ['outline', 'full'] as const;
type Depth = (typeof DEPTHS)[number];
/** The depth of an answer: what was asked, or `shallow` in place of an outline too large to fit. */
const ANSWER_DEPTHS = [...DEPTHS, 'shallow'] as const;
const depth = z
  .enum(DEPTHS)
  .default('outline')
  .describe(
    "outline (default): id, title and position of every record below (and each activity's kind; " +
      'for a program or unit too large for that, only the records directly below, each with its counts: depth "shallow" in the answer); ' +
      `full: every record below in full (refused when the answer would exceed ${MAX_ANSWER_CHARS.toLocaleString('en')} characters)`,
  );

/**
 * `answer`, or a `ToolFailure` when it is larger than `MAX_ANSWER_CHARS`; `instead` says what to
 * read in its place.
 */
export function bounded(answer: ToolAnswer, what: string, instead: string): ToolAnswer {
  const size = answerSize(answer);
  if (size <= MAX_ANSWER_CHARS) return answer;
  throw new ToolFailure(
    `answer too large: ${what} is ${size.toLocaleString('en')} characters, more than the ${MAX_ANSWER_CHARS.toLocaleString('en')} ` +
      `one answer may hold; ${instead}`,
  );
}

// Output shapes: loose, so that an outline node and a full record both fit.
const outlineNode = {
  id: z.string().describe('Record id (uuid)'),
  title: z.string().describe('Title'),
  position: z.number().int().describe('Position within its parent (1-based)'),
};
const ActivityNode = z
  .looseObject({ ...outlineNode, kind: z.string().describe('Kind of artifact') })
  .describe('An activity (outline: id, title, position, kind; full: the whole record)');
const LessonNode = z.looseObject({ ...outlineNode, activities: z.array(ActivityNode).describe('Activities in order') }).describe('A lesson and its activities');
const UnitNode = z.looseObject({ ...outlineNode, lessons: z.array(LessonNode).describe('Lessons in order') }).describe('A unit and its lessons');
const count = (what: string) => z.number().int().describe(`Number of ${what} below`);
const countsOf = (levels: readonly Level[]) => z.object(Object.fromEntries(levels.map((k) => [k, count(k)])));

type Level = 'units' | 'lessons' | 'activities';
/** The record type of the children of each parent. */
const CHILD: Record<Parent, Parent | undefined> = { program: 'unit', unit: 'lesson', lesson: undefined };
/** Per record with children: the key of its children, the levels below it, the reads of its parts. */
const PARENTS: Record<Parent, { level: Level; below: readonly Level[]; next: string; reads: string }> = {
  program: { level: 'units', below: ['units', 'lessons', 'activities'], next: 'get_unit', reads: 'get_unit, get_lesson and get_activity' },
  unit: { level: 'lessons', below: ['lessons', 'activities'], next: 'get_lesson', reads: 'get_lesson and get_activity' },
  lesson: { level: 'activities', below: ['activities'], next: 'get_activity', reads: 'get_activity' },
};

/** What to read instead of a too-large answer of `name` at `depth`. */
function narrower(name: Parent, d: Depth): string {
  const { next, reads } = PARENTS[name];
  return d === 'full'
    ? `read it with depth "outline" (the default) and then one part at a time with ${reads}`
    : `find its parts with search_content (it answers their ids) and read them one at a time with ${next}`;
}

/** The counts of `levels` in `tree`. */
function countsIn(tree: Json, levels: readonly Level[]): Record<string, number> {
  const all = treeCounts(tree);
  return Object.fromEntries(levels.map((k) => [k, all[k]]));
}

/**
 * The `children` of an outline (records of type `child`), each without the records under it and
 * with their counts instead.
 */
function shallow(children: Json[], child: Parent): Json[] {
  const { level, below } = PARENTS[child];
  return children.map(({ [level]: under, ...node }) => ({ ...node, counts: countsIn({ [level]: under }, below) }));
}

/**
 * The answer of a read of `name` (the record and its children at `depth`); an outline too
 * large to fit is answered shallow (`shallow`), one too large even so is refused (`bounded`).
 */
function boundedRead(name: Parent, id: string, tree: Json, depth: Depth): ToolAnswer {
  const { level, below, next } = PARENTS[name];
  const counts = countsIn(tree, below);
  const summary = (d: string) => `${name} ${id} "${tree.title}" (${d}): ${below.map((k) => `${counts[k]} ${k}`).join(', ')}`;
  const answer = { structured: { ...tree, depth, counts }, summary: summary(depth) };
  const child = CHILD[name];
  const size = answerSize(answer);
  if (size <= MAX_ANSWER_CHARS) return answer; // (measured once: the answer is serialized again to be sent)
  if (depth === 'full' || !child) return bounded(answer, `${name} ${id} at depth ${depth}`, narrower(name, depth)); // refuses
  const note =
    `The outline is too large for one answer (${size.toLocaleString('en')} characters), so only the ${level} are listed, ` +
    `each with its counts: read each with ${next}, and what lies under it with ${PARENTS[child].reads}`;
  const shallowAnswer = {
    structured: { ...tree, depth: 'shallow', counts, [level]: shallow(tree[level] as Json[], child), note },
    summary: `${summary('shallow: the outline is too large')}; read each of its ${level} with ${next}`,
  };
  return bounded(shallowAnswer, `${name} ${id} at depth outline (even with its ${level} only)`, narrower(name, depth));
}

/** get_program, get_unit or get_lesson. */
function readTool(name: Parent, record: z.ZodObject, children: z.ZodType, description: string) {
  const { level, below } = PARENTS[name];
  const child = CHILD[name];
  const shallowChildren = child
    ? z
        .array(z.object({ ...outlineNode, counts: countsOf(PARENTS[child].below).describe(`How many records are below the ${child}`) }))
        .describe(`Only the ${level} in order, each with its counts (depth shallow: the outline was too large)`)
    : undefined;
  return defineTool({
    name: `get_${name}`,
    title: `Get a ${name} with an outline of its content`,
    description:
      `${description} Larger answers than ${MAX_ANSWER_CHARS.toLocaleString('en')} characters are refused with a message naming the narrower read to use` +
      (child ? `, except an outline, which is answered shallow instead (only the ${level}, each with its counts, and a note).` : '.'),
    input: z.strictObject({ id: uuid(`Id of the ${name}`), depth }),
    output: record.extend({
      depth: z.enum(child ? ANSWER_DEPTHS : DEPTHS).describe('The depth of this answer (shallow: in place of an outline too large to fit)'),
      counts: countsOf(below).describe('How many records are below'),
      [level]: shallowChildren ? z.union([children, shallowChildren]) : children,
      ...(child ? { note: z.string().optional().describe('Present when the answer is shallow: what to read next') } : {}),
    }),
    annotations: READ,
    run: async ({ id, depth }, tx) => boundedRead(name, id, await readTree(tx, name, id, depth), depth),
  });
}

export const getProgram = readTool(
  'program',
  ProgramRecord,
  z.array(UnitNode).describe('Units in order, each with its lessons and their activities'),
  'Read one program: the program itself in full, and its units → lessons → activities in order (each level by position, 1..n) ' +
    'as an outline (id, title, position, kind) by default, or in full with depth "full". ' +
    'Read one part in full with get_unit, get_lesson or get_activity.',
);

const getUnit = readTool(
  'unit',
  UnitRecord,
  z.array(LessonNode).describe('Lessons in order, each with its activities'),
  'Read one unit: the unit in full, and its lessons → activities in order as an outline by default, or in full with depth "full".',
);

const getLesson = readTool(
  'lesson',
  LessonRecord,
  z.array(ActivityNode).describe('Activities in order'),
  'Read one lesson: the lesson in full (with its body), and its activities in order as an outline by default ' +
    '(id, title, position, kind), or in full (spec, rubric, pass threshold) with depth "full".',
);

const getActivity = defineTool({
  name: 'get_activity',
  title: 'Get an activity',
  description: 'Read one activity in full: what the learner must produce (kind, spec) and how it is graded (rubric, pass threshold).',
  input: z.strictObject({ id: uuid('Id of the activity') }),
  output: ActivityRecord,
  annotations: READ,
  run: async ({ id }, tx) => {
    const record: Json | undefined = await findRecord(tx, 'activity', id);
    if (!record) throw await notFoundFailure(tx, 'activity', id);
    const answer = { structured: record, summary: `activity ${id} "${record.title}" (${record.kind}, ${(record.rubric as unknown[]).length} rubric criteria)` };
    return bounded(answer, `activity ${id}`, `read it as the resource svc://activities/${id}, which holds it once`);
  },
});

export const readTools: AnyTool[] = [getProgram, getUnit, getLesson, getActivity];
