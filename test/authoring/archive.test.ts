/**
 * archive_* / unarchive_* with learner results present (issue #16), through the MCP SDK client,
 * the embed judge and reads, and the Results API: archived content — and everything under an
 * archived parent — is hidden from learners and refuses submissions (409 `archived`), stays
 * readable to authors and in the Results API, and keeps its results; unarchiving brings it back.
 * Bad input (unknown, foreign, wrong-kind ids; a learner or another tenant's author) is an
 * `isError` result naming the problem, with nothing written.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { countRows, expectError } from '../embed/fixtures.ts';
import { connect, contentSnapshot, fails, ok, type Structured } from './helpers.ts';
import { get, importTree, learnerSession, submit, useLifecycleWorld } from './lifecycle-world.ts';

const x = useLifecycleWorld();
let tree: Structured;
let learner: string;

beforeAll(async () => {
  tree = await importTree(x.author, 'acme');
  learner = await learnerSession(x.w, 'learner-1');
});

const unit = (u: number) => tree.units[u - 1];
const lesson = (u: number, l: number) => unit(u).lessons[l - 1];
const activity = (u: number, l: number, a: number) => lesson(u, l).activities[a - 1];
const api = (path: string) => get(x.w, path, x.apiKey);
/** Activity ids in the program as `token`'s caller reads it over MCP. */
async function visibleActivities(token: string): Promise<string[]> {
  const client = await connect(x.w.t, token);
  try {
    const program = await client.callTool({ name: 'get_program', arguments: { id: tree.id } });
    if (program.isError) return [];
    const t = program.structuredContent as Structured;
    return t.units.flatMap((u: Structured) => u.lessons.flatMap((l: Structured) => l.activities.map((a: Structured) => a.id)));
  } finally {
    await client.close();
  }
}

describe('an archived activity with results', () => {
  it('is hidden from learners and refuses submissions; authors and the Results API still see it with its results', async () => {
    const a = activity(1, 1, 1);
    const passed = await submit(x.w, learner, a.id);
    expect(passed.body).toMatchObject({ status: 'passed' });

    const archived = await ok(x.author, 'archive_activity', { id: a.id });
    expect(archived).toMatchObject({ id: a.id, archived: true, archived_at: expect.any(String) });

    // learners: the activity is gone from their reads, their MCP reads and the judge
    expect((await get(x.w, `/v1/embed/activities/${a.id}`, learner)).status).toBe(404);
    expect(await visibleActivities(learner)).not.toContain(a.id);
    const artifacts = await countRows(x.w.t, 'artifacts');
    const refused = await submit(x.w, learner, a.id);
    expectError(refused, 409, 'archived');
    expect(refused.body.error.message).toBe(`activity ${a.id} is archived: it no longer accepts submissions`);
    expect(await countRows(x.w.t, 'artifacts')).toBe(artifacts);
    // …but the learner's own result is still theirs to read
    expect((await get(x.w, `/v1/embed/results/${passed.body.result_id}`, learner)).body).toMatchObject({ status: 'completed', score: 100 });

    // authors: still there
    expect(await visibleActivities(x.authorToken)).toContain(a.id);
    // Results API: the result, its artifact and the activity (with archived_at) are served
    const results = await api(`/v1/activity-results?activity_id=${a.id}`);
    expect(results.body.data).toEqual([expect.objectContaining({ id: passed.body.result_id, status: 'completed', score: 100 })]);
    const outline = await api(`/v1/programs/${tree.id}`);
    const listed = outline.body.units[0].lessons[0].activities[0];
    expect(listed.id).toBe(a.id);
    expect(Date.parse(listed.archived_at)).toBe(Date.parse(archived.archived_at));
    expect(outline.body.units[0].archived_at).toBeNull();

    // unarchive: learners see it and may submit again
    const back = await ok(x.author, 'unarchive_activity', { id: a.id });
    expect(back).toMatchObject({ archived: false, archived_at: null });
    expect((await get(x.w, `/v1/embed/activities/${a.id}`, learner)).status).toBe(200);
    expect((await submit(x.w, learner, a.id)).body).toMatchObject({ status: 'passed' });
  });

  it('archiving twice keeps the first archived_at; unarchiving what is not archived changes nothing', async () => {
    const a = activity(1, 1, 2);
    const first = await ok(x.author, 'archive_activity', { id: a.id });
    const again = await ok(x.author, 'archive_activity', { id: a.id });
    expect(again.archived_at).toBe(first.archived_at);
    await ok(x.author, 'unarchive_activity', { id: a.id });
    expect(await ok(x.author, 'unarchive_activity', { id: a.id })).toMatchObject({ archived: false, archived_at: null });
  });
});

describe('an archived parent', () => {
  it('hides everything under it; a child stays hidden until its archived parent comes back', async () => {
    const u = unit(2);
    const a = activity(2, 1, 1);
    const partnerProgress = async () => (await api(`/v1/progress?program_id=${tree.id}`)).body.data[0];
    const before = await partnerProgress();
    expect(before.total_count).toBe(8);
    await ok(x.author, 'archive_unit', { id: u.id });
    expect((await get(x.w, `/v1/embed/activities/${a.id}`, learner)).status).toBe(404);
    expectError(await submit(x.w, learner, a.id), 409, 'archived');
    const progress = await get(x.w, `/v1/embed/progress?program_id=${tree.id}`, learner);
    expect(progress.body.data[0].total_count).toBe(4); // unit 1's four activities; unit 2's are archived
    // The partner's dashboard counts the same, and its sync feed sees the row change (migration 0130).
    const after = await partnerProgress();
    expect(after).toMatchObject({ total_count: 4, completed_count: before.completed_count });
    expect(after.updated_at > before.updated_at).toBe(true);
    const feed = await api(`/v1/progress?program_id=${tree.id}&updated_since=${encodeURIComponent(after.updated_at)}`);
    expect(feed.body.data.map((r: Structured) => r.svc_user_id)).toContain(after.svc_user_id);
    expect(await visibleActivities(learner)).toEqual(tree.units[0].lessons.flatMap((l: Structured) => l.activities.map((y: Structured) => y.id)));

    // a lesson created (or an activity added) under the archived unit is archived with it
    const late = await ok(x.author, 'create_lesson', { unit_id: u.id, title: 'Late' });
    expect(late).toMatchObject({ archived: true, archived_at: null });

    // the activity unarchived on its own is still hidden: its unit is archived
    await ok(x.author, 'archive_activity', { id: a.id });
    const result = await x.author.callTool({ name: 'unarchive_activity', arguments: { id: a.id } });
    expect(result.structuredContent).toMatchObject({ archived: true, archived_at: null });
    expect((result.content as { text: string }[])[0]!.text).toMatch(/still hidden from learners: a record above it is archived/);
    expect((await get(x.w, `/v1/embed/activities/${a.id}`, learner)).status).toBe(404);

    await ok(x.author, 'unarchive_unit', { id: u.id });
    expect((await get(x.w, `/v1/embed/activities/${a.id}`, learner)).status).toBe(200);
    expect((await get(x.w, `/v1/embed/progress?program_id=${tree.id}`, learner)).body.data[0].total_count).toBe(8);
    expect((await partnerProgress()).total_count).toBe(8);
    await ok(x.author, 'delete_lesson', { id: late.id });
  });

  it("an archived program leaves the learner's progress and reads; the Results API still lists it", async () => {
    await ok(x.author, 'archive_program', { id: tree.id });
    expect((await get(x.w, '/v1/embed/progress', learner)).body.data).toEqual([]);
    expectError(await get(x.w, `/v1/embed/progress?program_id=${tree.id}`, learner), 404, 'not_found');
    expectError(await submit(x.w, learner, activity(1, 2, 1).id), 409, 'archived');
    const listed = await api('/v1/programs');
    expect(listed.body.data.find((p: Structured) => p.id === tree.id)).toMatchObject({ archived_at: expect.any(String) });
    expect((await api(`/v1/activity-results?activity_id=${activity(1, 1, 1).id}`)).body.data).toHaveLength(1);
    await ok(x.author, 'unarchive_program', { id: tree.id });
    expect((await get(x.w, '/v1/embed/progress', learner)).body.data).toHaveLength(1);
  });
});

describe('refusals: nothing written', () => {
  it("unknown, foreign and wrong-kind ids; a learner; another tenant's author", async () => {
    const globex = await importTree(x.author, 'globex', 1, 1, 1);
    const before = await contentSnapshot(x.w.t);
    const unknown = '01234567-89ab-7def-8123-456789abcdef';
    expect(await fails(x.author, 'archive_activity', { id: unknown })).toBe(`activity ${unknown} not found`);
    expect(await fails(x.outsider, 'archive_program', { id: tree.id })).toBe(`program ${tree.id} not found`);
    expect(await fails(x.outsider, 'unarchive_unit', { id: unit(1).id })).toBe(`unit ${unit(1).id} not found`);
    expect(await fails(x.author, 'archive_lesson', { id: unit(1).id })).toBe(`lesson ${unit(1).id} not found (that id is a unit)`);
    const asLearner = await connect(x.w.t, learner);
    try {
      expect(await fails(asLearner, 'archive_activity', { id: activity(1, 1, 1).id })).toBe('not allowed: you are not an author of that tenant');
      expect(await fails(asLearner, 'archive_program', { id: globex.id })).toBe(`program ${globex.id} not found`);
    } finally {
      await asLearner.close();
    }
    expect(await contentSnapshot(x.w.t)).toEqual(before);
  });
});
