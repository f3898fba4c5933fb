/**
 * Deep Linking 2.0 and the instructor's preview over HTTP (issue #22): the loopback LMS signs the
 * launches (lms.ts) and receives the deep-linking response at its return URL, where it verifies the
 * tool's JWT against `/lti/v1/jwks` (lms-deep-linking.ts); the test plays the browser. Every
 * refusal has a test that fails when its check is removed; nothing but the single use of the
 * state, nonce and picker token is stored by a deep link, and a preview makes nobody a learner.
 */
import { describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { SignJWT, type JWTPayload } from 'jose';
import { startApp, useApp, useFixture, useServer } from '../helpers/harness.ts';
import { seedActivity } from '../embed/fixtures.ts';
import { DEPLOYMENT_ID, startTestLms } from './lms.ts';
import { DL_DATA, INSTRUCTOR, installDeepLinking, type DeepLinkingLms } from './lms-deep-linking.ts';

const LTI = 'https://purl.imsglobal.org/spec/lti/claim/';
const DL = 'https://purl.imsglobal.org/spec/lti-dl/claim/';

let toolUrl = '';
const lms = useServer(async () => {
  const l = await startTestLms();
  const dl = installDeepLinking(l, () => toolUrl);
  l.tamper = undefined; // HTTP tests sign their own claims
  return Object.assign(l, { dl });
}) as Awaited<ReturnType<typeof startTestLms>> & { dl: DeepLinkingLms };
/** Added to the tool's clock (ms): a test moves time forward. */
let skew = 0;
const t = useApp(async () => {
  const app = await startApp({}, { now: () => new Date(Date.now() + skew) });
  toolUrl = app.url;
  return app;
});
const world = useFixture(async () => {
  lms.setTool(t.url);
  await t.op('tenant.create', { slug: 'acme' });
  await t.op('tenant.create', { slug: 'globex' });
  await t.op('lti.platforms.add', { tenant: 'acme', ...lms.registration });
  const acme = await seedActivity(t, 'acme');
  const second = await seedActivity(t, 'acme', {
    title: 'Sketch the architecture',
    kind: 'diagram',
    spec: '## Draw it\n\nA **diagram** of the [system](https://example.org) with its parts.',
  });
  const archived = await seedActivity(t, 'acme', { title: 'Retired exercise' });
  await t.db.query('update activities set archived_at = now() where id = $1', [archived.activityId]);
  const globex = await seedActivity(t, 'globex', { title: 'Globex secret' });
  return { acme, second, archived, globex };
});

async function login(sub: string) {
  const params = new URLSearchParams({
    iss: lms.issuer,
    login_hint: sub,
    target_link_uri: `${t.url}/lti/v1/launch`,
    client_id: lms.clientId,
    lti_deployment_id: DEPLOYMENT_ID,
  });
  const res = await fetch(`${t.url}/lti/v1/login?${params}`, { redirect: 'manual' });
  const auth = new URL(res.headers.get('location')!);
  return { state: auth.searchParams.get('state')!, nonce: auth.searchParams.get('nonce')!, cookie: res.headers.get('set-cookie')!.split(';')[0]! };
}

/** A launch whose claims are a learner's resource-link launch of `activity` with `change` applied. */
async function launch(change: (c: JWTPayload) => JWTPayload, sub = 'prof', activity = world.acme.activityId) {
  const l = await login(sub);
  const claims = change(lms.launchClaims({ activity, sub, nonce: l.nonce }));
  const res = await fetch(`${t.url}/lti/v1/launch`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: l.cookie },
    body: new URLSearchParams({ id_token: await lms.idToken(claims), state: l.state }),
  });
  return { res, html: await res.text() };
}

const deepLink = (settings: Record<string, unknown> | null, roles = [INSTRUCTOR]) =>
  launch((c) => ({ ...lms.dl.deepLinkClaims(c, settings), [`${LTI}roles`]: roles }));
const settings = (extra: Record<string, unknown> = {}) => ({
  deep_link_return_url: lms.dl.returnUrl,
  accept_types: ['ltiResourceLink'],
  accept_multiple: false,
  data: DL_DATA,
  ...extra,
});

function expectRefused(r: { res: Response; html: string }, status: number, code: string) {
  expect(r.res.status, r.html).toBe(status);
  expect(r.res.headers.get('content-type')).toMatch(/^text\/html/);
  expect(r.html).toContain(`Error code: ${code}.`);
  expect(r.html).not.toMatch(/ at .*\.ts:\d+|stack/i);
  expect(r.html).not.toContain('name="picker_token"');
}

const tokenOf = (html: string) => /name="picker_token" value="([^"]+)"/.exec(html)![1]!;

/** POST the picker's form: `picks` as repeated `activity` fields, as a browser sends it from our page unless `headers` say otherwise. */
async function respond(token: string, picks: string[], headers: Record<string, string> = { 'sec-fetch-site': 'same-origin' }) {
  const body = new URLSearchParams({ picker_token: token });
  for (const p of picks) body.append('activity', p);
  const res = await fetch(`${t.url}/lti/v1/deep-linking/response`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body,
  });
  return { res, html: await res.text() };
}

/** What a deep link may store (the single-use values apart): users, sessions, courses, placements. */
const stored = async () => {
  const n = async (sql: string) => (await t.db.query(sql)).length;
  return [
    await n(`select 1 from auth.identities where provider like 'lti:%'`),
    await n('select 1 from auth.sessions'),
    await n('select 1 from memberships'),
    await n('select 1 from lti_contexts'),
    await n('select 1 from lti_context_members'),
    await n('select 1 from lti_resource_links'),
  ];
};

describe('the picker', () => {
  it("shows an instructor the tenant's unarchived activities as radio buttons, framed by the platform only", async () => {
    const before = await stored();
    const r = await deepLink(settings());
    expect(r.res.status, r.html).toBe(200);
    expect(r.res.headers.get('content-security-policy')).toMatch(new RegExp(`form-action 'self'; base-uri 'none'; frame-ancestors ${lms.origin}$`));
    expect(r.res.headers.get('cache-control')).toBe('no-store');
    expect(r.html).toContain(`<input type="radio" name="activity" value="${world.acme.activityId}" id="a-${world.acme.activityId}"`);
    expect(r.html).toContain(`<label for="a-${world.second.activityId}">Sketch the architecture</label>`);
    expect(r.html).toContain('<label for="q">Search activities</label>');
    expect(r.html).not.toContain('Retired exercise');
    expect(r.html).not.toContain('Globex secret');
    expect(r.html).not.toContain('type="checkbox"');
    expect(await stored()).toEqual(before);
  });

  it('offers checkboxes when the platform accepts several items', async () => {
    const r = await deepLink(settings({ accept_multiple: true }));
    expect(r.res.status).toBe(200);
    expect(r.html).toContain(`<input type="checkbox" name="activity" value="${world.acme.activityId}"`);
  });

  it('refuses a learner, and a learner who is also an instructor', async () => {
    expectRefused(await deepLink(settings(), ['http://purl.imsglobal.org/vocab/lis/v2/membership#Learner']), 403, 'not_instructor');
    expectRefused(await deepLink(settings(), [INSTRUCTOR, 'http://purl.imsglobal.org/vocab/lis/v2/membership#Learner']), 403, 'not_instructor');
    expectRefused(await deepLink(settings(), []), 403, 'not_instructor');
    // Institution roles are the person's, not their part in this course: an institution instructor who is a Mentor here.
    expectRefused(
      await deepLink(settings(), [
        'http://purl.imsglobal.org/vocab/lis/v2/institution/person#Instructor',
        'http://purl.imsglobal.org/vocab/lis/v2/membership#Mentor',
      ]),
      403,
      'not_instructor',
    );
    for (const role of [
      'http://purl.imsglobal.org/vocab/lis/v2/membership#ContentDeveloper',
      'http://purl.imsglobal.org/vocab/lis/v2/institution/person#Administrator',
    ]) {
      expect((await deepLink(settings(), [role])).res.status).toBe(200);
    }
  });

  it('refuses missing or invalid deep_linking_settings', async () => {
    const cases: Array<Record<string, unknown> | null> = [
      null,
      settings({ deep_link_return_url: undefined }),
      settings({ deep_link_return_url: 'javascript:alert(1)' }),
      settings({ deep_link_return_url: 'not a url' }),
      settings({ accept_types: ['file', 'html'] }),
      settings({ accept_types: 'ltiResourceLink' }),
      settings({ accept_multiple: 'yes' }),
      settings({ data: { not: 'a string' } }),
    ];
    for (const s of cases) expectRefused(await deepLink(s), 400, 'invalid_deep_linking');
  });
});

describe('the response', () => {
  it("signs an LtiDeepLinkingResponse that the LMS verifies with the tool's JWKS, every claim as the spec asks, storing nothing", async () => {
    const r = await deepLink(settings());
    const before = await stored();
    const answer = await respond(tokenOf(r.html), [world.second.activityId]);
    expect(answer.res.status, answer.html).toBe(200);
    expect(answer.res.headers.get('content-security-policy')).toContain(`form-action ${lms.origin}; base-uri 'none'; frame-ancestors ${lms.origin}`);
    expect(answer.html).toContain(`<form method="post" action="${lms.dl.returnUrl}"><input type="hidden" name="JWT" value="`);
    expect(answer.html).toContain('<noscript>');
    const jwt = /name="JWT" value="([^"]+)"/.exec(answer.html)![1]!;

    // The browser's auto-submitted form, to the LMS's return URL.
    const at = lms.dl.received.length;
    const posted = await fetch(lms.dl.returnUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ JWT: jwt }),
    });
    expect(posted.status, await posted.text()).toBe(200);
    const got = lms.dl.received[at]!;
    expect(got.ok).toBe(true);
    if (!got.ok) return;
    const keys = (await (await fetch(`${t.url}/lti/v1/jwks`)).json()) as { keys: Array<{ kid: string }> };
    expect(got.header).toEqual({ alg: 'RS256', kid: keys.keys[0]!.kid, typ: 'JWT' });
    const p = got.payload;
    const now = Math.floor(Date.now() / 1000);
    expect(p.iss).toBe(lms.clientId);
    expect(p.aud).toBe(lms.issuer);
    expect(typeof p.nonce === 'string' && p.nonce.length >= 16).toBe(true);
    expect(Math.abs(p.iat! - now)).toBeLessThan(10);
    expect(p.exp! - p.iat!).toBe(300);
    expect(p[`${LTI}deployment_id`]).toBe(DEPLOYMENT_ID);
    expect(p[`${LTI}message_type`]).toBe('LtiDeepLinkingResponse');
    expect(p[`${LTI}version`]).toBe('1.3.0');
    expect(p[`${DL}data`]).toBe(DL_DATA);
    expect(p[`${DL}content_items`]).toEqual([
      {
        type: 'ltiResourceLink',
        title: 'Sketch the architecture',
        text: 'Draw it A diagram of the system with its parts.',
        url: `${t.url}/lti/v1/launch`,
        custom: { activity_id: world.second.activityId },
        lineItem: { scoreMaximum: 100, label: 'Sketch the architecture', resourceId: world.second.activityId },
      },
    ]);
    expect(await stored()).toEqual(before);
    expect(await t.db.query(`select 1 from lti_used_values where kind = 'picker'`)).not.toHaveLength(0);
  });

  it('places several activities when the platform accepts several, and leaves out data it did not send', async () => {
    const r = await deepLink(settings({ accept_multiple: true, data: undefined }));
    const answer = await respond(tokenOf(r.html), [world.acme.activityId, world.second.activityId]);
    expect(answer.res.status, answer.html).toBe(200);
    const jwt = /name="JWT" value="([^"]+)"/.exec(answer.html)![1]!;
    const payload = JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString());
    expect(payload[`${DL}content_items`].map((i: { custom: { activity_id: string } }) => i.custom.activity_id)).toEqual([
      world.acme.activityId,
      world.second.activityId,
    ]);
    expect(payload).not.toHaveProperty(`${DL}data`);
  });

  it('refuses two picks when the platform accepts one', async () => {
    const r = await deepLink(settings({ accept_multiple: false }));
    expectRefused(await respond(tokenOf(r.html), [world.acme.activityId, world.second.activityId]), 400, 'too_many');
  });

  it("refuses another tenant's activity, an archived one, an unknown one", async () => {
    for (const id of [world.globex.activityId, world.archived.activityId, '0190a5a6-0000-7000-8000-000000000000']) {
      const r = await deepLink(settings());
      const refused = await respond(tokenOf(r.html), [id]);
      expectRefused(refused, 403, 'activity_not_available');
      expect(refused.html).not.toContain('Globex secret');
    }
  });

  it('refuses a replayed picker token', async () => {
    const r = await deepLink(settings());
    const token = tokenOf(r.html);
    expect((await respond(token, [world.acme.activityId])).res.status).toBe(200);
    expectRefused(await respond(token, [world.acme.activityId]), 400, 'replayed');
  });

  it('refuses an expired picker token', async () => {
    const r = await deepLink(settings());
    skew = 31 * 60 * 1000;
    try {
      const expired = await respond(tokenOf(r.html), [world.acme.activityId]);
      expectRefused(expired, 400, 'picker_expired');
      expect(expired.res.headers.get('content-security-policy')).toMatch(new RegExp(`frame-ancestors ${lms.origin}$`)); // shown in the LMS frame
    } finally {
      skew = 0;
    }
    // Unused, so still good within its half hour.
    expect((await respond(tokenOf(r.html), [world.acme.activityId])).res.status).toBe(200);
  });

  it('refuses a token minted for another use: a login state as a picker token, a picker token as a login state', async () => {
    const l = await login('prof');
    expectRefused(await respond(l.state, [world.acme.activityId]), 400, 'invalid_picker');
    const picker = tokenOf((await deepLink(settings())).html);
    const res = await fetch(`${t.url}/lti/v1/launch`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: l.cookie },
      body: new URLSearchParams({
        id_token: await lms.idToken(lms.launchClaims({ activity: world.acme.activityId, sub: 'prof', nonce: l.nonce })),
        state: picker,
      }),
    });
    expectRefused({ res, html: await res.text() }, 400, 'invalid_state');
  });

  it('refuses an altered or foreign picker token, no token, no pick, a pick that is not an id', async () => {
    const r = await deepLink(settings());
    const token = tokenOf(r.html);
    const [h, p, s] = token.split('.');
    const claims = JSON.parse(Buffer.from(p!, 'base64url').toString());
    const forged = `${h}.${Buffer.from(JSON.stringify({ ...claims, multi: true })).toString('base64url')}.${s}`;
    expectRefused(await respond(forged, [world.acme.activityId, world.second.activityId]), 400, 'invalid_picker');
    expectRefused(await respond('not-a-token', [world.acme.activityId]), 400, 'invalid_picker');
    expectRefused(await respond('', [world.acme.activityId]), 400, 'invalid_request');
    expectRefused(await respond(token, []), 400, 'no_pick');
    expectRefused(await respond(token, ['1 or 1=1']), 400, 'invalid_request');
  });

  it("refuses more than 50 picks, and a token naming a registration that is not the tenant's (forged with our key)", async () => {
    const r = await deepLink(settings({ accept_multiple: true }));
    const many = Array.from({ length: 51 }, (_, i) => `0190a5a6-0000-7000-8000-${String(i).padStart(12, '0')}`);
    expectRefused(await respond(tokenOf(r.html), many), 400, 'too_many');
    // Signed with the real key: a token binding acme's registration to globex's tenant finds no registration.
    const claims = JSON.parse(Buffer.from(tokenOf(r.html).split('.')[1]!, 'base64url').toString());
    const key = createHash('sha256').update(`lti-picker\n${t.deps.config.jwtSecret}`).digest();
    const [globex] = await t.db.query<{ id: string }>(`select id from tenants where slug = 'globex'`);
    const forged = await new SignJWT({ ...claims, tid: globex!.id }).setProtectedHeader({ alg: 'HS256' }).sign(key);
    expectRefused(await respond(forged, [world.globex.activityId]), 400, 'unknown_platform');
  });

  it('a replayed deep-linking launch is refused', async () => {
    const l = await login('prof');
    const claims = lms.dl.deepLinkClaims(lms.launchClaims({ activity: world.acme.activityId, sub: 'prof', nonce: l.nonce }), settings());
    const form = { id_token: await lms.idToken(claims), state: l.state };
    const post = () =>
      fetch(`${t.url}/lti/v1/launch`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: l.cookie },
        body: new URLSearchParams(form),
      });
    expect((await post()).status).toBe(200);
    const again = await post();
    expectRefused({ res: again, html: await again.text() }, 400, 'replayed');
  });

  it('bad input: JSON, another media type, a body too large, the token twice — a readable page, 4xx', async () => {
    const r = await deepLink(settings());
    const token = tokenOf(r.html);
    const raw = (body: string, type: string) =>
      fetch(`${t.url}/lti/v1/deep-linking/response`, { method: 'POST', headers: { 'content-type': type, 'sec-fetch-site': 'same-origin' }, body });
    const cases: Array<[Promise<Response>, number, string]> = [
      [raw(JSON.stringify({ picker_token: token, activity: world.acme.activityId }), 'application/json'), 400, 'invalid_request'],
      [raw(`picker_token=${token}`, 'text/plain'), 400, 'invalid_request'],
      [raw(`picker_token=${token}&activity=${'a'.repeat(200_000)}`, 'application/x-www-form-urlencoded'), 413, 'too_large'],
      [raw(`picker_token=${token}&picker_token=${token}&activity=${world.acme.activityId}`, 'application/x-www-form-urlencoded'), 400, 'invalid_request'],
    ];
    for (const [pending, status, code] of cases) {
      const res = await pending;
      expectRefused({ res, html: await res.text() }, status, code);
    }
  });

  it('refuses a form posted from another site (CSRF)', async () => {
    const r = await deepLink(settings());
    const token = tokenOf(r.html);
    expectRefused(await respond(token, [world.acme.activityId], { 'sec-fetch-site': 'cross-site' }), 403, 'forbidden');
    expectRefused(await respond(token, [world.acme.activityId], { 'sec-fetch-site': 'same-site' }), 403, 'forbidden');
    expectRefused(await respond(token, [world.acme.activityId], { origin: 'https://evil.example' }), 403, 'forbidden');
    expect((await respond(token, [world.acme.activityId], { origin: new URL(t.url).origin })).res.status).toBe(200);
  });
});

describe("an instructor's launch of a placed activity", () => {
  const names: Record<string, string> = { ada: 'Ada Byron', bob: 'Bob Babbage', cy: 'Cy Somerville', dee: 'Dee Hopper' };
  const learnerClaims = (c: JWTPayload) => ({ ...c, name: names[c.sub!] });
  const instructor = (c: JWTPayload) => ({ ...c, [`${LTI}roles`]: [INSTRUCTOR] });
  const configOf = (html: string) => JSON.parse(/<script type="application\/json" id="svc-config">(.*?)<\/script>/.exec(html)![1]!);

  it("shows the activity as learners see it, marked preview, with the course's learners' latest results, making nobody a learner", async () => {
    // Three learners of course-1: one passed, one being graded, one who has not submitted; a fourth in another course.
    for (const sub of ['ada', 'bob', 'cy']) expect((await launch(learnerClaims, sub)).res.status).toBe(200);
    expect((await launch((c) => ({ ...learnerClaims(c), [`${LTI}context`]: { id: 'course-2' } }), 'dee')).res.status).toBe(200);
    const users = Object.fromEntries(
      (
        await t.db.query<{ sub: string; id: string }>(
          `select i.provider_id as sub, u.id from auth.identities i join users u on u.auth_user_id = i.user_id where i.provider like 'lti:%'`,
        )
      ).map((r) => [r.sub, r.id]),
    );
    const result = async (sub: string, status: string, score: number | null, verification: Record<string, unknown>) => {
      const [r] = await t.db.query<{ id: string }>(
        `insert into activity_results (tenant_id, activity_id, lesson_id, program_id, user_id, status, score)
         values ($1, $2, $3, $4, $5, $6, $7) returning id`,
        [world.acme.tenantId, world.acme.activityId, world.acme.lessonId, world.acme.programId, users[sub], status, score],
      );
      await t.db.query(
        `insert into artifacts (tenant_id, result_id, activity_id, user_id, kind, content, verification) values ($1, $2, $3, $4, 'document', 'x', $5::text::jsonb)`,
        [world.acme.tenantId, r!.id, world.acme.activityId, users[sub], JSON.stringify(verification)],
      );
    };
    await result('ada', 'completed', 85, { status: 'passed', score: 85, feedback: 'Good.' });
    await result('bob', 'in_progress', null, { status: 'pending', reason: 'queued' });
    await result('dee', 'completed', 90, { status: 'passed', score: 90 });

    const before = await stored();
    const counts = async () => [(await t.db.query('select 1 from activity_results')).length, (await t.db.query('select 1 from artifacts')).length];
    const beforeWork = await counts();
    const r = await launch(instructor, 'prof');
    expect(r.res.status, r.html).toBe(200);
    expect(r.res.headers.get('content-security-policy')).toMatch(new RegExp(`frame-ancestors ${lms.origin}$`));
    const config = configOf(r.html);
    expect(config.session).toBeUndefined(); // nothing to submit with
    expect(config.preview.activity).toMatchObject({
      id: world.acme.activityId,
      title: 'Write a design note',
      kind: 'document',
      pass_threshold: 70,
      result: null,
      spec_html: expect.stringContaining('<p>'),
    });
    expect(config.preview.course).toBe('Systems design');
    expect(config.preview.learners).toEqual([
      { name: 'Ada Byron', status: 'passed', score: 85, at: expect.any(String) },
      { name: 'Bob Babbage', status: 'grading', score: null, at: expect.any(String) },
      { name: 'Cy Somerville', status: 'not_started', score: null, at: null },
    ]);
    expect(config.preview.learners).toHaveLength(3); // dee is in another course
    // No user, session, membership or course member for the instructor; no work; the placement is recorded.
    const after = await stored();
    expect(after.slice(0, 3)).toEqual(before.slice(0, 3));
    expect(after[4]).toBe(before[4]);
    expect(await counts()).toEqual(beforeWork);
    expect(await t.db.query(`select 1 from auth.identities where provider_id = 'prof'`)).toEqual([]);
  });

  it('refuses a replayed preview launch', async () => {
    const l = await login('prof');
    const form = {
      id_token: await lms.idToken(instructor(lms.launchClaims({ activity: world.acme.activityId, sub: 'prof', nonce: l.nonce }))),
      state: l.state,
    };
    const post = () =>
      fetch(`${t.url}/lti/v1/launch`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: l.cookie },
        body: new URLSearchParams(form),
      });
    expect((await post()).status).toBe(200);
    const again = await post();
    expectRefused({ res: again, html: await again.text() }, 400, 'replayed');
  });

  it("says an archived activity is not available to learners; refuses another tenant's", async () => {
    const r = await launch(instructor, 'prof', world.archived.activityId);
    expect(r.res.status).toBe(200);
    expect(configOf(r.html).preview).toMatchObject({ activity: null, unavailable: expect.stringContaining('archived') });
    expectRefused(await launch(instructor, 'prof', world.globex.activityId), 403, 'activity_not_available');
  });
});
