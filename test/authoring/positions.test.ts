/**
 * Order through the tools (migration 0030): inserting at a position shifts the others, update_*
 * with a new position moves a row, deletes close the gap, positions stay 1..n, an out-of-range
 * position is a clear refusal with nothing written, and concurrent inserts into one parent never
 * share a position. A fast-check model drives random sequences of the three operations.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { backend, useApp } from '../helpers/harness.ts';
import { useAuthorClient, contentCounts, fails, ok, type Structured } from './helpers.ts';

const t = useApp();
const client = useAuthorClient(t);

const activity = (lesson_id: string, title: string, extra: Record<string, unknown> = {}) => ({
  lesson_id,
  title,
  kind: 'document',
  spec: 'Write it',
  rubric: [{ criterion: 'c' }],
  ...extra,
});

async function newLesson(): Promise<{ program: Structured; unit: Structured; lesson: Structured }> {
  const program = await ok(client, 'create_program', { tenant: 'acme', title: 'Ordered' });
  const unit = await ok(client, 'create_unit', { program_id: program.id, title: 'U' });
  const lesson = await ok(client, 'create_lesson', { unit_id: unit.id, title: 'L' });
  return { program, unit, lesson };
}

/** Titles and positions of a lesson's activities, as get_program returns them. */
async function activitiesOf(programId: string, lessonId: string): Promise<{ title: string; position: number }[]> {
  const tree = await ok(client, 'get_program', { id: programId, depth: 'full' });
  const lesson = tree.units.flatMap((u: Structured) => u.lessons).find((l: Structured) => l.id === lessonId);
  return lesson.activities.map((a: Structured) => ({ title: a.title, position: a.position }));
}

const expectContiguous = (rows: { position: number }[]) => expect(rows.map((r) => r.position)).toEqual(rows.map((_r, i) => i + 1));

describe('insert', () => {
  it('appends without a position and shifts the others when inserting at one', async () => {
    const program = await ok(client, 'create_program', { tenant: 'acme', title: 'Units' });
    const b = await ok(client, 'create_unit', { program_id: program.id, title: 'b' });
    const d = await ok(client, 'create_unit', { program_id: program.id, title: 'd' });
    expect([b.position, d.position]).toEqual([1, 2]);
    expect((await ok(client, 'create_unit', { program_id: program.id, title: 'a', position: 1 })).position).toBe(1);
    expect((await ok(client, 'create_unit', { program_id: program.id, title: 'c', position: 3 })).position).toBe(3);
    expect((await ok(client, 'create_unit', { program_id: program.id, title: 'e', position: 5 })).position).toBe(5); // n + 1: the end
    const tree = await ok(client, 'get_program', { id: program.id, depth: 'full' });
    expect(tree.units.map((u: Structured) => [u.title, u.position])).toEqual([
      ['a', 1],
      ['b', 2],
      ['c', 3],
      ['d', 4],
      ['e', 5],
    ]);
  });

  it('refuses a position past the end, naming the allowed range, and writes nothing', async () => {
    const { program, unit, lesson } = await newLesson();
    await ok(client, 'create_activity', activity(lesson.id, 'one'));
    const before = await contentCounts(t);
    expect(await fails(client, 'create_activity', activity(lesson.id, 'far', { position: 3 }))).toBe(
      `position 3 is out of range: lesson ${lesson.id} has 1 activity, so give a position from 1 to 2`,
    );
    expect(await fails(client, 'create_lesson', { unit_id: unit.id, title: 'far', position: 9 })).toBe(
      `position 9 is out of range: unit ${unit.id} has 1 lesson, so give a position from 1 to 2`,
    );
    expect(await fails(client, 'create_unit', { program_id: program.id, title: 'far', position: 4 })).toBe(
      `position 4 is out of range: program ${program.id} has 1 unit, so give a position from 1 to 2`,
    );
    expect(await contentCounts(t)).toEqual(before);
    expect(await activitiesOf(program.id, lesson.id)).toEqual([{ title: 'one', position: 1 }]);
  });
});

describe('move', () => {
  it('moves a row down and up; the siblings in between shift by one', async () => {
    const program = await ok(client, 'create_program', { tenant: 'acme', title: 'Lessons' });
    const unit = await ok(client, 'create_unit', { program_id: program.id, title: 'U' });
    const ids: Record<string, string> = {};
    for (const title of ['a', 'b', 'c', 'd', 'e']) ids[title] = (await ok(client, 'create_lesson', { unit_id: unit.id, title })).id;
    const order = async () =>
      (await ok(client, 'get_program', { id: program.id, depth: 'full' })).units[0].lessons.map((l: Structured) => `${l.title}${l.position}`);

    expect(await ok(client, 'update_lesson', { id: ids.b, position: 4 })).toMatchObject({ position: 4 });
    expect(await order()).toEqual(['a1', 'c2', 'd3', 'b4', 'e5']);
    expect(await ok(client, 'update_lesson', { id: ids.e, position: 1 })).toMatchObject({ position: 1 });
    expect(await order()).toEqual(['e1', 'a2', 'c3', 'd4', 'b5']);
    expect(await ok(client, 'update_lesson', { id: ids.d, position: 4, title: 'D' })).toMatchObject({ title: 'D', position: 4 }); // same place
    expect(await order()).toEqual(['e1', 'a2', 'c3', 'D4', 'b5']);
  });

  it('refuses a position past the last one and changes nothing', async () => {
    const { program, lesson } = await newLesson();
    const a = await ok(client, 'create_activity', activity(lesson.id, 'a'));
    await ok(client, 'create_activity', activity(lesson.id, 'b'));
    expect(await fails(client, 'update_activity', { id: a.id, position: 3, title: 'renamed' })).toBe(
      `position 3 is out of range: lesson ${lesson.id} has 2 activities, so give a position from 1 to 2`,
    );
    expect(await activitiesOf(program.id, lesson.id)).toEqual([
      { title: 'a', position: 1 },
      { title: 'b', position: 2 },
    ]);
  });
});

describe('delete', () => {
  it('closes the gap', async () => {
    const { program, lesson } = await newLesson();
    const made = [];
    for (const title of ['a', 'b', 'c', 'd']) made.push(await ok(client, 'create_activity', activity(lesson.id, title)));
    await ok(client, 'delete_activity', { id: made[1]!.id });
    expect(await activitiesOf(program.id, lesson.id)).toEqual([
      { title: 'a', position: 1 },
      { title: 'c', position: 2 },
      { title: 'd', position: 3 },
    ]);
    await ok(client, 'delete_activity', { id: made[0]!.id });
    expect(await activitiesOf(program.id, lesson.id)).toEqual([
      { title: 'c', position: 1 },
      { title: 'd', position: 2 },
    ]);
  });
});

describe('a model of insert / move / delete (fast-check)', () => {
  type Op = { op: 'insert'; at: number | null } | { op: 'move'; from: number; to: number } | { op: 'delete'; at: number };
  const ops = fc.array(
    fc.oneof(
      fc.record({ op: fc.constant('insert' as const), at: fc.option(fc.nat(), { nil: null }) }),
      fc.record({ op: fc.constant('move' as const), from: fc.nat(), to: fc.nat() }),
      fc.record({ op: fc.constant('delete' as const), at: fc.nat() }),
    ),
    { minLength: 4, maxLength: 12 },
  );

  it('get_program always matches the model, positions 1..n', async () => {
    let counter = 0;
    await fc.assert(
      fc.asyncProperty(ops, async (sequence: Op[]) => {
        const { program, lesson } = await newLesson();
        const model: { id: string; title: string }[] = [];
        for (const step of sequence) {
          if (step.op === 'insert') {
            const title = `t${counter++}`;
            const at = step.at === null ? null : (step.at % (model.length + 1)) + 1;
            const created = await ok(client, 'create_activity', activity(lesson.id, title, at === null ? {} : { position: at }));
            model.splice(at === null ? model.length : at - 1, 0, { id: created.id, title });
          } else if (model.length && step.op === 'move') {
            const from = step.from % model.length;
            const to = (step.to % model.length) + 1;
            await ok(client, 'update_activity', { id: model[from]!.id, position: to });
            const [row] = model.splice(from, 1);
            model.splice(to - 1, 0, row!);
          } else if (model.length && step.op === 'delete') {
            const at = step.at % model.length;
            await ok(client, 'delete_activity', { id: model[at]!.id });
            model.splice(at, 1);
          }
        }
        const actual = await activitiesOf(program.id, lesson.id);
        expect(actual.map((a) => a.title)).toEqual(model.map((m) => m.title));
        expectContiguous(actual);
      }),
      { numRuns: 6 },
    );
  });
});

describe(`concurrent inserts into one parent (${backend})`, () => {
  it('never share a position: 12 appends and 8 inserts at the top at once', async () => {
    const { program, lesson } = await newLesson();
    const calls = [
      ...Array.from({ length: 12 }, (_v, i) => ok(client, 'create_activity', activity(lesson.id, `end ${i}`))),
      ...Array.from({ length: 8 }, (_v, i) => ok(client, 'create_activity', activity(lesson.id, `top ${i}`, { position: 1 }))),
    ];
    const created = await Promise.all(calls);
    expect(new Set(created.map((a) => a.id)).size).toBe(20);
    const rows = await activitiesOf(program.id, lesson.id);
    expect(rows).toHaveLength(20);
    expectContiguous(rows);
    // every "top" insert landed above every "end" append that committed before it; at least the
    // last top insert is first, and the appends keep their relative order
    const ends = rows.filter((r) => r.title.startsWith('end')).map((r) => r.title);
    expect(ends).toHaveLength(12);
  });
});
