/**
 * The judge's telemetry (issue #15): real submissions through POST /v1/embed/judge, graded by the
 * judge's real `openai` client against the loopback test model, counted in the metrics registry
 * (submissions by outcome, verdicts by outcome, model calls by outcome and duration, the embed
 * session grant) and traced: each grading job's span holds its model call's span and the
 * database statements that record the verdict.
 */
import { node, tracing } from '@opentelemetry/sdk-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registry } from '../../src/telemetry/metrics.ts';
import { useTracing } from '../../src/telemetry/tracing.ts';
import { startApp, testJudge, useApp, useServer } from '../helpers/harness.ts';
import { startTestIdp } from '../helpers/test-idp.ts';
import { startTestModel } from '../helpers/test-model.ts';
import { post, seedActivity, type SeededActivity } from '../embed/fixtures.ts';

const exporter = new tracing.InMemorySpanExporter();
const provider = new node.NodeTracerProvider({ spanProcessors: [new tracing.SimpleSpanProcessor(exporter)] });
provider.register();
afterAll(() => provider.shutdown()); // registered first, so it runs after the fixtures close
useTracing();

const idp = useServer(() => startTestIdp());
const model = useServer(() => startTestModel());
const t = useApp(() => startApp({ judge: testJudge(model.baseUrl) }));
let doc: SeededActivity;

/** The value of counter/histogram-count `name` with `labels`, from the registry's JSON view. */
async function sample(name: string, labels: Record<string, string>): Promise<number | undefined> {
  const family = (await registry.getMetricsAsJSON()).find((m) => m.name === name || `${m.name}_count` === name);
  const values = (family?.values ?? []) as { metricName?: string; labels: Record<string, string | number>; value: number }[];
  return values.find((v) => (v.metricName ?? family!.name) === name && Object.entries(labels).every(([k, x]) => v.labels[k] === x))?.value;
}

beforeAll(async () => {
  await t.op('tenant.create', { slug: 'acme' });
  await t.op('idp.set', { tenant: 'acme', issuer: idp.issuer, jwks_url: idp.jwksUrl });
  doc = await seedActivity(t, 'acme', { rubric: [{ criterion: 'States the problem' }], pass_threshold: 50 });
}, 30_000);

const judge = async (sub: string, content: string, headers: Record<string, string> = {}) =>
  post(
    t,
    '/v1/embed/judge',
    { tenant: 'acme', activity_id: doc.activityId, artifact: { kind: 'document', content } },
    { authorization: `Bearer ${await idp.sign({ sub })}`, ...headers },
  );

describe('judge telemetry', () => {
  it('counts submissions, verdicts and model calls by outcome', async () => {
    expect((await judge('learner-1', 'The problem is long URLs.', { 'idempotency-key': 'k-1' })).status).toBe(200);
    expect((await judge('learner-1', 'The problem is long URLs.', { 'idempotency-key': 'k-1' })).status).toBe(200);
    expect((await judge('learner-2', 'TODO')).status).toBe(200);
    expect(
      (
        await post(
          t,
          '/v1/embed/judge',
          { tenant: 'acme', activity_id: doc.activityId, artifact: { kind: 'document', content: 'x' } },
          { authorization: 'Bearer forged' },
        )
      ).status,
    ).toBe(401);
    expect((await post(t, '/v1/embed/session', { tenant: 'acme', idp_token: await idp.sign({ sub: 'learner-3' }) })).status).toBe(200);

    expect(await sample('svc_judge_submissions_total', { outcome: 'accepted' })).toBe(2);
    expect(await sample('svc_judge_submissions_total', { outcome: 'replayed' })).toBe(1);
    expect(await sample('svc_judge_submissions_total', { outcome: 'refused' })).toBe(1);
    expect(await sample('svc_judge_verdicts_total', { outcome: 'passed' })).toBe(1);
    expect(await sample('svc_judge_verdicts_total', { outcome: 'failed' })).toBe(1);
    expect(await sample('svc_model_calls_total', { outcome: 'ok' })).toBe(2);
    expect(await sample('svc_model_call_duration_seconds_count', { outcome: 'ok' })).toBe(2);
    expect(await sample('svc_auth_grants_total', { grant_type: 'embed_session', outcome: 'success' })).toBe(1);
  });

  it('traces each grading job with its model call and the statements that record the verdict under it', () => {
    const spans = exporter.getFinishedSpans();
    const jobs = spans.filter((s) => s.name === 'grading.job');
    expect(jobs.length).toBeGreaterThanOrEqual(2);
    for (const job of jobs.filter((j) => j.attributes['svc.grading.outcome'] !== 'gone')) {
      const under = spans.filter((s) => s.parentSpanContext?.spanId === job.spanContext().spanId);
      const call = under.find((s) => s.name === 'model.call');
      expect(call?.attributes['gen_ai.request.model']).toBe(t.deps.config.judge!.model);
      expect(call?.attributes['svc.model_call.outcome']).toBe('ok');
      expect(under.some((s) => s.name === 'transaction')).toBe(true);
    }
  });
});
