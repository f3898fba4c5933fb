/**
 * POST /v1/embed/judge — nothing lost: bounded retries inside a grading run, the durable queue
 * when every attempt fails (model down, then up), a backlog graded by a process that gets a
 * model later, pending submissions stored before the queue existed, and 100 concurrent
 * submissions each graded exactly once.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, testJudge, useFreshDb, useServer, type TestApp } from '../helpers/harness.ts';
import type { JudgeConfig } from '../../src/config.ts';
import { startTestIdp } from '../helpers/test-idp.ts';
import { startTestModel } from '../helpers/test-model.ts';
import { recordOutcome } from '../../src/embed/grading/verdict.ts';
import { countRows, embedSettings, post, seedActivity, verificationOf, type SeededActivity } from './fixtures.ts';
import { eventually } from '../helpers/wait.ts';

const idp = useServer(() => startTestIdp());
const model = useServer(() => startTestModel());
const store = useFreshDb();
let t: TestApp;
let doc: SeededActivity;
let judge: JudgeConfig;

beforeAll(async () => {
  judge = testJudge(model.baseUrl);
  // Apps come and go on one database (restarts).
  t = await startApp(
    { judge, embed: embedSettings({ judgePollSeconds: 0.5, judgeRetryDelaySeconds: 1, judgeAttempts: 2, judgeWaitMs: 5000 }) },
    { db: store.db },
  );
  await t.op('tenant.create', { slug: 'acme' });
  await t.op('idp.set', { tenant: 'acme', issuer: idp.issuer, jwks_url: idp.jwksUrl });
  doc = await seedActivity(t, 'acme');
});
afterAll(() => t?.close()); // the tests restart it: not a fixture

const submit = async (app: TestApp, sub: string, content = 'complete work', activity = doc) =>
  post(
    app,
    '/v1/embed/judge',
    { tenant: 'acme', activity_id: activity.activityId, artifact: { kind: 'document', content } },
    { authorization: `Bearer ${await idp.sign({ sub })}` },
  );

const graded = (app: TestApp, artifactId: string) =>
  eventually(
    async () => {
      const v = await verificationOf(app, artifactId);
      return v?.status === 'passed' || v?.status === 'failed' ? v : undefined;
    },
    20_000,
    `artifact ${artifactId} to be graded`,
  );

const progressCount = async (app: TestApp, resultId: string) =>
  (
    await app.db.query<{ completed_count: number }>(
      `select p.completed_count from progress p join activity_results r on r.user_id = p.user_id and r.program_id = p.program_id where r.id = $1`,
      [resultId],
    )
  )[0]?.completed_count;

describe('bounded retries within one grading run', () => {
  it.each([['fail-500'], ['rate-limit'], ['garbage']] as const)('retries after %s and answers the verdict', async (mode) => {
    model.setMode('grade');
    const before = model.requests.length;
    model.failNext(1, mode);
    const res = await submit(t, `retry-${mode}`);
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('passed');
    expect(model.requests.length - before).toBe(2);
    expect((await verificationOf(t, res.body.artifact_id)).runs).toBe(1);
  });
});

describe('the durable queue', () => {
  it('model down then up: pending at first, graded later, result and progress updated', async () => {
    model.setMode('fail-500');
    const res = await submit(t, 'down-then-up');
    expect(res.body.status).toBe('pending');
    const v = await verificationOf(t, res.body.artifact_id);
    expect(v).toMatchObject({ status: 'pending', error: 'model_error', runs: 1 });
    const [{ status }] = await t.db.query<{ status: string }>('select status from activity_results where id = $1', [res.body.result_id]);
    expect(status).toBe('in_progress');

    model.setMode('grade');
    const verdict = await graded(t, res.body.artifact_id);
    expect(verdict).toMatchObject({ status: 'passed', score: 100 });
    expect(verdict.runs).toBeGreaterThanOrEqual(2);
    const [result] = await t.db.query<{ status: string; completed_at: string | null }>('select status, completed_at from activity_results where id = $1', [
      res.body.result_id,
    ]);
    expect(result!.status).toBe('completed');
    expect(result!.completed_at).not.toBeNull();
    expect(await progressCount(t, res.body.result_id)).toBe(1);
  });

  it('no model at submit time: a process started later with a model grades the backlog', async () => {
    model.setMode('grade');
    const unjudged = await startApp({ judge: null }, { db: store.db });
    const other = await seedActivity(t, 'acme', { title: 'backlog' });
    const before = model.requests.length;
    // `t` idles for a minute between looks, so only the new process can pick these up.
    await t.close();
    const responses = await Promise.all(['b1', 'b2', 'b3'].map((sub) => submit(unjudged, `backlog-${sub}`, 'complete work', other)));
    expect(responses.map((r) => r.body.status)).toEqual(['pending', 'pending', 'pending']);
    expect(model.requests.length).toBe(before);
    await unjudged.close();

    t = await startApp({ judge, embed: embedSettings({ judgePollSeconds: 60, judgeAttempts: 2 }) }, { db: store.db });
    for (const r of responses) expect(await graded(t, r.body.artifact_id)).toMatchObject({ status: 'passed' });
    expect(model.requests.length - before).toBe(3);
    for (const r of responses) expect(await progressCount(t, r.body.result_id)).toBe(1);
  });

  it('grades pending submissions that have no job (stored before the queue existed)', async () => {
    const res = await submit(t, 'pre-queue');
    await graded(t, res.body.artifact_id);
    // An old-style pending artifact: same learner and result, no job.
    const [artifact] = await t.db.query<{ id: string }>(
      `insert into artifacts (tenant_id, result_id, activity_id, user_id, kind, content, verification)
       select tenant_id, result_id, activity_id, user_id, kind, 'legacy work', '{"status": "pending"}'::jsonb from artifacts where id = $1
       returning id`,
      [res.body.artifact_id],
    );
    expect(await countRows(t, 'pgboss.job', 'id = $1', [artifact!.id])).toBe(0);
    await t.close();
    t = await startApp({ judge, embed: embedSettings({ judgePollSeconds: 0.5, judgeRetryDelaySeconds: 1, judgeAttempts: 2 }) }, { db: store.db });
    expect(await graded(t, artifact!.id)).toMatchObject({ status: 'passed' });
    expect(model.artifacts().filter((a) => a.includes('legacy work'))).toHaveLength(1);
  });
});

describe('exactly once', () => {
  it('records a verdict only while the artifact is pending: a second grading changes nothing', async () => {
    model.setMode('grade');
    const pass = await submit(t, 'twice', 'complete work');
    expect(pass.body.status).toBe('passed');
    const stored = await verificationOf(t, pass.body.artifact_id);
    const again = await t.db.transaction((tx) =>
      recordOutcome(tx, doc.tenantId, pass.body.artifact_id, { status: 'passed', feedback: 'again' }, { kind: 'pass', score: 100 }),
    );
    expect(again).toBe(false);
    expect(await verificationOf(t, pass.body.artifact_id)).toEqual(stored);
    expect(await progressCount(t, pass.body.result_id)).toBe(1);
  });
});

describe('a run longer than its lease', () => {
  it('keeps its job by renewing the lease: graded once, one model call', async () => {
    const app = await startApp(
      { judge: testJudge(model.baseUrl, { timeoutMs: 20_000 }), embed: embedSettings({ judgePollSeconds: 0.2, judgeLeaseSeconds: 6, judgeWaitMs: 25_000 }) },
      { db: store.db },
    );
    try {
      model.setMode('grade');
      model.setDelay(10_000); // well past the 6 s lease; maintenance looks every 2 s
      const answer = submit(app, 'slow-but-alive', 'slow complete work');
      // While the run lasts its job stays active: the lease moves forward, never expires.
      const states = new Set<string>();
      const renewals = new Set<string>();
      const watch = setInterval(() => {
        void store.db
          .query<{ state: string; started_on: string }>(
            `select j.state, j.started_on::text from pgboss.job j join artifacts a on a.id = j.id where a.content = 'slow complete work'`,
          )
          .then((rows) => {
            for (const r of rows) {
              states.add(r.state);
              if (r.state === 'active') renewals.add(r.started_on);
            }
          });
      }, 300);
      const res = await answer;
      clearInterval(watch);
      expect(res.body.status).toBe('passed');
      expect([...states].filter((x) => x !== 'active' && x !== 'created' && x !== 'completed')).toEqual([]);
      expect(renewals.size).toBeGreaterThanOrEqual(3);
      expect(model.artifacts().filter((a) => a.includes('slow complete work'))).toHaveLength(1);
    } finally {
      model.setDelay(0);
      await app.close();
    }
  }, 40_000);
});

describe('100 concurrent submissions', () => {
  it('answers every one without a 5xx and grades each exactly once', async () => {
    model.setMode('grade');
    const activities = [doc, await seedActivity(t, 'acme', { title: 'second' })];
    const tokens = await Promise.all(Array.from({ length: 20 }, (_, i) => idp.sign({ sub: `crowd-${i}` })));
    const responses = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        post(
          t,
          '/v1/embed/judge',
          { tenant: 'acme', activity_id: activities[i % 2]!.activityId, artifact: { kind: 'document', content: `work #${i}# done` } },
          { authorization: `Bearer ${tokens[Math.floor(i / 5)]}` },
        ),
      ),
    );
    expect(responses.map((r) => r.status)).toEqual(Array(100).fill(200));
    expect(new Set(responses.map((r) => r.body.artifact_id)).size).toBe(100);
    for (const r of responses) expect(['passed', 'pending']).toContain(r.body.status);
    for (const r of responses) expect(await graded(t, r.body.artifact_id)).toMatchObject({ status: 'passed' });
    const seen = model.artifacts().flatMap((a) => [...a.matchAll(/work #(\d+)# done/g)].map((m) => Number(m[1])));
    expect(seen.sort((a, b) => a - b)).toEqual(Array.from({ length: 100 }, (_, i) => i));
    // 20 learners × 2 activities, each counted once in progress.
    const [{ total }] = await t.db.query<{ total: number }>(
      `select sum(p.completed_count)::int as total from progress p join auth.identities i on i.provider_id like 'crowd-%'
         join users u on u.auth_user_id = i.user_id where p.user_id = u.id`,
    );
    expect(total).toBe(40);
  });
});
