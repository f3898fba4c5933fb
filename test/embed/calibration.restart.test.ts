/**
 * Calibration across a restart (issue #21), in-process on one database: the backlog sweep of a
 * starting worker leaves submissions held by the gate alone (graded already: no second model
 * call), and a new model noticed at start makes the report stale and queues a run
 * (`model_changed`) that grades under the new model.
 */
import { afterAll, expect, it } from 'vitest';
import { authorClient, connect, ok, signIn } from '../authoring/helpers.ts';
import { startApp, testJudge, useFreshDb, useServer, type TestApp } from '../helpers/harness.ts';
import { startTestIdp } from '../helpers/test-idp.ts';
import { startTestModel } from '../helpers/test-model.ts';
import { embedSettings, post, seedActivity, verificationOf } from './fixtures.ts';

const model = useServer(() => startTestModel());
const idp = useServer(() => startTestIdp());
const store = useFreshDb();
const apps: TestApp[] = [];
afterAll(async () => {
  for (const app of apps) await app.close().catch(() => {});
});

const start = async (modelName: string) => {
  const app = await startApp({ judge: testJudge(model.baseUrl, { model: modelName }), embed: embedSettings({ judgePollSeconds: 1 }) }, { db: store.db });
  apps.push(app);
  return app;
};

it('a held submission is not graded again at restart; a new model queues a run that grades under it', async () => {
  const first = await start('model-a');
  const author = await authorClient(first, 'acme');
  await first.op('idp.set', { tenant: 'acme', issuer: idp.issuer, jwks_url: idp.jwksUrl });
  const s = await seedActivity(first, 'acme');
  const add = (content: string, passed: boolean) =>
    ok(author.client, 'add_calibration_example', { activity_id: s.activityId, artifact: { kind: 'document', content }, expected: { passed } });
  await add('A finished design note.', true);
  await add('TODO', false);
  // No report yet: the gate holds the learner's graded submission.
  const held = await post(
    first,
    '/v1/embed/judge',
    { tenant: 'acme', activity_id: s.activityId, artifact: { kind: 'document', content: 'My note.' } },
    { authorization: `Bearer ${await idp.sign({ sub: 'l' })}` },
  );
  expect(held.body).toMatchObject({ status: 'pending', reason: 'calibration_required' });
  await author.client.close();
  await first.close();
  apps.pop();

  // Restart with another model: the starting worker's backlog sweep leaves the held submission alone.
  const calls = model.requests.length;
  const second = await start('model-b');
  const client = await connect(second, await signIn(second, 'author@acme.test', 'correct horse battery'));
  await new Promise((r) => setTimeout(r, 1500));
  expect(model.requests.length).toBe(calls);
  // Its job is still the completed one that held it (the sweep did not queue it again).
  const job = async () => (await second.db.query<{ output: unknown }>('select output from pgboss.job where id = $1', [held.body.artifact_id]))[0]?.output;
  expect(await job()).toEqual({ status: 'pending', reason: 'calibration_required' });
  expect(await verificationOf(second, held.body.artifact_id)).toMatchObject({ status: 'pending', reason: 'calibration_required' });
  const report = await ok(client, 'run_calibration', { activity_id: s.activityId });
  expect(report).toMatchObject({ status: 'done', model: 'model-b', gate: { passes: true } });
  // Released by the passing run, with the verdict graded before the restart.
  expect(await verificationOf(second, held.body.artifact_id)).toMatchObject({ status: 'passed', model: 'model-a', calibration: { report_id: report.id } });
  expect(model.requests.length - calls).toBe(2); // the two examples, and no second grading of the held submission

  // The model changes again: the report goes stale and a run is queued at start.
  await client.close();
  await second.close();
  apps.pop();
  const third = await start('model-c');
  const c3 = await connect(third, await signIn(third, 'author@acme.test', 'correct horse battery'));
  await expect
    .poll(async () => ok(c3, 'get_calibration_report', { activity_id: s.activityId }), { timeout: 20_000, interval: 250 })
    .toMatchObject({ status: 'done', reason: 'model_changed', model: 'model-c', stale: false });
  expect((await ok(c3, 'get_calibration_report', { activity_id: s.activityId, report_id: report.id })).stale).toBe(true);
  await c3.close();
});
