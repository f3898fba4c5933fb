/**
 * The service's main job, end to end, on real course content and real clients (issue 2):
 * admin setup → instructor sign-in (supabase-js) → Odin import over MCP (SDK client) →
 * cross-tenant refusal → learner session from a test IdP → graded and pending submissions →
 * the partner reads results, progress and artifacts with an API key, page by page.
 */
import { createClient } from '@supabase/supabase-js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, seedAuthor, testJudge, useApp, useServer, type TestApp } from '../helpers/harness.ts';
import { importOdin, loadOdin, ODIN_MISSING, odinAvailable, readProgram, type ImportReport, type OdinProgram } from '../helpers/odin.ts';
import { startTestIdp } from '../helpers/test-idp.ts';
import { startTestModel } from '../helpers/test-model.ts';

const ready = odinAvailable();
if (!ready) console.warn(ODIN_MISSING);

describe.skipIf(!ready)('end to end on The Odin Project foundations', () => {
  const model = useServer(() => startTestModel());
  const idp = useServer(() => startTestIdp());
  const t = useApp(() => startApp({ judge: testJudge(model.baseUrl, { timeoutMs: 10_000 }) })); // judge configured
  // same database and secrets, no model
  const unjudged = useApp(() => {
    const { jwtSecret, anonKey, serviceRoleKey } = t.deps.config;
    return startApp({ jwtSecret, anonKey, serviceRoleKey }, { db: t.db });
  });
  let apiKey: string;
  let source: OdinProgram;
  let imported: ImportReport;
  const clients: Client[] = [];

  const mcp = async (app: TestApp, accessToken: string) => {
    const client = new Client({ name: 'e2e', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${app.url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${accessToken}` } } }),
    );
    clients.push(client);
    return client;
  };
  const signIn = async (app: TestApp, email: string, password: string) => {
    const supabase = createClient(app.url, app.deps.config.anonKey, { auth: { persistSession: false, autoRefreshToken: false } });
    const { data, error } = await supabase.auth.signInWithPassword({ email, password });
    expect(error).toBeNull();
    return data.session!.access_token;
  };
  const results = async (path: string) => {
    const res = await fetch(`${t.url}${path}`, { headers: { authorization: `Bearer ${apiKey}` } });
    expect(res.status, path).toBe(200);
    return res.json() as Promise<{ data: Record<string, any>[]; next_cursor: string | null }>;
  };
  /** Every row of a list endpoint, one row per page. */
  const pageThrough = async (path: string) => {
    const rows: Record<string, any>[] = [];
    let cursor: string | null = null;
    do {
      const sep: string = path.includes('?') ? '&' : '?';
      const page = await results(`${path}${sep}limit=1${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.data.length).toBeLessThanOrEqual(1);
      rows.push(...page.data);
      cursor = page.next_cursor;
    } while (cursor);
    return rows;
  };

  beforeAll(() => {
    source = loadOdin();
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
  });

  it('admin: creates two tenants with an author each, an API key and the IdP setting', async () => {
    await seedAuthor(t, 'odin', 'instructor@odin.test', 'instructor password');
    await seedAuthor(t, 'rival', 'instructor@rival.test', 'rival password');
    apiKey = (await t.op('key.create', { tenant: 'odin', name: 'dashboard' })).key;
    await t.op('idp.set', { tenant: 'odin', issuer: idp.issuer, jwks_url: idp.jwksUrl });
  });

  it('author: signs in with supabase-js and imports the program over MCP, tree intact and in order', async () => {
    const client = await mcp(t, await signIn(t, 'instructor@odin.test', 'instructor password'));
    imported = await importOdin(client, 'odin', source);
    expect([imported.units, imported.lessons, imported.activities]).toEqual([8, 46, 45]);

    const tree = await readProgram(client, imported.programId);
    expect(tree.title).toBe(source.title);
    expect(tree.units.map((u: any) => u.title)).toEqual(source.units.map((u) => u.title));
    for (const [i, unit] of source.units.entries()) {
      expect(tree.units[i].lessons.map((l: any) => l.title)).toEqual(unit.lessons.map((l) => l.title));
      for (const [j, lesson] of unit.lessons.entries()) {
        const got = tree.units[i].lessons[j].activities;
        expect(got.map((a: any) => a.title)).toEqual(lesson.activities.map((a) => a.title));
        expect(got.map((a: any) => a.rubric.length)).toEqual(lesson.activities.map((a) => a.rubric.length));
      }
    }
  });

  it("another tenant's author is refused writes into this tenant, and nothing is written", async () => {
    const rival = await mcp(t, await signIn(t, 'instructor@rival.test', 'rival password'));
    const before = await t.db.query<{ n: number }>('select count(*)::int as n from units');
    const unit = await rival.callTool({ name: 'create_unit', arguments: { program_id: imported.programId, title: 'Injected' } });
    expect(unit.isError).toBe(true);
    const program = await rival.callTool({ name: 'create_program', arguments: { tenant: 'odin', title: 'Injected' } });
    expect(program.isError).toBe(true);
    const update = await rival.callTool({ name: 'update_program', arguments: { id: imported.programId, title: 'Hijacked' } });
    expect(update.isError).toBe(true);
    expect(await t.db.query<{ n: number }>('select count(*)::int as n from units')).toEqual(before);
    const [{ title }] = await t.db.query<{ title: string }>('select title from programs where id = $1', [imported.programId]);
    expect(title).toBe(source.title);
  });

  let learnerId: string;
  const submissions: Record<string, { status: string; result_id: string; artifact_id: string; score?: number }> = {};

  it('learner: gets a session from an IdP token, and submissions pass, fail, or stay pending', async () => {
    const idpToken = await idp.sign({ sub: 'learner-42', email: 'learner@partner.test' });
    const session = await fetch(`${t.url}/v1/embed/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ idp_token: idpToken, tenant: 'odin' }),
    });
    expect(session.status).toBe(200);
    const { access_token, svc_user_id } = await session.json();
    learnerId = svc_user_id;

    const documents = [...imported.activityIds.entries()]
      .map(([sourceId, id]) => ({ id, activity: source.units.flatMap((u) => u.lessons.flatMap((l) => l.activities)).find((a) => a.id === sourceId)! }))
      .filter((a) => a.activity.kind === 'document');
    const [good, bad, later] = documents;
    const judge = (app: TestApp, activityId: string, content: string) =>
      fetch(`${app.url}/v1/embed/judge`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${access_token}` },
        body: JSON.stringify({ tenant: 'odin', activity_id: activityId, artifact: { kind: 'document', content } }),
      }).then(async (r) => {
        expect(r.status).toBe(200);
        return r.json();
      });

    submissions.pass = await judge(t, good!.id, 'The Odin Project is a free, open-source curriculum; work through it in order.');
    submissions.fail = await judge(t, bad!.id, 'TODO: answer these questions later');
    submissions.pending = await judge(unjudged, later!.id, 'Answers written, waiting for a grader.');
    expect(submissions.pass.status).toBe('passed');
    expect(submissions.pass.score).toBe(100);
    expect(submissions.fail.status).toBe('failed');
    expect(submissions.pending.status).toBe('pending');
    expect(model.requests).toHaveLength(2);
  });

  it('partner: pages through results, progress and artifacts with limit=1, no gaps or repeats', async () => {
    const resultRows = await pageThrough('/v1/activity-results');
    expect(resultRows).toHaveLength(3);
    expect(new Set(resultRows.map((r) => r.id)).size).toBe(3);
    const byId = Object.fromEntries(resultRows.map((r) => [r.id, r]));
    expect(byId[submissions.pass!.result_id]).toMatchObject({ status: 'completed', score: 100, svc_user_id: learnerId });
    expect(byId[submissions.fail!.result_id]).toMatchObject({ status: 'failed', score: 0 });
    // Answered `pending` by the app without a model; the durable queue lets the app with a model
    // grade it later (src/embed), so by now it may have been graded.
    expect(['in_progress', 'completed']).toContain(byId[submissions.pending!.result_id].status);

    const artifactRows = await pageThrough('/v1/artifacts');
    expect(artifactRows.map((a) => a.id).sort()).toEqual(
      Object.values(submissions)
        .map((s) => s.artifact_id)
        .sort(),
    );
    expect(artifactRows.find((a) => a.id === submissions.pass!.artifact_id)!.verification).toMatchObject({ passed: true });

    const progress = await pageThrough('/v1/progress');
    expect(progress).toEqual([
      expect.objectContaining({ svc_user_id: learnerId, program_id: imported.programId, completed_count: 1, total_count: 45, percent: 2 }),
    ]);

    const one = await fetch(`${t.url}/v1/activity-results/${submissions.pass!.result_id}`, { headers: { 'x-svc-api-key': apiKey } });
    expect((await one.json()).artifact_ids).toEqual([submissions.pass!.artifact_id]);
  });
});
