/**
 * Bad input on every tool that takes it — 1 MB titles, invalid `kind`, rubric weights that are
 * negative or not numbers, positions out of range, ids of the wrong record type: each gets a
 * clear `isError` result (naming the field for what the arguments' schema rules out; saying why
 * for what only the database can know), and nothing is written (the content tables are compared
 * before and after every call, as the owner).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { useApp } from '../helpers/harness.ts';
import { fails, useAuthorClient, ok, type Structured, contentSnapshot } from './helpers.ts';

const t = useApp();
const client = useAuthorClient(t, 'acme');
let x: { program: Structured; unit: Structured; lesson: Structured; activity: Structured };

const snapshot = () => contentSnapshot(t);

beforeAll(async () => {
  const program = await ok(client, 'create_program', { tenant: 'acme', title: 'P' });
  const unit = await ok(client, 'create_unit', { program_id: program.id, title: 'U' });
  const lesson = await ok(client, 'create_lesson', { unit_id: unit.id, title: 'L' });
  const activity = await ok(client, 'create_activity', { lesson_id: lesson.id, title: 'A', kind: 'document', spec: 'S', rubric: [{ criterion: 'c' }] });
  x = { program, unit, lesson, activity };
});

/** An invalid-arguments `isError` result naming `field`, and nothing written. */
async function invalid(name: string, args: Record<string, unknown>, field: RegExp) {
  const before = await snapshot();
  const text = await fails(client, name, args);
  expect(text).toMatch(new RegExp(`^Invalid arguments for tool ${name}: `));
  expect(text).toMatch(field);
  expect(text.length).toBeLessThan(2_000); // the 1 MB value is not echoed back
  expect(await snapshot()).toEqual(before);
}

/** An isError result with exactly `text`, and nothing written. */
async function refused(name: string, args: Record<string, unknown>, text: string | RegExp) {
  const before = await snapshot();
  const message = await fails(client, name, args);
  if (typeof text === 'string') expect(message).toBe(text);
  else expect(message).toMatch(text);
  expect(await snapshot()).toEqual(before);
}

const activityArgs = () => ({ lesson_id: x.lesson.id, title: 'A', kind: 'document', spec: 'S', rubric: [{ criterion: 'c' }] });
const importArgs = (activity: Record<string, unknown> = {}, title = 'I') => ({
  tenant: 'acme',
  external_id: 'bad-input',
  title,
  units: [{ title: 'U', lessons: [{ title: 'L', activities: [{ title: 'A', kind: 'document', spec: 'S', rubric: [{ criterion: 'c' }], ...activity }] }] }],
});

describe('1 MB titles', () => {
  const huge = 'x'.repeat(1024 * 1024);
  it.each([
    ['create_program', () => ({ tenant: 'acme', title: huge })],
    ['update_program', () => ({ id: x.program.id, title: huge })],
    ['create_unit', () => ({ program_id: x.program.id, title: huge })],
    ['update_unit', () => ({ id: x.unit.id, title: huge })],
    ['create_lesson', () => ({ unit_id: x.unit.id, title: huge })],
    ['update_lesson', () => ({ id: x.lesson.id, title: huge })],
    ['create_activity', () => ({ ...activityArgs(), title: huge })],
    ['update_activity', () => ({ id: x.activity.id, title: huge })],
    ['instantiate_program', () => ({ program_id: x.program.id, tenant: 'acme', title: huge })],
    ['import_program', () => importArgs({ title: huge })],
  ] as const)('%s → isError on title, nothing written', (name, args) => invalid(name, args(), /title.*500|500.*title/s));
});

describe('invalid kind', () => {
  it.each(['video', '', 'DOCUMENT', 3, null])('%j', async (kind) => {
    await invalid('create_activity', { ...activityArgs(), kind }, /kind/);
    await invalid('update_activity', { id: x.activity.id, kind }, /kind/);
    await invalid('import_program', importArgs({ kind }), /activities\[0\]\.kind/);
  });
});

describe('rubric weights that are negative or not numbers', () => {
  it.each([-1, -0.5, '3', null, true, {}, [1], 1e9])('weight %j', async (weight) => {
    const rubric = [{ criterion: 'c', weight }];
    await invalid('create_activity', { ...activityArgs(), rubric }, /rubric\[0\]\.weight/);
    await invalid('update_activity', { id: x.activity.id, rubric }, /rubric\[0\]\.weight/);
    await invalid('import_program', importArgs({ rubric }), /rubric\[0\]\.weight/);
  });

  it('an empty rubric, a criterion without text, a criterion with unknown keys', async () => {
    await invalid('create_activity', { ...activityArgs(), rubric: [] }, /rubric/);
    await invalid('create_activity', { ...activityArgs(), rubric: [{ criterion: '' }] }, /criterion/);
    await invalid('create_activity', { ...activityArgs(), rubric: [{ criterion: 'c', points: 2 }] }, /points/);
  });
});

describe('positions', () => {
  it.each([0, -1, 1.5, '2', null, 1e9])('%j is not a position (isError)', async (position) => {
    await invalid('create_unit', { program_id: x.program.id, title: 'U', position }, /position/);
    await invalid('update_lesson', { id: x.lesson.id, position }, /position/);
    await invalid('create_activity', { ...activityArgs(), position }, /position/);
  });

  it('a position past the end is refused with the allowed range', async () => {
    await refused(
      'create_unit',
      { program_id: x.program.id, title: 'U', position: 3 },
      /^position 3 is out of range: program .* has 1 unit, so give a position from 1 to 2$/,
    );
    await refused('create_lesson', { unit_id: x.unit.id, title: 'L', position: 5 }, /^position 5 is out of range: unit .* give a position from 1 to 2$/);
    await refused('create_activity', { ...activityArgs(), position: 1_000_000 }, /^position 1000000 is out of range: lesson/);
    await refused('update_unit', { id: x.unit.id, position: 2 }, /^position 2 is out of range: program .* has 1 unit, so give a position from 1 to 1$/);
    await refused('update_activity', { id: x.activity.id, position: 2, title: 'not this either' }, /^position 2 is out of range: lesson/);
  });
});

describe('ids of the wrong record type', () => {
  it('say which record the id really is, and write nothing', async () => {
    const { program, unit, lesson, activity } = x;
    await refused('create_unit', { program_id: lesson.id, title: 'U' }, `program ${lesson.id} not found (that id is a lesson)`);
    await refused('create_lesson', { unit_id: program.id, title: 'L' }, `unit ${program.id} not found (that id is a program)`);
    await refused('create_activity', { ...activityArgs(), lesson_id: activity.id }, `lesson ${activity.id} not found (that id is an activity)`);
    await refused('get_program', { id: unit.id }, `program ${unit.id} not found (that id is a unit)`);
    await refused('update_unit', { id: program.id, title: 'x' }, `unit ${program.id} not found (that id is a program)`);
    await refused('update_activity', { id: lesson.id, title: 'x' }, `activity ${lesson.id} not found (that id is a lesson)`);
    await refused('delete_lesson', { id: activity.id }, `lesson ${activity.id} not found (that id is an activity)`);
    await refused('delete_program', { id: unit.id }, `program ${unit.id} not found (that id is a unit)`);
    await refused('instantiate_program', { program_id: activity.id, tenant: 'acme' }, `program ${activity.id} not found (that id is an activity)`);
  });
});

describe('missing, extra and mistyped arguments', () => {
  it.each([
    ['create_activity', () => ({ lesson_id: x.lesson.id, title: 'A', kind: 'document', rubric: [{ criterion: 'c' }] }), /spec/],
    ['create_program', () => ({ tenant: 'acme' }), /title/],
    ['create_program', () => ({ tenant: 'acme', title: 'x', tenant_id: x.program.tenant_id }), /tenant_id/],
    ['update_activity', () => ({ id: x.activity.id, lesson_id: x.lesson.id }), /lesson_id/],
    ['create_lesson', () => ({ unit_id: 42, title: 'L' }), /unit_id/],
    ['get_program', () => ({ id: `${x.program.id}x` }), /id/],
    ['import_program', () => ({ ...importArgs(), units: 'all of them' }), /units/],
  ] as const)('%s %#', (name, args, field) => invalid(name, args(), field));
});
