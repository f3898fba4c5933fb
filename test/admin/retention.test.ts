/**
 * Issue #23 — retention: per-tenant windows (`svc retention set|show`, defaults model bodies 90
 * days, artifact content forever, tombstones 30 days) and the sweep (`svc retention run`, hourly in
 * the server). With the clock moved forward, the sweep removes exactly what is past each window,
 * in batches; removing artifact content keeps the verdict and the result; bad values change nothing.
 */
import { createHash } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { RETENTION_BATCH, runRetention } from '../../src/admin/retention.ts';
import { useApp } from '../helpers/harness.ts';
import { countRows } from '../embed/fixtures.ts';
import { newArtifact, newProgram, newResult, newUser } from '../results/fixtures.ts';

const t = useApp();
const DAY = 86_400_000;
const later = (days: number) => new Date(Date.now() + days * DAY);
const tenants: Record<string, string> = {};
const seeded: Record<string, { artifact: string; result: string; sha: string }> = {};

/** A result with an artifact (content), a model call and its request body, and one tombstone. */
async function seed(slug: string) {
  const { id } = await t.op('tenant.create', { slug });
  tenants[slug] = id;
  const { activityIds } = await newProgram(t.db, id, 2);
  const user = await newUser(t.db);
  const result = await newResult(t.db, { activityId: activityIds[0]!, userId: user });
  const artifact = await newArtifact(t.db, { resultId: result, kind: 'document', verification: { status: 'passed', passed: true, score: 90 } });
  await t.db.query(`update artifacts set content = $2 where id = $1`, [artifact, `essay of ${slug}`]);
  const body = JSON.stringify({ messages: [{ role: 'user', content: `essay of ${slug}` }] });
  const sha = createHash('sha256').update(body).digest('hex');
  await t.db.query('insert into model_requests (tenant_id, sha256, body) values ($1, $2, $3)', [id, sha, body]);
  await t.db.query(
    `insert into model_calls (tenant_id, artifact_id, run, attempt, request_sha256, model, started_at, outcome, prompt_tokens, completion_tokens)
     values ($1, $2, 1, 1, $3, 'test', now(), 'ok', 10, 5)`,
    [id, artifact, sha],
  );
  const gone = await newResult(t.db, { activityId: activityIds[1]!, userId: user });
  await t.db.query('delete from activity_results where id = $1', [gone]);
  seeded[slug] = { artifact, result, sha };
}

beforeAll(async () => {
  await seed('keeps');
  await seed('forever');
  await t.op('retention.set', { tenant: 'forever', model_bodies: 'forever', tombstones: 'forever' });
});

const state = async (slug: string) => ({
  bodies: await countRows(t, 'model_requests', 'tenant_id = $1', [tenants[slug]]),
  calls: await countRows(t, 'model_calls', 'tenant_id = $1', [tenants[slug]]),
  content: await countRows(t, 'artifacts', 'tenant_id = $1 and content is not null', [tenants[slug]]),
  verdicts: await countRows(t, 'artifacts', "tenant_id = $1 and verification->>'status' = 'passed'", [tenants[slug]]),
  results: await countRows(t, 'activity_results', 'tenant_id = $1', [tenants[slug]]),
  tombstones: await countRows(t, 'deletions', 'tenant_id = $1', [tenants[slug]]),
});

describe('svc retention', () => {
  it('shows the defaults, and a change', async () => {
    expect(await t.op('retention.show', { tenant: 'keeps' })).toEqual({
      tenant: 'keeps',
      artifact_content_days: null,
      model_bodies_days: 90,
      tombstones_days: 30,
    });
    expect(await t.op('retention.show', { tenant: 'forever' })).toEqual({
      tenant: 'forever',
      artifact_content_days: null,
      model_bodies_days: null,
      tombstones_days: null,
    });
    expect(await countRows(t, 'audit_events', "action = 'retention.set' and tenant_id = $1", [tenants.forever])).toBe(1);
  });

  it('bad values: a clear error naming the option, nothing changed, no audit row', async () => {
    const audits = await countRows(t, 'audit_events');
    for (const bad of ['0', '-3', 'abc', 1.5, 'never', '']) {
      await expect(t.op('retention.set', { tenant: 'keeps', tombstones: bad }), String(bad)).rejects.toThrow(
        /tombstones: .*(positive number of days, or forever)/,
      );
    }
    await expect(t.op('retention.set', { tenant: 'keeps' })).rejects.toThrow(/give at least one of/);
    await expect(t.op('retention.set', { tenant: 'nope', tombstones: 3 })).rejects.toThrow(/no tenant "nope"/);
    expect(await t.op('retention.show', { tenant: 'keeps' })).toMatchObject({ tombstones_days: 30 });
    expect(await countRows(t, 'audit_events')).toBe(audits);
  });

  it('with the clock moved forward, removes exactly what is past each window', async () => {
    const start = { bodies: 1, calls: 1, content: 1, verdicts: 1, results: 1, tombstones: 1 };
    expect(await state('keeps')).toEqual(start);
    // day 29: nothing is past any window
    await runRetention(t.db, { now: later(29) });
    expect(await state('keeps')).toEqual(start);
    // day 31: tombstones (30 days) go; bodies (90) and content (forever) stay
    expect(await runRetention(t.db, { now: later(31) })).toMatchObject({ tombstones: 1, model_bodies: 0, artifact_contents: 0 });
    expect(await state('keeps')).toEqual({ ...start, tombstones: 0 });
    // day 91: the model body goes; the call's counts stay
    expect(await runRetention(t.db, { now: later(91) })).toMatchObject({ model_bodies: 1 });
    expect(await state('keeps')).toEqual({ ...start, tombstones: 0, bodies: 0 });
    expect(
      (
        await t.db.query<{ sha: string | null; tokens: number }>(
          'select request_sha256 as sha, prompt_tokens as tokens from model_calls where artifact_id = $1',
          [seeded.keeps!.artifact],
        )
      )[0],
    ).toEqual({ sha: null, tokens: 10 });
    // artifact content after a window is set: the content goes, the verdict and the result stay
    await t.op('retention.set', { tenant: 'keeps', artifact_content: 10 });
    expect(await t.op('retention.run', { tenant: 'keeps' })).toMatchObject({ tenant: 'keeps', artifact_contents: 0 });
    await runRetention(t.db, { now: later(11), tenantId: tenants.keeps });
    expect(await state('keeps')).toEqual({ ...start, tombstones: 0, bodies: 0, content: 0 });
    // the tenant that keeps everything forever lost nothing
    await runRetention(t.db, { now: later(4000) });
    expect(await state('forever')).toEqual(start);
  });

  it('works in batches until done', async () => {
    const n = RETENTION_BATCH * 2 + 7;
    await t.db.query(
      `insert into deletions (tenant_id, id, resource, deleted_at) select $1, gen_random_uuid(), 'artifact', now() - interval '40 days' from generate_series(1, ${n})`,
      [tenants.keeps],
    );
    expect(await runRetention(t.db, { tenantId: tenants.keeps })).toMatchObject({ tenants: 1, tombstones: n });
    expect(await countRows(t, 'deletions', 'tenant_id = $1', [tenants.keeps])).toBe(0);
  });
});
