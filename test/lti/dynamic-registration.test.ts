/**
 * LTI Dynamic Registration 1.0 over HTTP (issue #22): the loopback LMS (lms.ts + lms-registration.ts)
 * opens `/lti/v1/register/<code>` with `openid_configuration` and `registration_token`, the tool
 * reads the configuration, registers itself and stores the registration in the code's tenant —
 * which then launches. Refused: an unknown, used or expired code, a configuration whose issuer is
 * on another host, garbage, a platform down or slow, a registration endpoint that refuses or
 * answers garbage; each stores nothing and leaves the code usable.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { startApp, useApp, useFixture, useServer } from '../helpers/harness.ts';
import { seedActivity } from '../embed/fixtures.ts';
import { CLIENT_ID, DEPLOYMENT_ID, startTestLms } from './lms.ts';
import { addRegistration } from './lms-registration.ts';

const lms = useServer(startTestLms);
let clockOffsetMs = 0;
const t = useApp(() => startApp({}, { now: () => new Date(Date.now() + clockOffsetMs) }));
const world = useFixture(async () => {
  lms.setTool(t.url);
  await t.op('tenant.create', { slug: 'acme' });
  await t.op('tenant.create', { slug: 'globex' });
  return { reg: addRegistration(lms), acme: await seedActivity(t, 'acme') };
});

afterEach(async () => {
  clockOffsetMs = 0;
  world.reg.setMode('ok');
  world.reg.setDeploymentId(DEPLOYMENT_ID);
  for (const tenant of ['acme', 'globex']) await t.op('lti.platforms.remove', { tenant, issuer: lms.issuer, client_id: CLIENT_ID }).catch(() => undefined);
});

/** A fresh registration URL of `tenant`. */
const mint = async (tenant = 'acme') => (await t.op('lti.registration_url', { tenant, base_url: t.url })) as { id: string; url: string; expires_at: string };

/** Open the registration URL as the platform does (a fresh registration token each time). */
async function open(url: string) {
  world.reg.newToken();
  const res = await fetch(world.reg.openUrl(url), { redirect: 'manual' });
  return { res, html: await res.text() };
}

function expectRefused(r: { res: Response; html: string }, status: number, code: string) {
  expect(r.res.status, r.html).toBe(status);
  expect(r.res.headers.get('content-type')).toMatch(/^text\/html/);
  expect(r.html).toContain(`Error code: ${code}.`);
  expect(r.html).not.toMatch(/ at .*\.ts:\d+|stack/i);
}

const platforms = () =>
  t.db.query<Record<string, unknown>>(
    `select p.*, (select array_agg(deployment_id) from lti_deployments d where d.platform_id = p.id) as deployments from lti_platforms p`,
  );
const codeRow = (id: string) =>
  t.db
    .query<{ used_at: string | null; claimed_until: string | null }>('select used_at, claimed_until from lti_registration_codes where id = $1', [id])
    .then((r) => r[0]!);

/** A learner's launch through the registration (login → the LMS's id_token → launch). */
async function launch(deployment = DEPLOYMENT_ID) {
  const params = new URLSearchParams({
    iss: lms.issuer,
    login_hint: 'ada',
    target_link_uri: `${t.url}/lti/v1/launch`,
    lti_message_hint: 'x',
    client_id: CLIENT_ID,
  });
  const login = await fetch(`${t.url}/lti/v1/login?${params}`, { redirect: 'manual' });
  expect(login.status).toBe(302);
  const auth = new URL(login.headers.get('location')!);
  const claims = {
    ...lms.launchClaims({ activity: world.acme.activityId, sub: 'ada', nonce: auth.searchParams.get('nonce')! }),
    'https://purl.imsglobal.org/spec/lti/claim/deployment_id': deployment,
  };
  return fetch(`${t.url}/lti/v1/launch`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: login.headers.get('set-cookie')!.split(';')[0]! },
    body: new URLSearchParams({ id_token: await lms.idToken(claims), state: auth.searchParams.get('state')! }),
  });
}

describe('svc lti registration-url', () => {
  it('mints a single-use URL under BASE_URL that expires in 24 h; only its hash is stored; audited', async () => {
    const minted = await mint();
    expect(minted.url).toMatch(new RegExp(`^${t.url}/lti/v1/register/[A-Za-z0-9_-]{43}$`));
    const hours = (Date.parse(minted.expires_at) - Date.now()) / 3_600_000;
    expect(hours).toBeGreaterThan(23.9);
    expect(hours).toBeLessThanOrEqual(24);
    const code = minted.url.split('/').pop()!;
    const [row] = await t.db.query<{ code_sha256: string }>('select code_sha256 from lti_registration_codes where id = $1', [minted.id]);
    expect(row!.code_sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(await t.db.query('select * from lti_registration_codes'))).not.toContain(code);
    const [event] = await t.db.query<{ action: string; target_type: string; target_id: string }>(
      `select action, target_type, target_id from audit_events where action = 'lti.registration_url.create'`,
    );
    expect(event).toEqual({ action: 'lti.registration_url.create', target_type: 'lti_registration_code', target_id: minted.id });
    await expect(t.op('lti.registration_url', { tenant: 'nope', base_url: t.url })).rejects.toMatchObject({ code: 'not_found' });
  });
});

describe('dynamic registration', () => {
  it('registers the tool with the platform, stores the registration in the code tenant, closes the dialog; it then launches', async () => {
    const minted = await mint();
    const r = await open(minted.url);
    expect(r.res.status, r.html).toBe(200);
    expect(r.html).toContain('The tool is registered');
    expect(r.html).toContain("postMessage({subject:'org.imsglobal.lti.close'},'*')");
    expect(r.html).toContain('window.opener||window.parent');
    expect(r.res.headers.get('content-security-policy')).toContain(`frame-ancestors ${lms.origin}`);

    // What the tool sent: the registration, with the registration token as Bearer.
    const sent = world.reg.requests.at(-1)!;
    expect(sent.authorization).toBe(`Bearer ${world.reg.token}`);
    expect(sent.body).toMatchObject({
      application_type: 'web',
      response_types: ['id_token'],
      grant_types: expect.arrayContaining(['implicit', 'client_credentials']),
      initiate_login_uri: `${t.url}/lti/v1/login`,
      redirect_uris: [`${t.url}/lti/v1/launch`],
      jwks_uri: `${t.url}/lti/v1/jwks`,
      token_endpoint_auth_method: 'private_key_jwt',
      'https://purl.imsglobal.org/spec/lti-tool-configuration': {
        domain: new URL(t.url).host,
        target_link_uri: `${t.url}/lti/v1/launch`,
        claims: expect.arrayContaining(['iss', 'sub']),
        messages: [
          expect.objectContaining({ type: 'LtiResourceLinkRequest', target_link_uri: `${t.url}/lti/v1/launch` }),
          expect.objectContaining({ type: 'LtiDeepLinkingRequest', target_link_uri: `${t.url}/lti/v1/launch` }),
        ],
      },
    });
    expect((sent.body.scope as string).split(' ').sort()).toEqual([
      'https://purl.imsglobal.org/spec/lti-ags/scope/lineitem',
      'https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly',
      'https://purl.imsglobal.org/spec/lti-ags/scope/score',
      'https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly',
    ]);

    // What was stored: in acme, with the configuration's URLs, token audience and the answer's deployment.
    const [stored] = await t.op('lti.platforms.list', { tenant: 'acme' });
    expect(stored).toMatchObject({
      tenant: 'acme',
      issuer: lms.issuer,
      client_id: CLIENT_ID,
      auth_url: `${lms.origin}/auth`,
      token_url: `${lms.origin}/token`,
      jwks_url: `${lms.origin}/jwks`,
      token_audience: `${lms.origin}/token-audience`,
      deployments: [DEPLOYMENT_ID],
      any_deployment: false,
    });
    expect((await codeRow(minted.id)).used_at).not.toBeNull();
    const [event] = await t.db.query<{ actor_kind: string; target_id: string; detail: Record<string, unknown> }>(
      `select actor_kind, target_id, detail from audit_events where action = 'lti.platform.register'`,
    );
    expect(event).toMatchObject({
      actor_kind: 'system',
      target_id: stored.id,
      detail: { code_id: minted.id, issuer: lms.issuer, client_id: CLIENT_ID, deployment_id: DEPLOYMENT_ID },
    });

    // The registration launches.
    const launched = await launch();
    expect(launched.status).toBe(200);
    expect(await launched.text()).toContain('svc-config');

    // The same URL again: used.
    expectRefused(await open(minted.url), 410, 'code_used');
  });

  it('a platform that names no deployment id (Canvas): stored for any deployment, which then launches', async () => {
    world.reg.setDeploymentId(null);
    const r = await open((await mint()).url);
    expect(r.res.status, r.html).toBe(200);
    expect(r.html).toContain('any deployment of this registration');
    const [stored] = await t.op('lti.platforms.list', { tenant: 'acme' });
    expect(stored).toMatchObject({ deployments: [], any_deployment: true });
    expect((await launch('12:8865aa05b4b79b64a91a86042e43af5ea8ae79eb')).status).toBe(200);
  });

  it('refuses an expired code (the clock moved 24 h), an unknown or malformed code, a request without openid_configuration', async () => {
    const minted = await mint();
    const hits = world.reg.configHits;
    clockOffsetMs = 24 * 3_600_000 + 1000;
    expectRefused(await open(minted.url), 410, 'code_expired');
    clockOffsetMs = 0;
    expectRefused(await open(`${t.url}/lti/v1/register/${'A'.repeat(43)}`), 404, 'unknown_code');
    expectRefused(await open(`${t.url}/lti/v1/register/not-a-code`), 404, 'unknown_code');
    const bare = await fetch(minted.url);
    expectRefused({ res: bare, html: await bare.text() }, 400, 'invalid_request');
    const notHttp = await fetch(`${minted.url}?openid_configuration=javascript:alert(1)`);
    expectRefused({ res: notHttp, html: await notHttp.text() }, 400, 'invalid_request');
    expect(await platforms()).toEqual([]);
    expect(world.reg.configHits).toBe(hits); // a refused code never reaches out to the LMS
  });

  it('refuses a code held by a running registration', async () => {
    const minted = await mint();
    await t.db.query(`update lti_registration_codes set claimed_until = now() + interval '1 minute' where id = $1`, [minted.id]);
    expectRefused(await open(minted.url), 409, 'registration_in_progress');
  });

  it('every platform failure stores nothing and leaves the code usable', async () => {
    const minted = await mint();
    const cases: Array<[Parameters<typeof world.reg.setMode>[0], string]> = [
      ['issuer-mismatch', 'issuer_mismatch'],
      ['garbage', 'configuration_invalid'],
      ['no-registration-endpoint', 'configuration_invalid'],
      ['down', 'configuration_unavailable'],
      ['refuse', 'registration_refused'],
      ['answer-garbage', 'registration_invalid'],
    ];
    for (const [mode, code] of cases) {
      world.reg.setMode(mode);
      const sentBefore = world.reg.requests.length;
      const r = await open(minted.url);
      expectRefused(r, 400, code);
      expect(r.html).toContain('the registration URL stays valid');
      if (['issuer-mismatch', 'garbage', 'no-registration-endpoint', 'down'].includes(mode)) expect(world.reg.requests.length, mode).toBe(sentBefore); // never posted
      expect(await platforms(), mode).toEqual([]);
      expect(await codeRow(minted.id), mode).toEqual({ used_at: null, claimed_until: null });
    }
    // A configuration whose issuer is on another host: the message says which.
    world.reg.setMode('issuer-mismatch');
    expect((await open(minted.url)).html).toContain('names the issuer localhost:');
    // The same code, the platform fixed: registered.
    world.reg.setMode('ok');
    expect((await open(minted.url)).res.status).toBe(200);
  });

  it('a platform that answers too slowly: refused in time, nothing stored', async () => {
    const minted = await mint();
    world.reg.setMode('slow');
    const started = Date.now();
    expectRefused(await open(minted.url), 400, 'configuration_unavailable');
    expect(Date.now() - started).toBeLessThan(15_000); // the 10 s limit, not the platform's 20 s
    expect(await platforms()).toEqual([]);
    expect((await codeRow(minted.id)).used_at).toBeNull();
  }, 30_000);

  it('a client id another tenant holds: refused, nothing stored, the code usable', async () => {
    await t.op('lti.platforms.add', { tenant: 'globex', ...lms.registration });
    const minted = await mint();
    expectRefused(await open(minted.url), 409, 'platform_taken');
    expect(await t.op('lti.platforms.list', { tenant: 'acme' })).toEqual([]);
    expect((await codeRow(minted.id)).used_at).toBeNull();
  });

  it('refuses platform URLs on private addresses unless allowed (the outbound guard)', async () => {
    const guarded = await startApp({ fetchAllowPrivate: false }, { db: t.db });
    try {
      const minted = (await guarded.op('lti.registration_url', { tenant: 'acme', base_url: guarded.url })) as { url: string; id: string };
      const r = await open(minted.url);
      expectRefused(r, 400, 'configuration_unavailable');
      expect(r.html).toContain('private address');
      expect((await codeRow(minted.id)).used_at).toBeNull();
    } finally {
      await guarded.close();
    }
  });
});
