/**
 * Issue #14, tried as a partner's dashboard would: learners joined to IdP subjects after a real
 * embed session, the content outline equal to what authoring created over MCP, tombstones of an
 * erased learner, the tenant isolation of each (404 rule), and the request-level fixes.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { authorClient, ok } from '../authoring/helpers.ts';
import { post, startEmbedWorld } from '../embed/fixtures.ts';
import { expectError, get, getJson, walk } from './fixtures.ts';
import { useServer } from '../helpers/harness.ts';

const world = useServer(() => startEmbedWorld());
let acmeKey: string;
let globexKey: string;
/** svc_user_id of IdP subjects signed in to acme. */
const learners: Record<string, string> = {};
let outline: { program: any; units: any[]; lessons: any[]; activities: any[] };

const session = async (sub: string, claims: Record<string, unknown> = {}) => {
  const res = await post(world.t, '/v1/embed/session', { tenant: 'acme', idp_token: await world.idp.sign({ sub, ...claims }) });
  expect(res.status, res.text).toBe(200);
  return res.body.svc_user_id as string;
};

beforeAll(async () => {
  learners.alice = await session('alice-sub', { email: 'alice@partner.test', email_verified: true });
  learners.bob = await session('bob-sub', { email: 'bob@partner.test', email_verified: false });
  acmeKey = (await world.t.op('key.create', { tenant: 'acme', name: 'dashboard' })).key;

  // globex: content created by an author over MCP, and its own key.
  const { client } = await authorClient(world.t, 'globex');
  const program = await ok(client, 'create_program', { tenant: 'globex', title: 'Web basics', description: 'HTML & CSS' });
  const unit = await ok(client, 'create_unit', { program_id: program.id, title: 'Pages' });
  const lessons = [
    await ok(client, 'create_lesson', { unit_id: unit.id, title: 'Markup' }),
    await ok(client, 'create_lesson', { unit_id: unit.id, title: 'Style' }),
  ];
  const activities = [
    await ok(client, 'create_activity', {
      lesson_id: lessons[0]!.id,
      title: 'A page',
      kind: 'site',
      spec: 'Publish a page.',
      rubric: [{ criterion: 'Valid HTML', weight: 2 }, { criterion: 'Has a title' }],
      pass_threshold: 60,
    }),
    await ok(client, 'create_activity', {
      lesson_id: lessons[1]!.id,
      title: 'A sheet',
      kind: 'document',
      spec: 'Write CSS.',
      rubric: [{ criterion: 'Readable' }],
    }),
  ];
  await client.close();
  outline = { program, units: [unit], lessons, activities };
  globexKey = (await world.t.op('key.create', { tenant: 'globex', name: 'dashboard' })).key;
});

describe('GET /v1/learners', () => {
  it('maps an embed learner to the IdP subject, with the email only when the IdP verified it', async () => {
    const alice = await getJson(world.t, `/v1/learners/${learners.alice}`, acmeKey);
    expect(alice).toEqual({
      svc_user_id: learners.alice,
      external_ids: [{ issuer: world.idp.issuer, subject: 'alice-sub' }],
      email: 'alice@partner.test',
      created_at: alice.created_at,
      updated_at: alice.updated_at,
    });
    expect((await getJson(world.t, `/v1/learners/${learners.bob}`, acmeKey)).email).toBeNull();
  });

  it('filters by external_id and issuer, and lists in created order with a cursor', async () => {
    const bySub = await getJson(world.t, '/v1/learners?external_id=bob-sub', acmeKey);
    expect(bySub.data.map((l: any) => l.svc_user_id)).toEqual([learners.bob]);
    const byIssuer = await getJson(world.t, `/v1/learners?issuer=${encodeURIComponent(world.idp.issuer)}`, acmeKey);
    expect(byIssuer.data.map((l: any) => l.svc_user_id).sort()).toEqual([learners.alice, learners.bob].sort());
    expect((await getJson(world.t, '/v1/learners?issuer=https%3A%2F%2Fother.example', acmeKey)).data).toEqual([]);
    const { ids, pages } = await walk(world.t, '/v1/learners', acmeKey, 1, (l) => l.svc_user_id);
    expect(ids).toEqual([learners.alice, learners.bob]);
    // A cursor of this list is refused by another endpoint, naming the parameter.
    const message = await expectError(await get(world.t, `/v1/deletions?cursor=${pages[0].next_cursor}`, acmeKey), 400, 'invalid_request');
    expect(message).toMatch(/^cursor: was issued by \/v1\/learners/);
  });

  it('joins every result row by svc_user_id', async () => {
    const res = await post(
      world.t,
      '/v1/embed/judge',
      { tenant: 'acme', activity_id: world.doc.activityId, artifact: { kind: 'document', content: 'A design note.' } },
      { authorization: `Bearer ${await world.idp.sign({ sub: 'alice-sub' })}` },
    );
    expect(res.status, res.text).toBe(200);
    const results = await getJson(world.t, '/v1/activity-results', acmeKey);
    expect(results.data.map((r: any) => r.svc_user_id)).toEqual([learners.alice]);
    expect(results.data[0]).toMatchObject({ program_id: world.doc.programId, activity_id: world.doc.activityId });
  });

  it('is confined to the key’s tenant: 404 for another tenant’s learner, and filters find nothing there', async () => {
    await expectError(await get(world.t, `/v1/learners/${learners.alice}`, globexKey), 404, 'not_found');
    expect((await getJson(world.t, '/v1/learners?external_id=alice-sub', globexKey)).data).toEqual([]);
    const globexLearners = (await getJson(world.t, '/v1/learners', globexKey)).data.map((l: any) => l.svc_user_id);
    expect(globexLearners).not.toContain(learners.alice);
  });
});

describe('GET /v1/programs', () => {
  it('lists the tenant’s programs, and the outline equals what authoring created', async () => {
    const list = await getJson(world.t, '/v1/programs', globexKey);
    expect(list.data.map((p: any) => p.id)).toEqual([outline.program.id]);
    const got = await getJson(world.t, `/v1/programs/${outline.program.id}`, globexKey);
    const activity = (a: any, withSpec: boolean) => ({
      id: a.id,
      title: a.title,
      position: a.position,
      archived_at: null,
      kind: a.kind,
      pass_threshold: a.pass_threshold,
      rubric: a.rubric,
      ...(withSpec && { spec: a.spec }),
    });
    const expected = (withSpec: boolean) => ({
      id: outline.program.id,
      title: 'Web basics',
      description: 'HTML & CSS',
      archived_at: null,
      created_at: got.created_at,
      updated_at: got.updated_at,
      units: outline.units.map((u) => ({
        id: u.id,
        title: u.title,
        position: u.position,
        archived_at: null,
        lessons: outline.lessons.map((l) => ({
          id: l.id,
          title: l.title,
          position: l.position,
          archived_at: null,
          activities: outline.activities.filter((a) => a.lesson_id === l.id).map((a) => activity(a, withSpec)),
        })),
      })),
    });
    expect(got).toEqual(expected(false));
    expect(got.units[0].lessons[0].activities[0].rubric).toEqual([
      { criterion: 'Valid HTML', weight: 2 },
      { criterion: 'Has a title', weight: 1 },
    ]);
    expect(await getJson(world.t, `/v1/programs/${outline.program.id}?include=spec`, globexKey)).toEqual(expected(true));
  });

  it('is confined to the key’s tenant (404), and refuses unknown include values', async () => {
    await expectError(await get(world.t, `/v1/programs/${outline.program.id}`, acmeKey), 404, 'not_found');
    expect((await getJson(world.t, '/v1/programs', acmeKey)).data.map((p: any) => p.id)).not.toContain(outline.program.id);
    expect(await expectError(await get(world.t, `/v1/programs/${outline.program.id}?include=rubric`, globexKey), 400, 'invalid_request')).toMatch(/^include:/);
    expect(await expectError(await get(world.t, '/v1/programs?updated_since=2026-01-01T00:00:00Z', globexKey), 400, 'invalid_request')).toMatch(
      /^updated_since:/,
    );
  });
});

describe('GET /v1/deletions and svc learner delete', () => {
  it('erases a learner: rows vanish from every list and come back as tombstones, in this tenant only', async () => {
    const before = await getJson(world.t, '/v1/deletions', acmeKey);
    expect(before.data).toEqual([]);
    const [resultId] = (await getJson(world.t, '/v1/activity-results', acmeKey)).data.map((r: any) => r.id);
    const artifactIds = (await getJson(world.t, '/v1/artifacts', acmeKey)).data.map((a: any) => a.id);
    expect(artifactIds.length).toBeGreaterThan(0);

    const erased = await world.t.op('learner.delete', { tenant: 'acme', svc_user_id: learners.alice });
    expect(erased).toMatchObject({ svc_user_id: learners.alice, deleted: { results: 1, learner: true, account: true } });

    expect((await getJson(world.t, '/v1/activity-results', acmeKey)).data).toEqual([]);
    expect((await getJson(world.t, '/v1/artifacts', acmeKey)).data).toEqual([]);
    expect((await getJson(world.t, '/v1/progress', acmeKey)).data.filter((p: any) => p.svc_user_id === learners.alice)).toEqual([]);
    await expectError(await get(world.t, `/v1/learners/${learners.alice}`, acmeKey), 404, 'not_found');

    const feed = await getJson(world.t, '/v1/deletions', acmeKey);
    const tomb = (resource: string) => feed.data.filter((d: any) => d.resource === resource);
    expect(tomb('activity_result').map((d: any) => d.id)).toEqual([resultId]);
    expect(
      tomb('artifact')
        .map((d: any) => d.id)
        .sort(),
    ).toEqual([...artifactIds].sort());
    expect(tomb('learner')).toEqual([expect.objectContaining({ id: learners.alice, svc_user_id: learners.alice })]);
    for (const d of feed.data) expect(Object.keys(d).sort()).toEqual(['deleted_at', 'id', 'program_id', 'resource', 'svc_user_id']);
    expect(feed.consistent_through).toEqual(expect.any(String));
    expect(feed.consistent_through >= feed.data.at(-1).deleted_at).toBe(true);

    // Another tenant's key never sees them; the filter narrows by resource.
    expect((await getJson(world.t, '/v1/deletions', globexKey)).data).toEqual([]);
    expect((await getJson(world.t, '/v1/deletions?resource=learner', acmeKey)).data).toHaveLength(1);
    // Erasing again, or in a tenant the learner is not in, is not found.
    await expect(world.t.op('learner.delete', { tenant: 'acme', svc_user_id: learners.alice })).rejects.toThrow(/no learner/);
    await expect(world.t.op('learner.delete', { tenant: 'globex', svc_user_id: learners.bob })).rejects.toThrow(/no learner/);
  });

  it('lists deleted content from updated_since on, with the watermark header', async () => {
    const since = (await getJson(world.t, '/v1/deletions', globexKey)).consistent_through;
    await world.t.db.query('delete from activities where id = $1', [outline.activities[1].id]);
    const feed = await getJson(world.t, `/v1/deletions?updated_since=${since}`, globexKey);
    expect(feed.data).toEqual([
      expect.objectContaining({ resource: 'activity', id: outline.activities[1].id, program_id: outline.program.id, svc_user_id: null }),
    ]);
    const res = await get(world.t, `/v1/deletions?updated_since=${since}`, globexKey);
    expect(res.headers.get('svc-consistent-through')).toBe((await res.json()).consistent_through);
  });

  it('refuses bad feed parameters naming them', async () => {
    for (const [url, param] of [
      ['/v1/deletions?updated_since=yesterday', 'updated_since'],
      ['/v1/deletions?resource=tenant', 'resource'],
      ['/v1/deletions?status=failed', 'status'],
      ['/v1/learners?status=failed', 'status'],
      ['/v1/learners?external_id=', 'external_id'],
    ] as const) {
      expect(await expectError(await get(world.t, url, acmeKey), 400, 'invalid_request'), url).toMatch(new RegExp(`^${param}:`));
    }
  });
});

describe('fixes found tried as a partner would', () => {
  it('builds Link from the path when the request target is in absolute form', async () => {
    await session('carol-sub'); // two learners at least, whatever ran before
    const { request } = await import('node:http');
    const url = new URL(world.t.url);
    const link = await new Promise<string | undefined>((resolve, reject) => {
      const req = request(
        { host: url.hostname, port: url.port, path: `${world.t.url}/v1/learners?limit=1`, headers: { authorization: `Bearer ${acmeKey}` } },
        (res) => {
          res.resume();
          expect(res.statusCode).toBe(200);
          resolve(res.headers.link as string | undefined);
        },
      );
      req.on('error', reject);
      req.end();
    });
    expect(link).toMatch(
      new RegExp(`^<${world.t.deps.config.baseUrl.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/v1/learners\\?limit=1&cursor=[A-Za-z0-9_-]+>; rel="next"$`),
    );
  });

  it('echoes a client X-Request-Id only when short and plain, else makes one', async () => {
    const echo = async (id: string) => (await get(world.t, '/v1/health', undefined, 'bearer', { 'x-request-id': id })).headers.get('x-request-id');
    expect(await echo('partner-trace-42')).toBe('partner-trace-42');
    expect(await echo('x'.repeat(129))).toMatch(/^[0-9a-f-]{36}$/);
    expect(await echo('a b<script>')).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('answers POST on a read path with 405, a trailing slash and an over-long id with a message that says so', async () => {
    const res = await fetch(`${world.t.url}/v1/learners`, { method: 'POST', headers: { authorization: `Bearer ${acmeKey}` } });
    expect(res.headers.get('allow')).toBe('GET, HEAD');
    await expectError(res, 405, 'method_not_allowed');
    expect(await expectError(await get(world.t, '/v1/activity-results/', acmeKey), 404, 'not_found')).toMatch(/trailing slash/);
    expect(await expectError(await get(world.t, `/v1/artifacts/${'a'.repeat(150)}`, acmeKey), 400, 'invalid_request')).toMatch(/^path: .*longer than 100/);
  });
});
