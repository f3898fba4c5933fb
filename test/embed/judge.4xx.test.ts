/**
 * POST /v1/embed/judge — refusals: authentication (401), another tenant's activity (404), bad
 * input (400). Every refusal leaves the database as it was.
 */
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startApp, testJudge, useApp, useFixture, useServer, type TestApp } from '../helpers/harness.ts';
import { startTestIdp } from '../helpers/test-idp.ts';
import { startTestModel } from '../helpers/test-model.ts';
import { countRows, expectError, post, seedActivity, useAppWithIdp, withoutRequestId } from './fixtures.ts';
import { startSite } from './servers.ts';

const model = useServer(() => startTestModel());
const idpB = useServer(() => startTestIdp({ alg: 'ES256' }));
const { t, idp: idpA } = useAppWithIdp({ acme: {} }, () => startApp({ judge: testJudge(model.baseUrl) }));
// Same database, outbound fetches to private addresses refused (the production setting).
const strict = useApp(() => startApp({ judge: testJudge(model.baseUrl), fetchAllowPrivate: false }, { db: t.db }));
beforeAll(async () => {
  await t.op('tenant.create', { slug: 'globex' });
  await t.op('idp.set', { tenant: 'globex', issuer: idpB.issuer, jwks_url: idpB.jwksUrl });
});
const docA = useFixture(() => seedActivity(t, 'acme'));
const siteA = useFixture(() => seedActivity(t, 'acme', { kind: 'site' }));
const docB = useFixture(() => seedActivity(t, 'globex'));
const sessionA = useFixture(async () => {
  const res = await post(t, '/v1/embed/session', { tenant: 'acme', idp_token: await idpA.sign({ sub: 'alice' }) });
  return res.body as { access_token: string; svc_user_id: string };
});
beforeAll(async () => {
  // globex has a member of its own, so a membership check that looked at the wrong user would find one.
  expect((await post(t, '/v1/embed/session', { tenant: 'globex', idp_token: await idpB.sign({ sub: 'bob' }) })).status).toBe(200);
});
/** An internal page (on a loopback address) that no refused fetch may reach. */
const pages = useServer(() => startSite({ '/': { type: 'text/html', body: '<p>internal admin page</p>' } }));

let counts: number[];
const snapshot = async () => Promise.all(['activity_results', 'artifacts', 'progress', 'auth.users', 'memberships'].map((table) => countRows(t, table)));
beforeEach(async () => {
  counts = await snapshot();
});
const expectNothingWritten = async () => expect(await snapshot()).toEqual(counts);

const judge = (app: TestApp, body: unknown, token?: string) =>
  post(app, '/v1/embed/judge', body, token === undefined ? {} : { authorization: `Bearer ${token}` });
const docBody = (overrides: Record<string, unknown> = {}) => ({
  tenant: 'acme',
  activity_id: docA.activityId,
  artifact: { kind: 'document', content: 'complete work' },
  ...overrides,
});

describe('POST /v1/embed/judge 401', () => {
  it('control: tenant A learner with a session token is accepted on tenant A', async () => {
    const res = await judge(t, docBody(), sessionA.access_token);
    expect(res.body.status).toBe('passed');
    counts = await snapshot();
  });

  it('refuses a missing or malformed Authorization header', async () => {
    expectError(await judge(t, docBody()), 401, 'unauthorized');
    expectError(await post(t, '/v1/embed/judge', docBody(), { authorization: `Basic ${sessionA.access_token}` }), 401, 'unauthorized');
    expectError(await judge(t, docBody(), 'garbage'), 401, 'unauthorized');
    await expectNothingWritten();
  });

  it("refuses tenant A's learner (embed session, bound to A) on tenant B: 403", async () => {
    const res = await judge(t, docBody({ tenant: 'globex', activity_id: docB.activityId }), sessionA.access_token);
    expectError(res, 403, 'forbidden');
    await expectNothingWritten();
  });

  it("refuses tenant A's IdP token on tenant B", async () => {
    const res = await judge(t, docBody({ tenant: 'globex', activity_id: docB.activityId }), await idpA.sign({ sub: 'alice' }));
    expectError(res, 401, 'unauthorized');
    await expectNothingWritten();
  });

  it('refuses the access token of a logged-out session', async () => {
    const s = await post(t, '/v1/embed/session', { tenant: 'acme', idp_token: await idpA.sign({ sub: 'leaver' }) });
    counts = await snapshot();
    const logout = await fetch(`${t.url}/auth/v1/logout`, {
      method: 'POST',
      headers: { apikey: t.deps.config.anonKey, authorization: `Bearer ${s.body.access_token}` },
    });
    expect(logout.status).toBe(204);
    expectError(await judge(t, docBody(), s.body.access_token), 401, 'unauthorized');
    await expectNothingWritten();
  });

  it('refuses a session token minted by another deployment (other secret)', async () => {
    const other = await startApp({}, { db: t.db });
    try {
      const s = await post(other, '/v1/embed/session', { tenant: 'acme', idp_token: await idpA.sign({ sub: 'elsewhere' }) });
      expect(s.status).toBe(200);
      counts = await snapshot();
      expectError(await judge(t, docBody(), s.body.access_token), 401, 'unauthorized');
      await expectNothingWritten();
    } finally {
      await other.close();
    }
  });

  it('answers an unknown tenant like a bad token', async () => {
    const token = await idpA.sign({ sub: 'alice' });
    const unknown = await judge(t, docBody({ tenant: 'nowhere' }), token);
    const bad = await judge(t, docBody(), 'garbage');
    expectError(unknown, 401, 'unauthorized');
    expect(withoutRequestId(unknown.body)).toEqual(withoutRequestId(bad.body));
  });
});

describe('POST /v1/embed/judge 404', () => {
  it("answers not_found for another tenant's activity, and writes nothing", async () => {
    const res = await judge(t, docBody({ activity_id: docB.activityId }), await idpA.sign({ sub: 'alice' }));
    expectError(res, 404, 'not_found');
    const viaSession = await judge(t, docBody({ activity_id: docB.activityId }), sessionA.access_token);
    expectError(viaSession, 404, 'not_found');
    expect(withoutRequestId(viaSession.body)).toEqual(withoutRequestId(res.body));
    await expectNothingWritten();
  });

  it('answers not_found for an activity that does not exist, like for another tenant', async () => {
    const res = await judge(t, docBody({ activity_id: '01890000-0000-7000-8000-000000000000' }), sessionA.access_token);
    expectError(res, 404, 'not_found');
    await expectNothingWritten();
  });

  it('does not create a first-sight learner when the request is refused', async () => {
    const res = await judge(t, docBody({ activity_id: docB.activityId }), await idpA.sign({ sub: 'never-seen' }));
    expectError(res, 404, 'not_found');
    await expectNothingWritten();
  });
});

describe('POST /v1/embed/judge 400', () => {
  it("refuses an artifact whose kind is not the activity's", async () => {
    const res = await judge(t, docBody({ artifact: { kind: 'site', ref_url: 'https://example.com/' } }), sessionA.access_token);
    expectError(res, 400, 'invalid_request');
    await expectNothingWritten();
  });

  it('refuses non-http(s) URLs', async () => {
    for (const url of ['ftp://example.com/x', 'javascript:alert(1)', 'file:///etc/passwd', 'not a url']) {
      const ref = await judge(t, docBody({ activity_id: siteA.activityId, artifact: { kind: 'site', ref_url: url } }), sessionA.access_token);
      expectError(ref, 400, 'invalid_request');
      const repo = await judge(t, docBody({ artifact: { kind: 'document', repo_url: url } }), sessionA.access_token);
      expectError(repo, 400, 'invalid_request');
    }
    await expectNothingWritten();
  });

  it('refuses private addresses when private fetches are not allowed, before fetching', async () => {
    const pagesPort = new URL(pages.url).port;
    for (const ref_url of [
      `http://127.0.0.1:${pagesPort}/`,
      `http://localhost:${pagesPort}/`,
      `http://[::ffff:127.0.0.1]:${pagesPort}/`,
      'http://169.254.169.254/latest/meta-data/',
    ]) {
      const res = await judge(strict, docBody({ activity_id: siteA.activityId, artifact: { kind: 'site', ref_url } }), await idpA.sign({ sub: 'alice' }));
      expectError(res, 400, 'invalid_request');
    }
    expect(pages.hits).toEqual([]);
    await expectNothingWritten();
  });

  it('refuses bad JSON, missing fields and wrong types', async () => {
    const token = sessionA.access_token;
    expectError(await post(t, '/v1/embed/judge', '{"tenant": "acme",', { authorization: `Bearer ${token}` }), 400, 'invalid_request');
    expectError(await judge(t, { tenant: 'acme', activity_id: docA.activityId }, token), 400, 'invalid_request');
    expectError(await judge(t, docBody({ activity_id: 'not-a-uuid' }), token), 400, 'invalid_request');
    expectError(await judge(t, docBody({ artifact: { kind: 'document' } }), token), 400, 'invalid_request');
    expectError(await judge(t, docBody({ artifact: { kind: 'poem', content: 'x' } }), token), 400, 'invalid_request');
    expectError(await judge(t, docBody({ artifact: { kind: 'document', content: 42 } }), token), 400, 'invalid_request');
    expectError(await judge(t, docBody({ tenant: 7 }), token), 400, 'invalid_request');
    await expectNothingWritten();
  });

  it('refuses content over 256 KiB', async () => {
    const res = await judge(t, docBody({ artifact: { kind: 'document', content: 'é'.repeat(140 * 1024) } }), sessionA.access_token);
    expectError(res, 400, 'invalid_request');
    expect(res.body.error.message).toMatch(/content/);
    await expectNothingWritten();
  });
});
