/**
 * LTI 1.3 login and launch over HTTP (issue #22, step 2): the loopback LMS (lms.ts) signs the
 * id_tokens; the test plays the browser (the login's redirect, its cookie, the form post). Every
 * launch check has a test here that fails when the check is removed; bad input gets a readable
 * HTML page, 4xx, and stores nothing.
 */
import { describe, expect, it } from 'vitest';
import { generateKeyPair, SignJWT, type JWTPayload } from 'jose';
import { startApp, useApp, useFixture, useServer } from '../helpers/harness.ts';
import { seedActivity } from '../embed/fixtures.ts';
import { DEPLOYMENT_ID, startTestLms } from './lms.ts';

const lms = useServer(startTestLms);
const t = useApp(() => startApp());
const world = useFixture(async () => {
  lms.setTool(t.url);
  await t.op('tenant.create', { slug: 'acme' });
  await t.op('tenant.create', { slug: 'globex' });
  await t.op('lti.platforms.add', { tenant: 'acme', ...lms.registration });
  const acme = await seedActivity(t, 'acme');
  const globex = await seedActivity(t, 'globex');
  const key = await t.op('key.create', { tenant: 'acme', name: 'partner' });
  return { acme, globex, key: key.key as string };
});

interface Login {
  state: string;
  nonce: string;
  cookie: string;
  auth: URL;
}

const loginParams = (extra: Record<string, string> = {}) =>
  new URLSearchParams({
    iss: lms.issuer,
    login_hint: 'ada',
    target_link_uri: `${t.url}/lti/v1/launch`,
    lti_message_hint: 'hint 1/2+3',
    client_id: lms.clientId,
    lti_deployment_id: DEPLOYMENT_ID,
    ...extra,
  });

/** GET /lti/v1/login as the platform's redirect; the authentication request and the cookie. */
async function login(extra: Record<string, string> = {}): Promise<Login> {
  const res = await fetch(`${t.url}/lti/v1/login?${loginParams(extra)}`, { redirect: 'manual' });
  expect(res.status).toBe(302);
  const auth = new URL(res.headers.get('location')!);
  const setCookie = res.headers.get('set-cookie')!;
  return { state: auth.searchParams.get('state')!, nonce: auth.searchParams.get('nonce')!, cookie: setCookie.split(';')[0]!, auth };
}

/** POST /lti/v1/launch with `form`, with the login's cookie unless `cookie` is ''. */
const post = (form: Record<string, string>, cookie: string) =>
  fetch(`${t.url}/lti/v1/launch`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...(cookie && { cookie }) },
    body: new URLSearchParams(form),
    redirect: 'manual',
  });

/** A launch for `sub` (default 'ada') of acme's activity, with `change` applied to the claims. */
async function launch(change: (c: JWTPayload) => JWTPayload = (c) => c, opts: { header?: Record<string, unknown>; sub?: string; activity?: string } = {}) {
  const l = await login();
  const claims = change(lms.launchClaims({ activity: opts.activity ?? world.acme.activityId, sub: opts.sub ?? 'ada', nonce: l.nonce }));
  const res = await post({ id_token: await lms.idToken(claims, opts.header), state: l.state }, l.cookie);
  return { res, html: await res.text(), login: l };
}

/** Expect a refusal page: status, the code on the page, no stack trace. */
function expectRefused(r: { res: Response; html: string }, status: number, code: string) {
  expect(r.res.status, r.html).toBe(status);
  expect(r.res.headers.get('content-type')).toMatch(/^text\/html/);
  expect(r.html).toContain(`Error code: ${code}.`);
  expect(r.html).not.toMatch(/ at .*\.ts:\d+|Error:|stack/i);
  expect(r.html).not.toContain('svc-config');
}

const count = async (sql: string) => (await t.db.query(sql)).length;
const ltiUsers = () => count(`select 1 from auth.identities where provider like 'lti:%'`);
const sessions = () => count(`select 1 from auth.sessions`);

describe('login (third-party initiated)', () => {
  it('answers a GET with a 302 authentication request carrying every parameter, and sets the binding cookie', async () => {
    const l = await login();
    expect(l.auth.origin + l.auth.pathname).toBe(lms.registration.auth_url);
    const p = Object.fromEntries(l.auth.searchParams);
    expect(p).toMatchObject({
      scope: 'openid',
      response_type: 'id_token',
      response_mode: 'form_post',
      prompt: 'none',
      client_id: lms.clientId,
      redirect_uri: `${t.url}/lti/v1/launch`,
      login_hint: 'ada',
      lti_message_hint: 'hint 1/2+3',
    });
    expect(p.state!.length).toBeGreaterThan(20);
    expect(p.nonce!.length).toBeGreaterThan(20);
    const res = await fetch(`${t.url}/lti/v1/login?${loginParams()}`, { redirect: 'manual' });
    expect(res.headers.get('set-cookie')).toMatch(
      /^svc_lti_[A-Za-z0-9_-]+=[A-Za-z0-9_-]+; Max-Age=600; Path=\/lti\/v1\/; HttpOnly; Secure; SameSite=None; Partitioned$/,
    );
  });

  it('answers a POST with an auto-submitted form (not a script-only redirect)', async () => {
    const res = await fetch(`${t.url}/lti/v1/login`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: loginParams() });
    expect(res.status).toBe(200);
    const html = await res.text();
    expect(html).toContain(`<form method="post" action="${lms.registration.auth_url}">`);
    expect(html).toContain('<input type="hidden" name="lti_message_hint" value="hint 1/2+3">');
    expect(html).toContain('<noscript>');
    expect(res.headers.get('content-security-policy')).toContain(`frame-ancestors ${lms.origin}`);
  });

  it("lets the login's page be framed by a shared issuer's LMS hosts and the registration's frame origins, nothing else", async () => {
    const postLogin = async (params: URLSearchParams) => {
      const res = await fetch(`${t.url}/lti/v1/login`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: params });
      expect(res.status).toBe(200);
      return res.headers.get('content-security-policy')!.replace(/^.*frame-ancestors /, '');
    };
    expect(await postLogin(loginParams())).toBe(lms.origin);
    // Canvas Cloud: one issuer and auth host for every institution, whose course pages are on <school>.instructure.com.
    await t.op('lti.platforms.add', {
      tenant: 'acme',
      ...lms.registration,
      issuer: 'https://canvas.instructure.com',
      client_id: 'canvas-key-1',
      auth_url: 'https://sso.canvaslms.com/api/lti/authorize_redirect',
    });
    const canvas = loginParams({ iss: 'https://canvas.instructure.com', client_id: 'canvas-key-1' });
    expect(await postLogin(canvas)).toBe('https://canvas.instructure.com https://sso.canvaslms.com https://*.instructure.com');
    // A vanity domain is registered: --frame-origin (normalised, kept, listed).
    const updated = await t.op('lti.platforms.add', {
      tenant: 'acme',
      ...lms.registration,
      issuer: 'https://canvas.instructure.com',
      client_id: 'canvas-key-1',
      auth_url: 'https://sso.canvaslms.com/api/lti/authorize_redirect',
      frame_origins: ['HTTPS://Canvas.School.edu:443/'],
    });
    expect(updated.frame_origins).toEqual(['https://canvas.school.edu']);
    expect(await postLogin(canvas)).toBe('https://canvas.instructure.com https://sso.canvaslms.com https://*.instructure.com https://canvas.school.edu');
    // Another registration's frame origins and the Canvas family are not this one's.
    expect(await postLogin(loginParams())).toBe(lms.origin);
    await expect(t.op('lti.platforms.add', { tenant: 'acme', ...lms.registration, frame_origins: ['https://school.example/course'] })).rejects.toThrow(
      /not an origin/,
    );
    await t.op('lti.platforms.remove', { tenant: 'acme', issuer: 'https://canvas.instructure.com', client_id: 'canvas-key-1' });
  });

  it('refuses a login with a missing parameter, an unknown issuer or client id, an unregistered deployment, a repeated parameter', async () => {
    const cases: Array<[string, string]> = [
      [new URLSearchParams({ iss: lms.issuer, target_link_uri: 'x' }).toString(), 'invalid_login'],
      [loginParams({ iss: 'https://unknown.example' }).toString(), 'unknown_platform'],
      [loginParams({ client_id: 'someone-else' }).toString(), 'unknown_platform'],
      [loginParams({ lti_deployment_id: 'nope' }).toString(), 'unknown_deployment'],
      [`${loginParams()}&iss=${encodeURIComponent(lms.issuer)}`, 'invalid_login'],
      [loginParams({ login_hint: 'x'.repeat(5000) }).toString(), 'invalid_login'],
    ];
    for (const [query, code] of cases) {
      const res = await fetch(`${t.url}/lti/v1/login?${query}`, { redirect: 'manual' });
      expectRefused({ res, html: await res.text() }, 400, code);
      expect(res.headers.get('set-cookie')).toBeNull();
    }
  });
});

describe('a learner launch', () => {
  it('opens the player signed in as the learner, the same user every time, listed by /v1/learners with source lti', async () => {
    const first = await launch();
    expect(first.res.status, first.html).toBe(200);
    const config = JSON.parse(/<script type="application\/json" id="svc-config">(.*?)<\/script>/.exec(first.html)![1]!);
    expect(config).toMatchObject({
      tenant: 'acme',
      activity: world.acme.activityId,
      session: { access_token: expect.any(String), refresh_token: expect.any(String) },
    });
    expect(first.html).toContain('src="/embed/v1/player.js?v=');
    expect(first.res.headers.get('content-security-policy')).toMatch(new RegExp(`frame-ancestors ${lms.origin}$`)); // the platform only, no embed origin needed
    expect(first.res.headers.get('cache-control')).toBe('no-store');
    expect(first.res.headers.get('set-cookie')).toMatch(/^svc_lti_[^=]+=; Max-Age=0;/); // the binding cookie is not needed any more

    // The handed session reads the activity as the learner, in acme only.
    const read = await fetch(`${t.url}/v1/embed/activities/${world.acme.activityId}`, { headers: { authorization: `Bearer ${config.session.access_token}` } });
    expect(read.status).toBe(200);
    const other = await fetch(`${t.url}/v1/embed/activities/${world.globex.activityId}`, {
      headers: { authorization: `Bearer ${config.session.access_token}` },
    });
    expect(other.status).toBeGreaterThanOrEqual(403);

    const again = await launch();
    expect(again.res.status).toBe(200);
    const users = await t.db.query<{ user_id: string; identity_data: Record<string, unknown> }>(
      `select user_id, identity_data from auth.identities where provider like 'lti:%'`,
    );
    expect(users).toHaveLength(1);
    expect(users[0]!.identity_data).toMatchObject({ iss: lms.issuer, sub: 'ada', name: 'Ada Lovelace', email: 'ada@school.example' });
    const [member] = await t.db.query<{ role: string }>(
      `select m.role from memberships m join users u on u.id = m.user_id join tenants t on t.id = m.tenant_id where u.auth_user_id = $1 and t.slug = 'acme'`,
      [users[0]!.user_id],
    );
    expect(member?.role).toBe('learner');

    const listed = await (await fetch(`${t.url}/v1/learners`, { headers: { authorization: `Bearer ${world.key}` } })).json();
    expect(listed.data).toEqual([expect.objectContaining({ external_ids: [{ issuer: lms.issuer, subject: 'ada', source: 'lti' }] })]);
  });

  it('svc learner export and delete include the LTI identity: exported, then gone from that tenant even while the account stays', async () => {
    expect((await launch(undefined, { sub: 'erased-lti' })).res.status).toBe(200);
    const [who] = await t.db.query<{ svc_user_id: string; auth_user_id: string }>(
      `select u.id as svc_user_id, u.auth_user_id from auth.identities i join users u on u.auth_user_id = i.user_id where i.provider like 'lti:%' and i.provider_id = 'erased-lti'`,
    );
    const exported = await t.op('learner.export', { tenant: 'acme', svc_user_id: who!.svc_user_id });
    expect(JSON.stringify(exported)).toContain('erased-lti');
    // A learner of another tenant too: erasing them from acme keeps the account, not acme's LTI identity.
    await t.db.query(`insert into memberships (tenant_id, user_id, role) select id, $1, 'learner' from tenants where slug = 'globex'`, [who!.svc_user_id]);
    await t.op('learner.delete', { tenant: 'acme', svc_user_id: who!.svc_user_id });
    expect(await count(`select 1 from auth.identities where provider_id = 'erased-lti'`)).toBe(0);
    expect(await count(`select 1 from auth.users where id = '${who!.auth_user_id}'`)).toBe(1);
    await t.op('learner.delete', { tenant: 'globex', svc_user_id: who!.svc_user_id });
    expect(await count(`select 1 from auth.users where id = '${who!.auth_user_id}'`)).toBe(0);
  });

  it("refuses another tenant's activity with a page, storing nothing", async () => {
    const before = [await ltiUsers(), await sessions()];
    expectRefused(await launch(undefined, { activity: world.globex.activityId, sub: 'mallory' }), 403, 'activity_not_available');
    expect([await ltiUsers(), await sessions()]).toEqual(before);
  });
});

describe('every launch check', () => {
  const learnerless = async (r: Promise<{ res: Response; html: string }>, status: number, code: string) => {
    const before = [await ltiUsers(), await sessions()];
    expectRefused(await r, status, code);
    expect([await ltiUsers(), await sessions()]).toEqual(before);
  };
  const drop = (claim: string) => (c: JWTPayload) => {
    const copy = { ...c };
    delete copy[claim];
    return copy;
  };
  const lti = (name: string) => `https://purl.imsglobal.org/spec/lti/claim/${name}`;
  const now = () => Math.floor(Date.now() / 1000);

  it('a replayed state (the whole form post again)', async () => {
    const l = await login();
    const form = { id_token: await lms.idToken(lms.launchClaims({ activity: world.acme.activityId, sub: 'ada', nonce: l.nonce })), state: l.state };
    expect((await post(form, l.cookie)).status).toBe(200);
    const res = await post(form, l.cookie);
    const html = await res.text();
    expectRefused({ res, html }, 400, 'replayed');
    expect(html).toContain('This sign-in was already used');
  });
  it('a replayed nonce: an id_token of an earlier login with a fresh state', async () => {
    const old = await login();
    const token = await lms.idToken(lms.launchClaims({ activity: world.acme.activityId, sub: 'ada', nonce: old.nonce }));
    const fresh = await login();
    const res = await post({ id_token: token, state: fresh.state }, fresh.cookie);
    expectRefused({ res, html: await res.text() }, 400, 'invalid_id_token');
  });
  it('a state that is not ours, or altered', async () => {
    const l = await login();
    const token = await lms.idToken(lms.launchClaims({ activity: world.acme.activityId, sub: 'ada', nonce: l.nonce }));
    const [h, p, s] = l.state.split('.');
    const altered = `${h}.${p!.slice(0, -2)}AA.${s}`;
    for (const state of [altered, 'not-a-state']) {
      const res = await post({ id_token: token, state }, l.cookie);
      expectRefused({ res, html: await res.text() }, 400, 'invalid_state');
    }
  });
  it('a launch without the browser binding: a page offering a new window, never a silent accept', async () => {
    const l = await login();
    const token = await lms.idToken(lms.launchClaims({ activity: world.acme.activityId, sub: 'ada', nonce: l.nonce }));
    const before = [await ltiUsers(), await sessions()];
    for (const cookie of ['', `${l.cookie.split('=')[0]}=${'A'.repeat(43)}`]) {
      const res = await post({ id_token: token, state: l.state }, cookie);
      expect(res.status).toBe(401);
      const html = await res.text();
      expect(html).toContain('Open the activity in a new window');
      expect(html).toContain('target="_blank"');
      expect(html).toContain('name="lti_message_hint" value="hint 1/2+3"');
      expect(html).not.toContain('svc-config');
    }
    expect([await ltiUsers(), await sessions()]).toEqual(before);
  });
  it('an expired token, and one issued in the future', async () => {
    await learnerless(
      launch((c) => ({ ...c, iat: now() - 900, exp: now() - 61 })),
      400,
      'invalid_id_token',
    );
    await learnerless(
      launch((c) => ({ ...c, iat: now() + 120, exp: now() + 600 })),
      400,
      'invalid_id_token',
    );
    // Within the 60 s of skew both ways: accepted.
    expect((await launch((c) => ({ ...c, iat: now() + 30, exp: now() - 30 }))).res.status).toBe(200);
  });
  it('a wrong aud; an aud array without azp naming the tool', async () => {
    await learnerless(
      launch((c) => ({ ...c, aud: 'another-tool' })),
      400,
      'invalid_id_token',
    );
    await learnerless(
      launch((c) => ({ ...c, aud: [lms.clientId, 'another-tool'] })),
      400,
      'invalid_id_token',
    );
    await learnerless(
      launch((c) => ({ ...c, aud: [lms.clientId, 'another-tool'], azp: 'another-tool' })),
      400,
      'invalid_id_token',
    );
    // An azp that is not the tool, whatever aud is (a string, or an array of one).
    await learnerless(
      launch((c) => ({ ...c, azp: 'another-tool' })),
      400,
      'invalid_id_token',
    );
    await learnerless(
      launch((c) => ({ ...c, aud: [lms.clientId], azp: 'another-tool' })),
      400,
      'invalid_id_token',
    );
    expect((await launch((c) => ({ ...c, azp: lms.clientId }))).res.status).toBe(200);
    expect((await launch((c) => ({ ...c, aud: [lms.clientId, 'another-tool'], azp: lms.clientId }))).res.status).toBe(200);
    expect((await launch((c) => ({ ...c, aud: [lms.clientId] }))).res.status).toBe(200);
  });
  it('a wrong iss', async () => {
    await learnerless(
      launch((c) => ({ ...c, iss: 'https://other.example' })),
      400,
      'invalid_id_token',
    );
  });
  it('an unknown kid, a token signed with another key, no kid', async () => {
    await learnerless(launch(undefined, { header: { kid: 'unknown-kid' } }), 400, 'invalid_id_token');
    const l = await login();
    const { privateKey } = await generateKeyPair('RS256');
    const forged = await lms.idToken(lms.launchClaims({ activity: world.acme.activityId, sub: 'ada', nonce: l.nonce }), {}, privateKey);
    const res = await post({ id_token: forged, state: l.state }, l.cookie);
    expectRefused({ res, html: await res.text() }, 400, 'invalid_id_token');
    await learnerless(launch(undefined, { header: { kid: undefined } }), 400, 'invalid_id_token');
  });
  it('alg none, and HS256 signed with the platform public key', async () => {
    const l = await login();
    const claims = lms.launchClaims({ activity: world.acme.activityId, sub: 'ada', nonce: l.nonce });
    const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString('base64url');
    const none = `${b64({ alg: 'none', kid: lms.kid })}.${b64(claims)}.`;
    const hs = await new SignJWT(claims).setProtectedHeader({ alg: 'HS256', kid: lms.kid }).sign(new TextEncoder().encode(JSON.stringify(lms.publicJwk)));
    for (const token of [none, hs]) {
      const res = await post({ id_token: token, state: l.state }, l.cookie);
      const html = await res.text();
      expectRefused({ res, html }, 400, 'invalid_id_token');
      expect(html).toMatch(/only RS256 is accepted/);
    }
  });
  it('an unregistered deployment', async () => {
    await learnerless(
      launch((c) => ({ ...c, [lti('deployment_id')]: 'deployment-2' })),
      400,
      'unknown_deployment',
    );
  });
  it('a missing message_type, version, roles, resource_link or target_link_uri; another version; another target_link_uri than the login', async () => {
    for (const claim of ['message_type', 'version', 'roles', 'resource_link', 'target_link_uri'])
      await learnerless(launch(drop(lti(claim))), 400, 'invalid_launch');
    await learnerless(
      launch((c) => ({ ...c, [lti('target_link_uri')]: 'https://evil.example/lti/v1/launch' })),
      400,
      'invalid_launch',
    );
    await learnerless(
      launch((c) => ({ ...c, [lti('version')]: '1.1' })),
      400,
      'invalid_launch',
    );
    await learnerless(
      launch((c) => ({ ...c, [lti('resource_link')]: { title: 'no id' } })),
      400,
      'invalid_launch',
    );
  });
  it('an empty sub', async () => {
    await learnerless(
      launch((c) => ({ ...c, sub: '' })),
      400,
      'invalid_id_token',
    );
  });
  it("an instructor's launch: the preview (deep-linking.test.ts); the instructor is not made a learner", async () => {
    const roles = (list: string[]) => (c: JWTPayload) => ({ ...c, [lti('roles')]: list });
    const m = 'http://purl.imsglobal.org/vocab/lis/v2/membership#';
    for (const list of [
      [`${m}Instructor`],
      [`${m}ContentDeveloper`],
      ['Instructor'],
      ['http://purl.imsglobal.org/vocab/lis/v2/institution/person#Administrator'],
    ]) {
      const before = [await ltiUsers(), await sessions()];
      const r = await launch(roles(list), { sub: 'prof' });
      expect(r.res.status).toBe(200);
      expect(r.html).toContain('"preview":{');
      expect(r.html).not.toContain('"session":');
      expect([await ltiUsers(), await sessions()]).toEqual(before);
    }
    // A teaching assistant who is also a learner, or no role at all: a learner launch.
    expect((await launch(roles([`${m}Instructor`, `${m}Learner`]), { sub: 'ta' })).res.status).toBe(200);
    expect((await launch(roles([]), { sub: 'nobody-in-particular' })).res.status).toBe(200);
    // An institution's instructor (or administrator) who is only a Mentor (observer) in this course: not its instructor.
    const inst = 'http://purl.imsglobal.org/vocab/lis/v2/institution/person#';
    for (const list of [[`${inst}Instructor`, `${m}Mentor`], [`${inst}Administrator`, `${m}Mentor`], [`${inst}Instructor`]]) {
      const r = await launch(roles(list), { sub: 'observer' });
      expect(r.res.status).toBe(200);
      expect(r.html).not.toContain('"preview":{');
      expect(r.html).toContain('"session":');
    }
  });
  it('a banned account: a page, no session', async () => {
    expect((await launch(undefined, { sub: 'banned-bob' })).res.status).toBe(200);
    await t.db.query(
      `update auth.users set banned_until = now() + interval '1 day' where id = (select user_id from auth.identities where provider like 'lti:%' and provider_id = 'banned-bob')`,
    );
    await learnerless(launch(undefined, { sub: 'banned-bob' }), 403, 'user_banned');
    // The ban over: launches again.
    await t.db.query(
      `update auth.users set banned_until = now() - interval '1 second' where id = (select user_id from auth.identities where provider like 'lti:%' and provider_id = 'banned-bob')`,
    );
    expect((await launch(undefined, { sub: 'banned-bob' })).res.status).toBe(200);
  });
  it('no activity placed', async () => {
    await learnerless(
      launch((c) => ({ ...c, [lti('custom')]: {} })),
      400,
      'no_activity',
    );
  });
});

describe('platform storage (lti_storage_target)', () => {
  it('puts the binding at login and gets it back at launch; a binding posted from outside the platform frame is refused', async () => {
    const res = await fetch(`${t.url}/lti/v1/login?${loginParams({ lti_storage_target: '_parent' })}`, { redirect: 'manual' });
    expect(res.status).toBe(200);
    const html = await res.text();
    const step = JSON.parse(/<script type="application\/json" id="lti-storage">(.*?)<\/script>/.exec(html)![1]!);
    expect(step).toMatchObject({
      subject: 'lti.put_data',
      target: '_parent',
      origin: lms.origin,
      key: expect.stringMatching(/^svc_lti_/),
      value: expect.any(String),
    });
    expect(html).toContain(`<form method="get" action="${lms.registration.auth_url}">`);
    const state = /name="state" value="([^"]+)"/.exec(html)![1]!;
    const nonce = /name="nonce" value="([^"]+)"/.exec(html)![1]!;
    const token = await lms.idToken(lms.launchClaims({ activity: world.acme.activityId, sub: 'dorothy', nonce }));
    // As a browser marks it: our own page in the platform's frame posts `iframe` + `same-origin`.
    const send = (form: Record<string, string>, dest?: string, site = 'same-origin') =>
      fetch(`${t.url}/lti/v1/launch`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...(dest && { 'sec-fetch-dest': dest }), ...(site && { 'sec-fetch-site': site }) },
        body: new URLSearchParams(form),
      });

    // No cookie came back: a page that asks the platform's storage, then posts again.
    const asking = await send({ id_token: token, state }, 'iframe');
    expect(asking.status).toBe(200);
    const askHtml = await asking.text();
    expect(JSON.parse(/id="lti-storage">(.*?)<\/script>/.exec(askHtml)![1]!)).toMatchObject({ subject: 'lti.get_data', key: step.key, origin: lms.origin });
    expect(askHtml).toContain('name="lti_storage_binding" value=""');
    // The value posted back, but not from a frame (a forged top-level form post): refused.
    for (const dest of [undefined, 'document']) {
      const forged = await send({ id_token: token, state, lti_storage_binding: step.value }, dest);
      expect(forged.status).toBe(401);
      expect(await forged.text()).toContain('Open the activity in a new window');
    }
    // Posted into a frame by another site (a page of the attacker's framing us), or with no Sec-Fetch-Site: refused.
    for (const site of ['cross-site', 'same-site', '']) {
      const forged = await send({ id_token: token, state, lti_storage_binding: step.value }, 'iframe', site);
      expect(forged.status, site).toBe(401);
      expect(await forged.text()).toContain('Open the activity in a new window');
    }
    // The storage did not answer (empty value): refused.
    expect((await send({ id_token: token, state, lti_storage_binding: '' }, 'iframe')).status).toBe(401);
    // From the platform's frame, with the value its storage kept: the player.
    const ok = await send({ id_token: token, state, lti_storage_binding: step.value }, 'iframe');
    expect(ok.status).toBe(200);
    expect(await ok.text()).toContain('svc-config');
  });
  it('refuses a storage target that is not a frame name', async () => {
    const res = await fetch(`${t.url}/lti/v1/login?${loginParams({ lti_storage_target: 'javascript:alert(1)' })}`, { redirect: 'manual' });
    expectRefused({ res, html: await res.text() }, 400, 'invalid_login');
  });
});

describe('bad input', () => {
  it('malformed forms, a non-JWT or megabytes-long id_token: a readable page, 4xx', async () => {
    const l = await login();
    const raw = (body: string, type = 'application/x-www-form-urlencoded') =>
      fetch(`${t.url}/lti/v1/launch`, { method: 'POST', headers: { 'content-type': type, cookie: l.cookie }, body });
    const cases: Array<[Promise<Response>, number, string]> = [
      [raw(''), 400, 'invalid_launch'],
      [raw(`state=${l.state}`), 400, 'invalid_launch'],
      [raw(`state=${l.state}&id_token=a&id_token=b`), 400, 'invalid_launch'],
      [raw(JSON.stringify({ state: l.state }), 'application/json'), 400, 'invalid_launch'],
      [raw(`state=${l.state}&id_token=not-a-jwt`), 400, 'invalid_id_token'],
      [raw(`state=${l.state}&id_token=${'a'.repeat(70_000)}.b.c`), 400, 'invalid_id_token'],
      [raw(`state=${l.state}&id_token=${'a'.repeat(3_000_000)}`), 413, 'too_large'],
      [raw('%%%=%'), 400, 'invalid_launch'],
    ];
    for (const [pending, status, code] of cases) {
      const res = await pending;
      expectRefused({ res, html: await res.text() }, status, code);
    }
  });
  it('a platform whose keys are garbage, slow or down: a page, nothing stored', async () => {
    const app = await startApp({}, { db: t.db }); // its own key cache
    try {
      for (const mode of ['garbage', 'down', 'slow'] as const) {
        lms.setKeysMode(mode);
        const l = await fetch(`${app.url}/lti/v1/login?${loginParams()}`, { redirect: 'manual' });
        const auth = new URL(l.headers.get('location')!);
        const token = await lms.idToken(lms.launchClaims({ activity: world.acme.activityId, sub: 'ada', nonce: auth.searchParams.get('nonce')! }));
        const before = [await ltiUsers(), await sessions()];
        const res = await fetch(`${app.url}/lti/v1/launch`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: l.headers.get('set-cookie')!.split(';')[0]! },
          body: new URLSearchParams({ id_token: token, state: auth.searchParams.get('state')! }),
        });
        expectRefused({ res, html: await res.text() }, 400, 'platform_keys');
        expect([await ltiUsers(), await sessions()]).toEqual(before);
      }
    } finally {
      lms.setKeysMode('ok');
      await app.close();
    }
  }, 30_000);
});
