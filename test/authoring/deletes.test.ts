/**
 * Deletes never lose learners' work. Choice (see src/authoring/README.md): content that has
 * learner results is not deleted — the delete is refused with a message saying why, nothing is
 * removed or renumbered, and the results API still resolves the result with its activity.
 * Content without results is deleted (with everything under it) and the siblings close up.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { useApp, useFixture } from '../helpers/harness.ts';
import { fails, ok, type Structured, contentSnapshot, useAuthor } from './helpers.ts';

const t = useApp();
const author = useAuthor(t, 'acme');
const client = useFixture(async () => author.client);
let apiKey: string;

beforeAll(async () => {
  apiKey = (await t.op('key.create', { tenant: 'acme', name: 'dashboard' })).key;
});

const snapshot = () => contentSnapshot(t);

/** A program with two units, two lessons in the first, two activities in its first lesson. */
async function tree() {
  const activity = (title: string) => ({ title, kind: 'document', spec: 'Write', rubric: [{ criterion: 'c' }] });
  const imported = await ok(client, 'import_program', {
    tenant: 'acme',
    external_id: `deletes-${Math.random()}`,
    title: 'Graded',
    units: [
      {
        title: 'U1',
        lessons: [
          { title: 'L1', activities: [activity('A1'), activity('A2')] },
          { title: 'L2', activities: [activity('A3')] },
        ],
      },
      { title: 'U2', lessons: [] },
    ],
  });
  const u1 = imported.units[0];
  return {
    program: imported,
    u1,
    u2: imported.units[1],
    l1: u1.lessons[0],
    l2: u1.lessons[1],
    a1: u1.lessons[0].activities[0],
    a2: u1.lessons[0].activities[1],
  };
}

/** A learner's completed result on `activity`, as the embed judge would write it (as the owner). */
async function learnerResult(program: Structured, lesson: Structured, activity: Structured): Promise<string> {
  const [row] = await t.db.query<{ id: string }>(
    `insert into activity_results (tenant_id, activity_id, lesson_id, program_id, user_id, status, score, completed_at)
     select $1, $2, $3, $4, u.id, 'completed', 90, now() from users u where u.auth_user_id = $5 returning id`,
    [program.tenant_id, activity.id, lesson.id, program.id, author.user.id],
  );
  return row!.id;
}

describe('content with learner results', () => {
  it('is not deleted at any level: refused, nothing removed or renumbered, the result still resolves', async () => {
    const x = await tree();
    const resultId = await learnerResult(x.program, x.l1, x.a1);
    const before = await snapshot();
    expect(await fails(client, 'delete_activity', { id: x.a1.id })).toBe(`activity ${x.a1.id} cannot be deleted: it has learner results`);
    expect(await fails(client, 'delete_lesson', { id: x.l1.id })).toBe(`lesson ${x.l1.id} cannot be deleted: an activity in it has learner results`);
    expect(await fails(client, 'delete_unit', { id: x.u1.id })).toBe(`unit ${x.u1.id} cannot be deleted: an activity in it has learner results`);
    expect(await fails(client, 'delete_program', { id: x.program.id })).toBe(
      `program ${x.program.id} cannot be deleted: an activity in it has learner results`,
    );
    expect(await snapshot()).toEqual(before);

    const res = await fetch(`${t.url}/v1/activity-results/${resultId}`, { headers: { authorization: `Bearer ${apiKey}` } });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ id: resultId, activity_id: x.a1.id, lesson_id: x.l1.id, status: 'completed' });
    const tree2 = await ok(client, 'get_program', { id: x.program.id, depth: 'full' });
    expect(tree2.units[0].lessons[0].activities.map((a: Structured) => a.id)).toEqual([x.a1.id, x.a2.id]);
  });

  it('what has no results around it can still go, and the siblings close up', async () => {
    const x = await tree();
    await learnerResult(x.program, x.l1, x.a1);
    await ok(client, 'delete_activity', { id: x.a2.id }); // a sibling without results
    await ok(client, 'delete_lesson', { id: x.l2.id });
    await ok(client, 'delete_unit', { id: x.u2.id });
    const after = await ok(client, 'get_program', { id: x.program.id, depth: 'full' });
    expect(after.units.map((u: Structured) => [u.title, u.position])).toEqual([['U1', 1]]);
    expect(after.units[0].lessons.map((l: Structured) => [l.title, l.position])).toEqual([['L1', 1]]);
    expect(after.units[0].lessons[0].activities.map((a: Structured) => [a.title, a.position])).toEqual([['A1', 1]]);
  });
});

describe('content without results', () => {
  it('is deleted with everything under it; the siblings after it move up', async () => {
    const x = await tree();
    expect(await ok(client, 'delete_unit', { id: x.u1.id })).toMatchObject({ id: x.u1.id, title: 'U1' });
    const after = await ok(client, 'get_program', { id: x.program.id, depth: 'full' });
    expect(after.units.map((u: Structured) => [u.title, u.position])).toEqual([['U2', 1]]);
    const [row] = await t.db.query<{ n: number }>(`select count(*)::int as n from activities where program_id = $1`, [x.program.id]);
    expect(row!.n).toBe(0);
    expect(await ok(client, 'delete_program', { id: x.program.id })).toMatchObject({ id: x.program.id });
    expect(await fails(client, 'get_program', { id: x.program.id })).toBe(`program ${x.program.id} not found`);
  });
});
