/** Results API, successful reads: exact shapes of every endpoint, filters, progress math. */
import { describe, expect, it } from 'vitest';
import { SERVICE_NAME, VERSION } from '../../src/version.ts';
import { useApp, useFixture } from '../helpers/harness.ts';
import { getJson, newArtifact, newProgram, newProgress, newResult, RFC3339_MICROS, seedTenant, UUID } from './fixtures.ts';

const t = useApp();
const a = useFixture(() => seedTenant(t, 'alpha'));
const b = useFixture(() => seedTenant(t, 'beta'));

const LIST_KEYS = ['data', 'has_more', 'next_cursor'];
// DESIGN §6's fields plus updated_at (issue #4) and program_id, unit_id (issue #14).
const RESULT_KEYS = [
  'activity_id',
  'artifact_ids',
  'completed_at',
  'created_at',
  'id',
  'lesson_id',
  'program_id',
  'score',
  'status',
  'svc_user_id',
  'unit_id',
  'updated_at',
];
const PROGRESS_KEYS = ['completed_count', 'last_activity_at', 'percent', 'program_id', 'svc_user_id', 'total_count', 'updated_at'];
const ARTIFACT_KEYS = ['created_at', 'id', 'kind', 'ref_url', 'repo_url', 'result_id', 'updated_at', 'verification'];

describe('GET /v1/health', () => {
  it('answers without a credential', async () => {
    const body = await getJson(t, '/v1/health');
    expect(body).toEqual({ status: 'ok', service: SERVICE_NAME, version: VERSION });
  });
});

describe('GET /v1/activity-results', () => {
  it('lists the tenant’s results with the exact ActivityResult shape', async () => {
    const body = await getJson(t, '/v1/activity-results', a.key);
    expect(Object.keys(body).sort()).toEqual(LIST_KEYS);
    expect(body.next_cursor).toBeNull();
    expect(body.has_more).toBe(false);
    expect(body.data.map((r: any) => r.id)).toEqual(a.resultIds);
    for (const r of body.data) {
      expect(Object.keys(r).sort()).toEqual(RESULT_KEYS);
      expect(r.id).toMatch(UUID);
      expect(r.lesson_id).toBe(a.lessonId);
      expect(r.program_id).toBe(a.programId);
      expect(r.unit_id).toBe((await t.db.query<{ unit_id: string }>('select unit_id from lessons where id = $1', [a.lessonId]))[0]!.unit_id);
      expect(r.created_at).toMatch(RFC3339_MICROS);
      expect(Array.isArray(r.artifact_ids)).toBe(true);
    }
    const [done, going, failed] = body.data;
    expect(done).toEqual({
      id: a.resultIds[0],
      activity_id: a.activityIds[0],
      lesson_id: a.lessonId,
      svc_user_id: a.userIds[0],
      program_id: a.programId,
      unit_id: done.unit_id,
      status: 'completed',
      score: 92.5,
      completed_at: '2026-03-01T10:00:00.123456Z',
      created_at: done.created_at,
      updated_at: done.updated_at,
      artifact_ids: [a.artifactIds[0], a.artifactIds[1]],
    });
    expect(going).toMatchObject({ status: 'in_progress', score: null, completed_at: null, artifact_ids: [] });
    expect(failed).toMatchObject({ status: 'failed', score: 12, svc_user_id: a.userIds[1], artifact_ids: [a.artifactIds[2]] });
  });

  it('filters by activity_id, user_id and status (and their combination)', async () => {
    const ids = async (q: string) => (await getJson(t, `/v1/activity-results?${q}`, a.key)).data.map((r: any) => r.id);
    expect(await ids(`activity_id=${a.activityIds[0]}`)).toEqual([a.resultIds[0], a.resultIds[2]]);
    expect(await ids(`user_id=${a.userIds[0]}`)).toEqual([a.resultIds[0], a.resultIds[1]]);
    expect(await ids('status=failed')).toEqual([a.resultIds[2]]);
    expect(await ids(`status=completed&user_id=${a.userIds[1]}`)).toEqual([]);
    expect(await ids(`activity_id=${a.activityIds[0].toUpperCase()}&user_id=${a.userIds[1]}`)).toEqual([a.resultIds[2]]);
  });

  it('GET /v1/activity-results/{id} returns one object of the same shape', async () => {
    const body = await getJson(t, `/v1/activity-results/${a.resultIds[2]}`, a.key);
    expect(Object.keys(body).sort()).toEqual(RESULT_KEYS);
    const listed = (await getJson(t, '/v1/activity-results', a.key)).data[2];
    expect(body).toEqual(listed);
  });

  it('lists artifact_ids in created order, not id order', async () => {
    const r = await newResult(t.db, { activityId: a.activityIds[2]!, userId: a.userIds[1]! });
    const late = await newArtifact(t.db, { resultId: r, id: '00000000-0000-4000-8000-000000000001', createdAt: '2026-05-01T00:00:00.000002Z' });
    const early = await newArtifact(t.db, { resultId: r, id: 'ffffffff-ffff-4fff-bfff-ffffffffffff', createdAt: '2026-05-01T00:00:00.000001Z' });
    const body = await getJson(t, `/v1/activity-results/${r}`, a.key);
    expect(body.artifact_ids).toEqual([early, late]);
    await t.db.query('delete from activity_results where id = $1', [r]);
  });
});

describe('GET /v1/progress', () => {
  it('lists progress with total_count and a floored integer percent (0 when the program is empty)', async () => {
    const body = await getJson(t, '/v1/progress', a.key);
    expect(Object.keys(body).sort()).toEqual(LIST_KEYS);
    expect(body.data).toHaveLength(3);
    for (const p of body.data) expect(Object.keys(p).sort()).toEqual(PROGRESS_KEYS);
    for (const p of body.data) expect(p.updated_at).toMatch(RFC3339_MICROS);
    expect(body.data.map(({ updated_at, ...rest }: any) => rest)).toEqual([
      { svc_user_id: a.userIds[0], program_id: a.programId, completed_count: 1, total_count: 3, percent: 33, last_activity_at: '2026-03-01T10:00:00.123456Z' },
      { svc_user_id: a.userIds[1], program_id: a.programId, completed_count: 2, total_count: 3, percent: 66, last_activity_at: null },
      { svc_user_id: a.userIds[0], program_id: a.emptyProgramId, completed_count: 0, total_count: 0, percent: 0, last_activity_at: null },
    ]);
  });

  it('filters by user_id and program_id', async () => {
    const rows = async (q: string) => (await getJson(t, `/v1/progress?${q}`, a.key)).data;
    expect((await rows(`user_id=${a.userIds[1]}`)).map((p: any) => p.completed_count)).toEqual([2]);
    expect((await rows(`program_id=${a.emptyProgramId}`)).map((p: any) => p.svc_user_id)).toEqual([a.userIds[0]]);
    expect(await rows(`program_id=${a.programId}&user_id=${a.userIds[0]}`)).toHaveLength(1);
  });

  it('computes 100 for a finished program', async () => {
    const { programId } = await newProgram(t.db, b.id, 2);
    await newProgress(t.db, { tenantId: b.id, userId: b.userIds[0]!, programId, completed: 2 });
    const [p] = (await getJson(t, `/v1/progress?program_id=${programId}`, b.key)).data;
    expect(p).toMatchObject({ completed_count: 2, total_count: 2, percent: 100 });
  });
});

describe('GET /v1/artifacts', () => {
  it('lists artifacts with the exact Artifact shape', async () => {
    const body = await getJson(t, '/v1/artifacts', a.key);
    expect(Object.keys(body).sort()).toEqual(LIST_KEYS);
    expect(body.data.map((x: any) => x.id)).toEqual(a.artifactIds);
    for (const x of body.data) {
      expect(Object.keys(x).sort()).toEqual(ARTIFACT_KEYS);
      expect(x.created_at).toMatch(RFC3339_MICROS);
    }
    expect(body.data[0]).toEqual({
      id: a.artifactIds[0],
      result_id: a.resultIds[0],
      kind: 'site',
      ref_url: 'https://example.test/site',
      repo_url: null,
      verification: { passed: true, score: 92.5 },
      created_at: body.data[0].created_at,
      updated_at: body.data[0].updated_at,
    });
    expect(body.data[1]).toMatchObject({ kind: 'repo', ref_url: null, repo_url: 'https://example.test/repo.git', verification: null });
  });

  it('filters by activity_id and user_id', async () => {
    const ids = async (q: string) => (await getJson(t, `/v1/artifacts?${q}`, a.key)).data.map((x: any) => x.id);
    expect(await ids(`user_id=${a.userIds[1]}`)).toEqual([a.artifactIds[2]]);
    expect(await ids(`activity_id=${a.activityIds[0]}`)).toEqual(a.artifactIds);
    expect(await ids(`activity_id=${a.activityIds[1]}`)).toEqual([]);
    expect(await ids(`activity_id=${a.activityIds[0]}&user_id=${a.userIds[0]}`)).toEqual(a.artifactIds.slice(0, 2));
  });

  it('GET /v1/artifacts/{id} returns one object of the same shape', async () => {
    const body = await getJson(t, `/v1/artifacts/${a.artifactIds[2]}`, a.key, 200, 'x-svc-api-key');
    expect(Object.keys(body).sort()).toEqual(ARTIFACT_KEYS);
    expect(body).toMatchObject({ id: a.artifactIds[2], result_id: a.resultIds[2], kind: 'document' });
  });
});
