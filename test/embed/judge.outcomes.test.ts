/**
 * Outage vs. ungradable (issue #10, defect 2): a model that can never grade an artifact (malformed
 * output, a refusal, a request too long) costs exactly the bounded attempts and ends
 * `not_gradable`, with no further calls; a model that is down keeps the submission pending with
 * exponential backoff and is graded once when it is back, nothing lost; past the maximum age the
 * submission ends `failed` with `model_unavailable`; `Retry-After` is honoured; the learner's URL
 * is read once per run; every call sends a token cap, `temperature` and `seed`, and is in the
 * ledger with what is needed to replay the verdict.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { startApp, testJudge, useFixture, useServer, type TestApp } from '../helpers/harness.ts';
import { startTestModel } from '../helpers/test-model.ts';
import { countRows, embedSettings, post, seedActivity, useAppWithIdp, verificationOf } from './fixtures.ts';
import { eventually } from '../helpers/wait.ts';
import { startSite } from './servers.ts';

const ATTEMPTS = 3;

const model = useServer(() => startTestModel());
const site = useServer(() => startSite({ '/work': { type: 'text/html', body: '<html><body><h1>My shortener</h1><p>Hashes URLs.</p></body></html>' } }));
const { t, idp } = useAppWithIdp({ acme: {} }, () =>
  startApp({
    judge: testJudge(model.baseUrl),
    embed: embedSettings({ judgeAttempts: ATTEMPTS, judgePollSeconds: 0.2, judgeRetryDelaySeconds: 1, judgeRetryMaxDelaySeconds: 2, judgeWaitMs: 8000 }),
  }),
);
const doc = useFixture(() => seedActivity(t, 'acme'));
const page = useFixture(() => seedActivity(t, 'acme', { kind: 'site', title: 'a site' }));

const submit = async (app: TestApp, sub: string, artifact: Record<string, unknown> = { kind: 'document', content: 'complete work' }, activity = doc) =>
  post(app, '/v1/embed/judge', { tenant: 'acme', activity_id: activity.activityId, artifact }, { authorization: `Bearer ${await idp.sign({ sub })}` });

type ChatRequest = { messages: { role: string; content: unknown }[] } & Record<string, unknown>;
const userMessage = (r: ChatRequest) => {
  const content = r.messages.find((m) => m.role === 'user')?.content ?? '';
  return typeof content === 'string' ? content : JSON.stringify(content);
};
/** The requests the model received whose user message contains `text` (other submissions' calls may come in between). */
const requestsWith = (text: string) => (model.requests as ChatRequest[]).filter((r) => userMessage(r).includes(text));
/** Model calls whose artifact section contains `marker`. */
const callsFor = (marker: string) => model.artifacts().filter((a) => a.includes(marker)).length;
const ledger = (artifactId: string) =>
  t.db.query<{ outcome: string; run: number; attempt: number; prompt_tokens: number }>(
    'select outcome, run, attempt, prompt_tokens from model_calls where artifact_id = $1 order by started_at, run, attempt',
    [artifactId],
  );
const jobState = async (artifactId: string) => (await t.db.query<{ state: string }>('select state from pgboss.job where id = $1', [artifactId]))[0]?.state;
const pageHits = () => site.hits.filter((h) => h === 'GET /work').length;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('a model that can never grade the artifact', () => {
  it.each([
    ['garbage', 'invalid_output'],
    ['refuse', 'refused'],
    ['too-long', 'model_rejected'],
  ] as const)('%s → exactly the bounded attempts, then not_gradable (%s), and no further calls', async (mode, reason) => {
    model.setMode(mode);
    const marker = `ungradable-${mode}`;
    const hitsBefore = pageHits();
    const res = await submit(t, marker, { kind: 'site', ref_url: `${site.url}/work?${marker}` }, page);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'not_gradable', reason });
    expect(res.body.feedback).toMatch(/not counted against you/);
    expect(callsFor(marker)).toBe(ATTEMPTS);
    expect(pageHits() - hitsBefore).toBe(1); // read once for the run, not once per attempt
    const v = await verificationOf(t, res.body.artifact_id);
    expect(v).toMatchObject({ status: 'not_gradable', reason, runs: 1, usage: { calls: ATTEMPTS } });
    expect((await ledger(res.body.artifact_id)).map((c) => c.outcome)).toEqual(Array(ATTEMPTS).fill(reason));
    expect(await jobState(res.body.artifact_id)).toBe('completed');

    // Worker time passes (polls every 0.2 s, a backlog sweep): nothing calls the model again.
    await t.app.ready();
    await sleep(2500);
    expect(callsFor(marker)).toBe(ATTEMPTS);
    const [{ status }] = await t.db.query<{ status: string }>('select status from activity_results where id = $1', [res.body.result_id]);
    expect(status).toBe('in_progress');
    expect(await countRows(t, 'progress', 'completed_count > 0')).toBe(0);
  });
});

describe('a model that is down for a while, then back', () => {
  it('keeps the submission pending with growing delays, reads the URL once per run, and grades it once when back', async () => {
    model.setMode('drop');
    const marker = 'down-then-back';
    const hitsBefore = pageHits();
    const res = await submit(t, marker, { kind: 'site', ref_url: `${site.url}/work?${marker}` }, page);
    expect(res.body).toMatchObject({ status: 'pending', reason: 'unreachable' });
    const pending = await eventually(
      async () => {
        const v = await verificationOf(t, res.body.artifact_id);
        return v.runs >= 3 ? v : undefined;
      },
      20_000,
      'three runs',
    );
    expect(pending).toMatchObject({ status: 'pending', reason: 'unreachable', error: 'unreachable' });
    expect(Date.parse(pending.retry_at)).toBeGreaterThan(Date.parse(pending.attempted_at));
    model.setMode('grade');
    const v = await eventually(
      async () => {
        const x = await verificationOf(t, res.body.artifact_id);
        return x.status === 'passed' ? x : undefined;
      },
      20_000,
      'the verdict',
    );
    const calls = await ledger(res.body.artifact_id);
    expect(calls.filter((c) => c.outcome === 'ok')).toHaveLength(1);
    expect(calls.filter((c) => c.outcome === 'unreachable').length).toBe(ATTEMPTS * (v.runs - 1));
    expect(pageHits() - hitsBefore).toBe(v.runs); // once per run
    expect(v.usage.calls).toBe(calls.length);
    const [result] = await t.db.query<{ status: string }>('select status from activity_results where id = $1', [res.body.result_id]);
    expect(result!.status).toBe('completed');
    // Graded once: no further call.
    await sleep(1000);
    expect((await ledger(res.body.artifact_id)).length).toBe(calls.length);
  });

  it('honours a Retry-After longer than a pause within a run: one call, and the next run waits for it', async () => {
    model.setMode('rate-limit');
    model.setRetryAfter(30);
    let artifactId: string | undefined;
    try {
      const marker = 'retry-after-30';
      const res = await submit(t, marker, { kind: 'document', content: `${marker} complete work` });
      artifactId = res.body.artifact_id;
      expect(res.body).toMatchObject({ status: 'pending', reason: 'rate_limited' });
      expect(callsFor(marker)).toBe(1);
      const v = await verificationOf(t, res.body.artifact_id);
      expect(Date.parse(v.retry_at) - Date.parse(v.attempted_at)).toBeGreaterThanOrEqual(29_000);
      const [job] = await t.db.query<{ wait: number }>(`select extract(epoch from (start_after - now()))::float8 as wait from pgboss.job where id = $1`, [
        res.body.artifact_id,
      ]);
      expect(job!.wait).toBeGreaterThan(25);
    } finally {
      model.setRetryAfter(0);
      model.setMode('grade');
      // Its next run would come 30 s later, in the middle of the tests below.
      if (artifactId) await t.db.query('delete from pgboss.job where id = $1', [artifactId]);
    }
  });
});

describe('past the maximum age', () => {
  it('ends failed with model_unavailable, no score, and stops calling', async () => {
    const aged = await startApp({
      judge: testJudge(model.baseUrl),
      embed: embedSettings({ judgeAttempts: 1, judgePollSeconds: 0.2, judgeRetryDelaySeconds: 1, judgeRetryMaxDelaySeconds: 1, judgeMaxAgeSeconds: 8 }),
    });
    await aged.op('tenant.create', { slug: 'acme' });
    await aged.op('idp.set', { tenant: 'acme', issuer: idp.issuer, jwks_url: idp.jwksUrl });
    const activity = await seedActivity(aged, 'acme');
    model.setMode('fail-500');
    try {
      const marker = 'too-old';
      const res = await submit(aged, marker, { kind: 'document', content: `${marker} work` }, activity);
      expect(res.body).toMatchObject({ status: 'pending', reason: 'model_error' });
      const v = await eventually(
        async () => {
          const x = await verificationOf(aged, res.body.artifact_id);
          return x.status === 'failed' ? x : undefined;
        },
        25_000,
        'the submission to age out',
      );
      expect(v).toMatchObject({ status: 'failed', reason: 'model_unavailable' });
      expect(v.score).toBeUndefined();
      const [result] = await aged.db.query<{ status: string; score: number | null }>('select status, score from activity_results where id = $1', [
        res.body.result_id,
      ]);
      expect(result).toMatchObject({ status: 'failed', score: null });
      const calls = callsFor(marker);
      await sleep(1500);
      expect(callsFor(marker)).toBe(calls);
    } finally {
      model.setMode('grade');
      await aged.close();
    }
  });
});

describe('what every call sends and what every verdict keeps', () => {
  it('sends a token cap, temperature 0 and a seed; stores usage, the ledger and a replayable request', async () => {
    const app = await startApp({ judge: testJudge(model.baseUrl), embed: embedSettings({ judgePollSeconds: 0.2 }) });
    try {
      await app.op('tenant.create', { slug: 'acme' });
      await app.op('idp.set', { tenant: 'acme', issuer: idp.issuer, jwks_url: idp.jwksUrl });
      const activity = await seedActivity(app, 'acme');
      model.setMode('grade');
      const res = await submit(app, 'replay-me', { kind: 'document', content: 'replayable complete work' }, activity);
      expect(res.body.status).toBe('passed');
      const sent = requestsWith('replayable complete work')[0]!;
      expect(sent).toMatchObject({ max_completion_tokens: 2048, temperature: 0, seed: 7 });

      const v = await verificationOf(app, res.body.artifact_id);
      const shown = await app.op('verdict.show', { artifact_id: res.body.artifact_id, with_request: true });
      expect(shown.calls).toHaveLength(1);
      const [call] = shown.calls;
      expect(call).toMatchObject({ id: v.call_id, outcome: 'ok', http_status: 200, response_id: v.response_id, request_sha256: v.request_sha256 });
      expect(call.prompt_tokens).toBe(v.usage.prompt_tokens);
      expect(call.completion_tokens).toBe(v.usage.completion_tokens);
      expect(call.duration_ms).toBeGreaterThanOrEqual(0);
      expect(call.response.choices[0].message.content).toContain('"criteria"');

      // Replay: the stored request is exactly what was sent (its hash), and sending it again gives the same verdict.
      const [{ body }] = await app.db.query<{ body: string }>('select body from model_requests where sha256 = $1', [v.request_sha256]);
      expect(createHash('sha256').update(body).digest('hex')).toBe(v.request_sha256);
      expect(JSON.parse(body)).toEqual(sent);
      expect(shown.requests[v.request_sha256]).toEqual(sent);
      const again = await fetch(`${model.baseUrl}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      const replayed = JSON.parse(((await again.json()) as any).choices[0].message.content);
      expect(replayed.criteria.map((c: { id: string; score: number }) => [c.id, c.score])).toEqual(
        v.criteria.map((c: { id: string; score: number }) => [c.id, c.score]),
      );
    } finally {
      await app.close();
    }
  });

  it('puts a new random delimiter nonce in every request', async () => {
    await submit(t, 'nonce-1', { kind: 'document', content: 'nonce-1 complete work' });
    await submit(t, 'nonce-2', { kind: 'document', content: 'nonce-2 complete work' });
    const sent = [...requestsWith('nonce-1 complete work'), ...requestsWith('nonce-2 complete work')];
    const nonces = sent.map((r) => /<<<ARTIFACT-([0-9a-f]{16})\n/.exec(userMessage(r))?.[1]);
    expect(nonces).toHaveLength(2);
    expect(nonces[0]).toMatch(/^[0-9a-f]{16}$/);
    expect(nonces[0]).not.toBe(nonces[1]);
    // The system message names this request's delimiters.
    expect(String(sent[1]!.messages[0]!.content)).toContain(`<<<ARTIFACT-${nonces[1]}`);
  });
});
