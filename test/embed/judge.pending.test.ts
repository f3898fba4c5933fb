/**
 * POST /v1/embed/judge — submissions that stay pending: no model configured, or every attempt
 * of the grading run fails (HTTP 500, garbage, too slow). The submission is stored with its job,
 * the result stays in_progress and nothing is counted (judge.queue.test.ts shows the job being
 * graded later).
 */
import { describe, expect, it } from 'vitest';
import { startApp, testJudge, useApp, useServer, type TestApp } from '../helpers/harness.ts';
import { post, startEmbedWorld } from './fixtures.ts';

// The app graded by the test model, and two more apps on its database: one without a model, one
// with a short model timeout.
const w = useServer(() => startEmbedWorld());
const noModel = useApp(() => startApp({ judge: null }, { db: w.t.db }));
const impatient = useApp(() => startApp({ judge: testJudge(w.model.baseUrl, { timeoutMs: 400 }) }, { db: w.t.db }));

const submit = async (app: TestApp, sub: string, content = 'complete work') =>
  post(
    app,
    '/v1/embed/judge',
    { tenant: 'acme', activity_id: w.doc.activityId, artifact: { kind: 'document', content } },
    { authorization: `Bearer ${await w.idp.sign({ sub })}` },
  );

async function expectPending(res: { status: number; body: any }, reason: string) {
  expect(res.status).toBe(200);
  expect(Object.keys(res.body).sort()).toEqual(['artifact_id', 'reason', 'result_id', 'status']);
  expect(res.body).toMatchObject({ status: 'pending', reason });
  const db = w.t.db;
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
    const before = w.model.requests.length;
    const v = await expectPending(await submit(noModel, 'no-model'), 'queued');
    expect(v).toEqual({ status: 'pending' });
    expect(w.model.requests.length).toBe(before);
  });

  it.each([
    { when: 'fails with HTTP 500', mode: 'fail-500', app: () => w.t, sub: 'model-500', reason: 'model_error' },
    { when: 'is too slow for every attempt', mode: 'slow', app: () => impatient, sub: 'model-slow', reason: 'timeout' },
  ] as const)('answers pending when the model $when', async ({ mode, app, sub, reason }) => {
    w.model.setMode(mode);
    const v = await expectPending(await submit(app(), sub), reason);
    expect(v.error).toBe(reason);
  });

  it('answers not_gradable when the model answers garbage every time, and holds nothing against the learner', async () => {
    w.model.setMode('garbage');
    const res = await submit(w.t, 'model-garbage');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'not_gradable', reason: 'invalid_output' });
    const [result] = await w.t.db.query<{ status: string; score: number | null }>('select status, score from activity_results where id = $1', [
      res.body.result_id,
    ]);
    expect(result).toMatchObject({ status: 'in_progress', score: null });
  });

  it('grades a later submission of the same learner once the model is back', async () => {
    w.model.setMode('fail-500');
    const first = await submit(w.t, 'comes-back');
    w.model.setMode('grade');
    const second = await submit(w.t, 'comes-back');
    expect(second.body.status).toBe('passed');
    expect(second.body.result_id).toBe(first.body.result_id);
  });

  it('keeps a completed result completed while a new submission is pending', async () => {
    w.model.setMode('grade');
    const pass = await submit(w.t, 'done-then-pending');
    expect(pass.body.status).toBe('passed');
    const pending = await submit(noModel, 'done-then-pending');
    expect(pending.body.status).toBe('pending');
    const [result] = await w.t.db.query<{ status: string }>('select status from activity_results where id = $1', [pass.body.result_id]);
    expect(result!.status).toBe('completed');
  });
});
