/**
 * Shutdown hands running grading jobs back to the queue (issue #11; src/embed/queue/index.ts `stop`, run
 * by the app's onClose in src/http/shutdown.ts): a grading under way when the app closes is
 * aborted at once, its job is runnable again (`created`) rather than left active until its lease
 * ends, and the next process grades it without waiting.
 */
import { describe, expect, it } from 'vitest';
import { startApp, testJudge, useFreshDb, useServer } from '../helpers/harness.ts';
import { startTestIdp } from '../helpers/test-idp.ts';
import { startTestModel } from '../helpers/test-model.ts';
import { embedSettings, post, seedActivity, verificationOf } from '../embed/fixtures.ts';
import { eventually } from '../helpers/wait.ts';

const idp = useServer(() => startTestIdp());
const model = useServer(() => startTestModel());
const store = useFreshDb();

const settings = () => ({
  judge: testJudge(model.baseUrl, { timeoutMs: 60_000 }),
  embed: embedSettings({ judgePollSeconds: 0.5, judgeWaitMs: 500, judgeAttempts: 1 }),
});

describe('a grading under way at shutdown', () => {
  it('goes back to the queue at once and is graded by the next process', async () => {
    const first = await startApp(settings(), { db: store.db });
    await first.op('tenant.create', { slug: 'acme' });
    await first.op('idp.set', { tenant: 'acme', issuer: idp.issuer, jwks_url: idp.jwksUrl });
    const activity = await seedActivity(first, 'acme');

    model.setMode('slow');
    const res = await post(
      first,
      '/v1/embed/judge',
      { tenant: 'acme', activity_id: activity.activityId, artifact: { kind: 'document', content: 'work under way at shutdown' } },
      { authorization: `Bearer ${await idp.sign({ sub: 'learner' })}` },
    );
    expect(res.body.status).toBe('pending');
    await eventually(async () => model.requests.length > 0, 10_000, 'the model to receive the grading');

    const closing = Date.now();
    await first.app.close();
    expect(Date.now() - closing).toBeLessThan(5000);
    const [job] = await store.db.query<{ state: string }>('select state from pgboss.job where id = $1', [res.body.artifact_id]);
    expect(job?.state).toBe('created');

    model.setMode('grade');
    const second = await startApp(settings(), { db: store.db });
    try {
      const verdict = await eventually(
        async () => {
          const v = await verificationOf(second, res.body.artifact_id);
          return v?.status === 'passed' ? v : undefined;
        },
        15_000,
        'the next process to grade the handed-back job',
      );
      expect(verdict.runs).toBe(1);
    } finally {
      await second.app.close();
    }
  });
});
