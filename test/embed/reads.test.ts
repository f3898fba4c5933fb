/**
 * Learner reads — GET /v1/embed/activities/{id}, /results/{id}, /progress — and the judge's
 * per-criterion verdict: the real app, the test IdP and model. Refusals: no / bad token 401,
 * another tenant's or another learner's id 404, malformed ids 400.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { expectError, post, seedActivity, startEmbedWorld, type SeededActivity } from './fixtures.ts';
import { useServer } from '../helpers/harness.ts';

const w = useServer(() => startEmbedWorld());
let other: SeededActivity;
beforeAll(async () => {
  await w.t.op('tenant.create', { slug: 'globex' });
  await w.t.op('idp.set', { tenant: 'globex', issuer: w.idp.issuer, jwks_url: w.idp.jwksUrl });
  other = await seedActivity(w.t, 'globex', { title: 'Globex only' });
});

const session = async (sub: string, tenant = 'acme') =>
  (await post(w.t, '/v1/embed/session', { tenant, idp_token: await w.idp.sign({ sub }) })).body.access_token as string;
const get = async (path: string, token?: string) => {
  const res = await fetch(`${w.t.url}${path}`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  return { status: res.status, body: (await res.json()) as any };
};

describe('learner reads', () => {
  it('reads the activity with its place, rubric, sanitised spec and no result yet', async () => {
    await w.t.db.query(`update activities set spec = $2 where id = $1`, [w.doc.activityId, '# Task\n\nWrite **it**.<script>alert(1)</script>']);
    const token = await session('reader-1');
    const { status, body } = await get(`/v1/embed/activities/${w.doc.activityId}`, token);
    expect(status).toBe(200);
    expect(body).toMatchObject({
      id: w.doc.activityId,
      kind: 'document',
      pass_threshold: 70,
      program: { title: 'Program' },
      unit: { title: 'Unit' },
      lesson: { title: 'Lesson' },
      rubric: [
        { id: 'c1', criterion: 'States the problem', weight: 1 },
        { id: 'c2', criterion: 'Discusses trade-offs', weight: 2 },
      ],
      result: null,
    });
    expect(body.spec_html).toContain('<strong>it</strong>');
    expect(body.spec_html).not.toContain('<script');
  });

  it('the judge answers per criterion; results and progress show the same verdict', async () => {
    const token = await session('reader-2');
    const judged = await post(
      w.t,
      '/v1/embed/judge',
      { tenant: 'acme', activity_id: w.doc.activityId, artifact: { kind: 'document', content: 'A fine note.' } },
      { authorization: `Bearer ${token}` },
    );
    expect(judged.status).toBe(200);
    expect(judged.body).toMatchObject({ status: 'passed', score: 100, passed: true });
    expect(judged.body.criteria).toEqual([
      { id: 'c1', criterion: 'States the problem', weight: 1, met: true, score: 100, feedback: 'The work addresses this criterion.' },
      { id: 'c2', criterion: 'Discusses trade-offs', weight: 2, met: true, score: 100, feedback: 'The work addresses this criterion.' },
    ]);
    const failed = await post(
      w.t,
      '/v1/embed/judge',
      { tenant: 'acme', activity_id: w.doc.activityId, artifact: { kind: 'document', content: 'TODO' } },
      { authorization: `Bearer ${token}` },
    );
    expect(failed.body).toMatchObject({ status: 'failed', score: 0, passed: false });

    const result = await get(`/v1/embed/results/${judged.body.result_id}`, token);
    expect(result.status).toBe(200);
    expect(result.body).toMatchObject({ id: judged.body.result_id, status: 'completed', score: 100 });
    expect(result.body.attempts.map((a: any) => [a.artifact_id, a.status, a.passed])).toEqual([
      [failed.body.artifact_id, 'failed', false],
      [judged.body.artifact_id, 'passed', true],
    ]);
    expect(result.body.attempts[1].criteria).toEqual(judged.body.criteria);

    const activity = await get(`/v1/embed/activities/${w.doc.activityId}`, token);
    expect(activity.body.result.id).toBe(judged.body.result_id);

    const progress = await get('/v1/embed/progress', token);
    expect(progress.body).toEqual({
      data: [{ program_id: w.doc.programId, program_title: 'Program', completed_count: 1, total_count: 1, percent: 100, last_activity_at: expect.any(String) }],
    });
  });

  it('progress of one program is there before any pass', async () => {
    const token = await session('reader-3');
    expect((await get('/v1/embed/progress', token)).body).toEqual({ data: [] });
    const one = await get(`/v1/embed/progress?program_id=${w.doc.programId}`, token);
    expect(one.body.data).toEqual([
      { program_id: w.doc.programId, program_title: 'Program', completed_count: 0, total_count: 1, percent: 0, last_activity_at: null },
    ]);
  });
});

describe('refusals', () => {
  it("another tenant's activity, result and program are 404 for the learner", async () => {
    const acme = await session('cross-1');
    const globex = await session('cross-2', 'globex');
    const judged = await post(
      w.t,
      '/v1/embed/judge',
      { tenant: 'globex', activity_id: other.activityId, artifact: { kind: 'document', content: 'x' } },
      { authorization: `Bearer ${globex}` },
    );
    expect(judged.status).toBe(200);
    expect((await get(`/v1/embed/activities/${other.activityId}`, globex)).status).toBe(200);
    expectError(await get(`/v1/embed/activities/${other.activityId}`, acme), 404, 'not_found');
    expectError(await get(`/v1/embed/results/${judged.body.result_id}`, acme), 404, 'not_found');
    expectError(await get(`/v1/embed/progress?program_id=${other.programId}`, acme), 404, 'not_found');
  });

  it("another learner's result of the same tenant is 404", async () => {
    const a = await session('peer-1');
    const b = await session('peer-2');
    const judged = await post(
      w.t,
      '/v1/embed/judge',
      { tenant: 'acme', activity_id: w.doc.activityId, artifact: { kind: 'document', content: 'x' } },
      { authorization: `Bearer ${a}` },
    );
    expectError(await get(`/v1/embed/results/${judged.body.result_id}`, b), 404, 'not_found');
  });

  it('no token, a token that is not a JWT, and an IdP token are 401', async () => {
    expectError(await get(`/v1/embed/activities/${w.doc.activityId}`), 401, 'unauthorized');
    expectError(await get(`/v1/embed/activities/${w.doc.activityId}`, 'not-a-jwt'), 401, 'unauthorized');
    expectError(await get(`/v1/embed/progress`, await w.idp.sign({ sub: 'raw-idp' })), 401, 'unauthorized');
  });

  it('malformed ids and unknown parameters are 400; an unknown activity is 404', async () => {
    const token = await session('bad-1');
    expectError(await get('/v1/embed/activities/nope', token), 400, 'invalid_request');
    expectError(await get('/v1/embed/results/123', token), 400, 'invalid_request');
    expectError(await get('/v1/embed/progress?program=x', token), 400, 'invalid_request');
    expectError(await get('/v1/embed/activities/00000000-0000-4000-8000-000000000000', token), 404, 'not_found');
  });
});

describe('svc embed origins', () => {
  it('adds (normalised), lists and removes origins; refuses what is not an origin', async () => {
    expect(await w.t.op('embed.origins.list', { tenant: 'acme' })).toEqual({ tenant: 'acme', origins: [], frame_ancestors: "'none'" });
    expect(await w.t.op('embed.origins.add', { tenant: 'acme', origin: 'HTTPS://Learn.Example.com:443/' })).toMatchObject({
      origin: 'https://learn.example.com',
      added: true,
    });
    expect(await w.t.op('embed.origins.add', { tenant: 'acme', origin: 'https://*.example.org' })).toMatchObject({ added: true });
    expect((await w.t.op('embed.origins.list', { tenant: 'acme' })).origins).toEqual(['https://*.example.org', 'https://learn.example.com']);
    for (const bad of ['javascript:alert(1)', 'https://a.example.com/path', 'ftp://x.org', '*', 'https://*', "https://x.org 'unsafe-inline'"]) {
      await expect(w.t.op('embed.origins.add', { tenant: 'acme', origin: bad })).rejects.toMatchObject({ code: 'invalid' });
    }
    await w.t.op('embed.origins.remove', { tenant: 'acme', origin: 'https://*.example.org' });
    await expect(w.t.op('embed.origins.remove', { tenant: 'acme', origin: 'https://*.example.org' })).rejects.toMatchObject({ code: 'not_found' });
    await w.t.op('embed.origins.remove', { tenant: 'acme', origin: 'https://learn.example.com' });
  });
});
