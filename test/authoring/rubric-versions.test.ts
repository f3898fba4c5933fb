/**
 * Rubric versions (issue #16): editing what an activity is graded against (spec, rubric, kind,
 * pass threshold) over MCP after learners have verdicts makes a new rubric version; every verdict
 * keeps the version it was graded against, in its artifact's `verification` (Results API) and in
 * the embed reads' attempts. A title or position change makes no new version.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { ok, type Structured } from './helpers.ts';
import { get, importTree, learnerSession, submit, useLifecycleWorld } from './lifecycle-world.ts';

const x = useLifecycleWorld();
let activity: Structured;

beforeAll(async () => {
  activity = (await importTree(x.author, 'acme', 1, 1, 2)).units[0].lessons[0].activities[0];
});

/** The rubric_version of each artifact's verification, as the Results API serves it. */
async function versionsInResultsApi(): Promise<Record<string, number>> {
  const res = await get(x.w, `/v1/artifacts?activity_id=${activity.id}`, x.apiKey);
  return Object.fromEntries(res.body.data.map((a: Structured) => [a.id, a.verification.rubric_version]));
}

describe('a rubric edit after verdicts', () => {
  it('makes a new version; old verdicts keep theirs, new ones carry the new one', async () => {
    const learner = await learnerSession(x.w, 'versioned-1');
    const first = await submit(x.w, learner, activity.id);
    expect(first.body).toMatchObject({ status: 'passed' });

    const renamed = await ok(x.author, 'update_activity', { id: activity.id, title: 'Renamed', position: 2 });
    expect(renamed.rubric_version).toBe(1);

    const edited = await ok(x.author, 'update_activity', {
      id: activity.id,
      spec: 'Write a design note, now with a diagram.',
      rubric: [{ criterion: 'States the problem' }, { criterion: 'Has a diagram', weight: 2 }],
    });
    expect(edited.rubric_version).toBe(2);
    const second = await submit(x.w, learner, activity.id);
    expect(second.body).toMatchObject({ status: 'passed' });
    expect(second.body.criteria.map((c: Structured) => c.criterion)).toEqual(['States the problem', 'Has a diagram']);

    expect((await ok(x.author, 'update_activity', { id: activity.id, pass_threshold: 90 })).rubric_version).toBe(3);

    expect(await versionsInResultsApi()).toEqual({ [first.body.artifact_id]: 1, [second.body.artifact_id]: 2 });
    const result = await get(x.w, `/v1/embed/results/${first.body.result_id}`, learner);
    expect(result.body.attempts.map((a: Structured) => [a.artifact_id, a.rubric_version])).toEqual([
      [second.body.artifact_id, 2],
      [first.body.artifact_id, 1],
    ]);
    const read = await get(x.w, `/v1/embed/activities/${activity.id}`, learner);
    expect(read.body.result.attempts.map((a: Structured) => a.rubric_version)).toEqual([2, 1]);
  });
});
