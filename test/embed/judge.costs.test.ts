/**
 * Cost bounds (issue #10): a per-learner submission rate (429 `rate_limited` with Retry-After,
 * nothing stored), and a per-tenant model budget of calls and tokens per hour and day, counted
 * at the model: beyond it submissions stay pending with `reason: "budget_exhausted"` (in the
 * response and in `verification`), and resume when the window allows.
 */
import { describe, expect, it } from 'vitest';
import { startApp, testJudge, useApp, useFixture, useServer, type TestApp } from '../helpers/harness.ts';
import { startTestIdp } from '../helpers/test-idp.ts';
import { startTestModel } from '../helpers/test-model.ts';
import { countRows, embedSettings, expectError, post, seedActivity, verificationOf, type SeededActivity } from './fixtures.ts';
import { clearOfHourBoundary, eventually } from '../helpers/wait.ts';

const idp = useServer(() => startTestIdp());
const model = useServer(() => startTestModel());

/** An app graded by the test model, with `embed` overrides (the queue polled every 0.2 s); `now` replaces its clock. */
const startJudgeApp = (embed: Parameters<typeof embedSettings>[0], now?: () => Date) =>
  startApp({ judge: testJudge(model.baseUrl), embed: embedSettings({ judgePollSeconds: 0.2, ...embed }) }, { now });

/** Tenants `slugs` of `t` trusting the test IdP, one activity each (by slug). */
async function seedTenants(t: TestApp, slugs = ['acme']) {
  const docs: Record<string, SeededActivity> = {};
  for (const slug of slugs) {
    await t.op('tenant.create', { slug });
    await t.op('idp.set', { tenant: slug, issuer: idp.issuer, jwks_url: idp.jwksUrl });
    docs[slug] = await seedActivity(t, slug);
  }
  return docs;
}

const submit = async (t: TestApp, doc: SeededActivity, tenant: string, sub: string, content = 'complete work') =>
  post(
    t,
    '/v1/embed/judge',
    { tenant, activity_id: doc.activityId, artifact: { kind: 'document', content } },
    { authorization: `Bearer ${await idp.sign({ sub })}` },
  );

const callsFor = (marker: string) => model.artifacts().filter((a) => a.includes(marker)).length;

describe('per-learner submission rate', () => {
  const t = useApp(() => startJudgeApp({ learnerRate: 3, learnerWindowSeconds: 60 }));
  const docs = useFixture(() => seedTenants(t, ['acme', 'globex']));

  it('accepts 3 of 30 parallel submissions of one learner; the rest get 429 with Retry-After and store nothing', async () => {
    model.setMode('grade');
    const token = await idp.sign({ sub: 'eager' });
    const body = { tenant: 'acme', activity_id: docs.acme!.activityId, artifact: { kind: 'document', content: 'x'.repeat(200_000) } };
    const all = await Promise.all(
      Array.from({ length: 30 }, () =>
        fetch(`${t.url}/v1/embed/judge`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
          body: JSON.stringify(body),
        }).then(async (res) => ({ status: res.status, retryAfter: res.headers.get('retry-after'), body: (await res.json()) as any })),
      ),
    );
    const accepted = all.filter((r) => r.status === 200);
    const refused = all.filter((r) => r.status === 429);
    expect(accepted).toHaveLength(3);
    expect(refused).toHaveLength(27);
    for (const r of refused) {
      expectError(r, 429, 'rate_limited');
      expect(Number(r.retryAfter)).toBeGreaterThanOrEqual(1);
      expect(Number(r.retryAfter)).toBeLessThanOrEqual(60);
    }
    const [{ user_id }] = await t.db.query<{ user_id: string }>('select user_id from artifacts where id = $1', [accepted[0]!.body.artifact_id]);
    expect(await countRows(t, 'artifacts', 'user_id = $1', [user_id])).toBe(3);
  });

  it('counts each learner and tenant apart', async () => {
    expect((await submit(t, docs.acme!, 'acme', 'patient')).status).toBe(200);
    expect((await submit(t, docs.globex!, 'globex', 'eager')).status).toBe(200);
  });
});

describe('per-tenant model budget', () => {
  let offsetMs = 0;
  const t = useApp(() =>
    startJudgeApp({ tenantBudget: { callsPerHour: 3, callsPerDay: 100, tokensPerHour: 1e9, tokensPerDay: 1e9 } }, () => new Date(Date.now() + offsetMs)),
  );
  const docs = useFixture(() => seedTenants(t, ['acme', 'globex']));

  it('makes exactly the budgeted calls; the rest wait, with the reason in the response and in verification', async () => {
    await clearOfHourBoundary(); // the budget is per UTC hour
    model.setMode('grade');
    const results = [];
    for (let i = 0; i < 5; i++) results.push(await submit(t, docs.acme!, 'acme', `budget-${i}`, `budget-call ${i} complete`));
    expect(results.slice(0, 3).map((r) => r.body.status)).toEqual(['passed', 'passed', 'passed']);
    for (const r of results.slice(3)) {
      expect(r.body).toMatchObject({ status: 'pending', reason: 'budget_exhausted' });
      const v = await verificationOf(t, r.body.artifact_id);
      expect(v).toMatchObject({ status: 'pending', reason: 'budget_exhausted', limit: 'calls_per_hour' });
      const nextHour = Math.floor(Date.now() / 3_600_000 + 1) * 3_600_000;
      expect(Date.parse(v.retry_at)).toBe(nextHour);
    }
    expect(callsFor('budget-call')).toBe(3);
    expect(await countRows(t, 'model_calls', 'tenant_id = $1', [docs.acme!.tenantId])).toBe(3);
    // Another tenant has its own budget.
    expect((await submit(t, docs.globex!, 'globex', 'other-tenant')).body.status).toBe('passed');

    // The window passes (the clock moves an hour; the jobs' start time is reached): they resume.
    offsetMs = 3_600_000;
    await t.db.query(`update pgboss.job set start_after = now() where id = any($1::uuid[])`, [results.slice(3).map((r) => r.body.artifact_id)]);
    for (const r of results.slice(3)) {
      await eventually(async () => (await verificationOf(t, r.body.artifact_id)).status === 'passed', 15_000, 'the held submission to be graded');
    }
    expect(callsFor('budget-call')).toBe(5);
  }, 120_000);

  it('counts budgets per UTC hour and day (svc.reserve_model_call)', async () => {
    const [artifact] = await t.db.query<{ id: string; tenant_id: string }>('select id, tenant_id from artifacts where tenant_id = $1 limit 1', [
      docs.globex!.tenantId,
    ]);
    const reserve = async (now: string, budget: [number, number, number, number]) =>
      (
        await t.db.query<{ call_id: string | null; exhausted: string | null; retry_at: string | null }>(
          `select call_id, exhausted, to_json(retry_at) #>> '{}' as retry_at
             from svc.reserve_model_call($1, $2, 1, 1, 'm', $3, '{}', $4, $5, $6, $7, $8)`,
          [artifact!.tenant_id, artifact!.id, 'a'.repeat(64), now, ...budget],
        )
      )[0]!;
    await t.db.query('delete from model_usage where tenant_id = $1', [artifact!.tenant_id]);
    const perDay: [number, number, number, number] = [1000, 2, 1e9, 1e9];
    expect((await reserve('2026-11-23T23:10:00Z', perDay)).call_id).toBeTruthy();
    expect((await reserve('2026-11-23T23:50:00Z', perDay)).call_id).toBeTruthy();
    const full = await reserve('2026-11-23T23:55:00Z', perDay);
    expect(full).toMatchObject({ call_id: null, exhausted: 'calls_per_day' });
    expect(Date.parse(full.retry_at!)).toBe(Date.parse('2026-11-24T00:00:00Z'));
    expect((await reserve('2026-11-24T00:05:00Z', perDay)).call_id).toBeTruthy();
    const perHour: [number, number, number, number] = [1, 1000, 1e9, 1e9];
    const hourFull = await reserve('2026-11-24T00:30:00Z', perHour);
    expect(hourFull).toMatchObject({ exhausted: 'calls_per_hour' });
    expect(Date.parse(hourFull.retry_at!)).toBe(Date.parse('2026-11-24T01:00:00Z'));
    expect((await reserve('2026-11-24T01:00:00Z', perHour)).call_id).toBeTruthy();
  });

  it('stops at a token budget too', async () => {
    const app = await startJudgeApp({ tenantBudget: { callsPerHour: 1000, callsPerDay: 1000, tokensPerHour: 100, tokensPerDay: 1e9 } });
    const d = await seedTenants(app);
    try {
      await clearOfHourBoundary(); // the budget is per UTC hour
      const first = await submit(app, d.acme!, 'acme', 'tokens-1', 'token-budget complete');
      expect(first.body.status).toBe('passed'); // nothing spent yet: allowed, and it spends > 100 tokens
      const second = await submit(app, d.acme!, 'acme', 'tokens-2', 'token-budget complete');
      expect(second.body).toMatchObject({ status: 'pending', reason: 'budget_exhausted' });
      expect(await verificationOf(app, second.body.artifact_id)).toMatchObject({ limit: 'tokens_per_hour' });
      expect(callsFor('token-budget')).toBe(1);
    } finally {
      await app.close();
    }
  }, 120_000);
});
