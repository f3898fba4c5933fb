/**
 * A calibration run meets the tenant's model budget (issue #21): the calls are counted like a
 * learner's, a budget spent mid-run leaves the run `waiting` (no report, no wrong figures), and
 * it resumes when the window passes and then reports on every example.
 */
import { expect, it } from 'vitest';
import { authorClient, ok } from '../authoring/helpers.ts';
import { startApp, testJudge, useApp, useFixture, useServer } from '../helpers/harness.ts';
import { startTestModel } from '../helpers/test-model.ts';
import { clearOfHourBoundary } from '../helpers/wait.ts';
import { countRows, embedSettings, seedActivity } from './fixtures.ts';

let offsetMs = 0;
const model = useServer(() => startTestModel());
const t = useApp(() =>
  startApp(
    {
      judge: testJudge(model.baseUrl),
      embed: embedSettings({ judgePollSeconds: 1, tenantBudget: { callsPerHour: 3, callsPerDay: 100, tokensPerHour: 1e9, tokensPerDay: 1e9 } }),
    },
    { now: () => new Date(Date.now() + offsetMs) },
  ),
);
const a = useFixture(async () => (await authorClient(t, 'acme')).client);

it('waits when the budget is spent mid-run, then resumes and reports on every example', async () => {
  await clearOfHourBoundary(); // the budget is per UTC hour
  const s = await seedActivity(t, 'acme');
  for (let i = 0; i < 5; i++) {
    await ok(a, 'add_calibration_example', {
      activity_id: s.activityId,
      artifact: { kind: 'document', content: i % 2 ? `TODO ${i}` : `Done ${i}` },
      expected: { passed: i % 2 === 0 },
    });
  }
  const waiting = await ok(a, 'run_calibration', { activity_id: s.activityId, wait_seconds: 60 }); // answers as soon as the run waits
  expect(waiting).toMatchObject({ status: 'waiting', progress: { graded: 3, total: 5 }, waiting: { reason: 'budget_exhausted', limit: 'calls_per_hour' } });
  expect(waiting.cohen_kappa).toBeUndefined();
  expect(await countRows(t, 'model_calls', 'calibration_run_id = $1', [waiting.id])).toBe(3);
  // The gate stays closed on an unfinished run.
  expect(waiting.gate).toMatchObject({ passes: false, live: false });

  // The hour passes (the clock moves; the job's start time is reached): the run resumes.
  offsetMs = 3_600_000;
  await t.db.query('update pgboss.job set start_after = now() where id = $1', [waiting.id]);
  const status = async () => (await t.db.query<{ status: string }>('select status from calibration_runs where id = $1', [waiting.id]))[0]!.status;
  await expect.poll(status, { timeout: 20_000, interval: 250 }).toBe('done');
  offsetMs = 0; // the author's session token would have expired an hour on
  expect(await ok(a, 'get_calibration_report', { activity_id: s.activityId, report_id: waiting.id })).toMatchObject({
    status: 'done',
    n: 5,
    accuracy: 1,
    cost: { calls: 5 },
    waiting: null,
  });
}, 120_000);
