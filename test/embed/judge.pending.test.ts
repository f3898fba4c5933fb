/**
 * POST /v1/embed/judge — submissions that stay pending: no model configured, or every attempt
 * of the grading run fails (HTTP 500, garbage, too slow). The submission is stored with its job,
 * the result stays in_progress and nothing is counted (judge.queue.test.ts shows the job being
 * graded later).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, testJudge, type TestApp } from '../helpers/harness.ts';
import { startTestIdp, type TestIdp } from '../helpers/test-idp.ts';
import { startTestModel, type TestModel } from '../helpers/test-model.ts';
import { post, seedActivity, type SeededActivity } from './fixtures.ts';

let withModel: TestApp;
let noModel: TestApp;
let impatient: TestApp;
let idp: TestIdp;
let model: TestModel;
let doc: SeededActivity;

beforeAll(async () => {
  [idp, model] = await Promise.all([startTestIdp(), startTestModel()]);
  const judge = testJudge(model.baseUrl);
  withModel = await startApp({ judge });
  // Two more apps on the same database: one without a model, one with a short model timeout.
  noModel = await startApp({ judge: null }, { db: withModel.db });
  impatient = await startApp({ judge: { ...judge, timeoutMs: 400 } }, { db: withModel.db });
  await withModel.op('tenant.create', { slug: 'acme' });
  await withModel.op('idp.set', { tenant: 'acme', issuer: idp.issuer, jwks_url: idp.jwksUrl });
  doc = await seedActivity(withModel, 'acme');
});
afterAll(async () => {
  await impatient.close();
  await noModel.close();
  await withModel.close();
  await Promise.all([idp.close(), model.close()]);
});

const submit = async (app: TestApp, sub: string, content = 'complete work') =>
  post(
    app,
    '/v1/embed/judge',
    { tenant: 'acme', activity_id: doc.activityId, artifact: { kind: 'document', content } },
    { authorization: `Bearer ${await idp.sign({ sub })}` },
  );

async function expectPending(res: { status: number; body: any }, reason: string) {
  expect(res.status).toBe(200);
  expect(Object.keys(res.body).sort()).toEqual(['artifact_id', 'reason', 'result_id', 'status']);
  expect(res.body).toMatchObject({ status: 'pending', reason });
  const db = withModel.db;
  const [result] = await db.query<{ status: string; score: number | null; user_id: string }>(
    'select status, score, user_id from activity_results where id = $1',
    [res.body.result_id],
  );
  expect(result).toMatchObject({ status: 'in_progress', score: null });
  const [artifact] = await db.query<{ content: string; verification: any }>('select content, verification from artifacts where id = $1', [
    res.body.artifact_id,
  ]);
  expect(artifact!.content).toBeTypeOf('string');
  expect(artifact!.verification.status).toBe('pending');
  const progress = await db.query('select 1 from progress where user_id = $1 and completed_count > 0', [result!.user_id]);
  expect(progress).toEqual([]);
  return artifact!.verification;
}

describe('POST /v1/embed/judge 200 pending', () => {
  it('stores the submission and answers pending when no model is configured', async () => {
    const before = model.requests.length;
    const v = await expectPending(await submit(noModel, 'no-model'), 'queued');
    expect(v).toEqual({ status: 'pending' });
    expect(model.requests.length).toBe(before);
  });

  it('answers pending when the model fails with HTTP 500', async () => {
    model.setMode('fail-500');
    const v = await expectPending(await submit(withModel, 'model-500'), 'model_error');
    expect(v.error).toBe('model_error');
  });

  it('answers not_gradable when the model answers garbage every time, and holds nothing against the learner', async () => {
    model.setMode('garbage');
    const res = await submit(withModel, 'model-garbage');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'not_gradable', reason: 'invalid_output' });
    const [result] = await withModel.db.query<{ status: string; score: number | null }>('select status, score from activity_results where id = $1', [res.body.result_id]);
    expect(result).toMatchObject({ status: 'in_progress', score: null });
  });

  it('answers pending when the model is too slow for every attempt', async () => {
    model.setMode('slow');
    const v = await expectPending(await submit(impatient, 'model-slow'), 'timeout');
    expect(v.error).toBe('timeout');
  });

  it('grades a later submission of the same learner once the model is back', async () => {
    model.setMode('fail-500');
    const first = await submit(withModel, 'comes-back');
    model.setMode('grade');
    const second = await submit(withModel, 'comes-back');
    expect(second.body.status).toBe('passed');
    expect(second.body.result_id).toBe(first.body.result_id);
  });

  it('keeps a completed result completed while a new submission is pending', async () => {
    model.setMode('grade');
    const pass = await submit(withModel, 'done-then-pending');
    expect(pass.body.status).toBe('passed');
    const pending = await submit(noModel, 'done-then-pending');
    expect(pending.body.status).toBe('pending');
    const [result] = await withModel.db.query<{ status: string }>('select status from activity_results where id = $1', [pass.body.result_id]);
    expect(result!.status).toBe('completed');
  });
});
