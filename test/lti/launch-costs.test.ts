/**
 * What a launch, an error page and `/lti/v1/jwks` cost (issue #22 review fixes), counted on the
 * real app: the database statements it runs (a counting `Db` around the suite's database, which
 * can also play a database outage) and the hits on the LMS's key set.
 *
 * - a launch reads its registration once and sweeps the used values once;
 * - refusal pages read the registered platforms' origins at most once per 30 s, and not at all
 *   while the database is down (503 at once);
 * - `/lti/v1/jwks` reads the key set once, not per request, and shows a rotation at once (NOTIFY);
 *   the private key is imported once;
 * - concurrent launches with a cold key cache fetch the platform's key set once (single flight).
 */
import { describe, expect, it } from 'vitest';
import { startApp, useApp, useFixture, useServer, type TestApp } from '../helpers/harness.ts';
import { seedActivity } from '../embed/fixtures.ts';
import type { Db, Queryable } from '../../src/db/index.ts';
import { DbUnavailableError } from '../../src/db/errors.ts';
import { currentKey } from '../../src/lti/index.ts';
import { DEPLOYMENT_ID, startTestLms } from './lms.ts';

const lms = useServer(startTestLms);
const t = useApp(() => startApp());

/** `db` with every statement recorded in `seen`; while `down`, every statement fails as an outage. */
function counting(db: Db) {
  const state = { seen: [] as string[], down: false };
  const wrap = (q: Queryable): Queryable => ({
    query: async (text, params) => {
      state.seen.push(text);
      if (state.down) throw new DbUnavailableError(new Error('connection refused'));
      return q.query(text, params);
    },
    exec: (script) => q.exec(script),
  });
  const proxy: Db = {
    ...wrap(db),
    kind: db.kind,
    transaction: (fn) => {
      if (state.down) return Promise.reject(new DbUnavailableError(new Error('connection refused')));
      return db.transaction((tx) => fn(wrap(tx)));
    },
    listen: (channel, onNotify, onListen) => db.listen(channel, onNotify, onListen),
    poolStats: () => db.poolStats(),
    close: async () => {},
  };
  return { db: proxy, state, count: (pattern: RegExp) => state.seen.filter((s) => pattern.test(s)).length };
}

const counted = useFixture(async () => {
  await t.op('tenant.create', { slug: 'acme' });
  let hits = 0;
  lms.route('/jwks-counted', async (_req, res) => {
    hits++;
    await new Promise((r) => setTimeout(r, 200)); // a real network's latency: the launches overlap
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ keys: [lms.publicJwk] }));
  });
  await t.op('lti.platforms.add', { tenant: 'acme', ...lms.registration, jwks_url: `${lms.origin}/jwks-counted` });
  const c = counting(t.db);
  const app: TestApp = await startApp({}, { db: c.db });
  lms.setTool(app.url);
  return { ...c, app, activity: await seedActivity(t, 'acme'), hits: () => hits, close: () => app.close() };
});
useServer(async () => counted);

/** A login on the counting app: the state, nonce and cookie. */
async function login(app: TestApp) {
  const params = new URLSearchParams({
    iss: lms.issuer,
    login_hint: 'ada',
    target_link_uri: `${app.url}/lti/v1/launch`,
    client_id: lms.clientId,
    lti_deployment_id: DEPLOYMENT_ID,
  });
  const res = await fetch(`${app.url}/lti/v1/login?${params}`, { redirect: 'manual' });
  expect(res.status).toBe(302);
  const auth = new URL(res.headers.get('location')!);
  return { state: auth.searchParams.get('state')!, nonce: auth.searchParams.get('nonce')!, cookie: res.headers.get('set-cookie')!.split(';')[0]! };
}

async function launch(app: TestApp, sub: string) {
  const l = await login(app);
  const token = await lms.idToken(lms.launchClaims({ activity: counted.activity.activityId, sub, nonce: l.nonce }));
  return fetch(`${app.url}/lti/v1/launch`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: l.cookie },
    body: new URLSearchParams({ id_token: token, state: l.state }),
  });
}

describe('what a launch costs', () => {
  it('concurrent launches with a cold key cache fetch the platform key set once', async () => {
    const before = counted.hits();
    const launches = await Promise.all(['l1', 'l2', 'l3', 'l4', 'l5'].map((sub) => launch(counted.app, sub)));
    expect(launches.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect(counted.hits() - before).toBe(1);
  });

  it('reads the registration once and sweeps the used values once per launch', async () => {
    const l = await login(counted.app);
    const token = await lms.idToken(lms.launchClaims({ activity: counted.activity.activityId, sub: 'ada', nonce: l.nonce }));
    counted.state.seen.length = 0;
    const res = await fetch(`${counted.app.url}/lti/v1/launch`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: l.cookie },
      body: new URLSearchParams({ id_token: token, state: l.state }),
    });
    expect(res.status).toBe(200);
    expect(counted.count(/from lti_platforms/), counted.state.seen.join('\n---\n')).toBe(1);
    expect(counted.count(/from lti_deployments/)).toBe(1); // the same statement
    expect(counted.count(/delete from lti_used_values/)).toBe(1);
  });
});

describe('error pages', () => {
  const unknownLogin = () =>
    fetch(`${counted.app.url}/lti/v1/login?${new URLSearchParams({ iss: 'https://unknown.example', login_hint: 'x', target_link_uri: 'x' })}`);
  const listing = /select issuer, auth_url from lti_platforms/;

  it('read the platforms origins once for a burst of refusals, and not at all while the database is down', async () => {
    const before = counted.count(listing);
    for (let i = 0; i < 5; i++) {
      const res = await unknownLogin();
      expect(res.status).toBe(400);
      expect(res.headers.get('content-security-policy')).toContain(`frame-ancestors ${lms.origin}`);
    }
    expect(counted.count(listing) - before).toBeLessThanOrEqual(1);

    const during = counted.count(listing);
    counted.state.down = true;
    try {
      const res = await unknownLogin();
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('5');
      expect(await res.text()).toContain('Error code: unavailable.');
      // Framed by the platforms known before the outage, read without a query.
      expect(res.headers.get('content-security-policy')).toContain(`frame-ancestors ${lms.origin}`);
    } finally {
      counted.state.down = false;
    }
    expect(counted.count(listing)).toBe(during);
  });
});

describe('GET /lti/v1/jwks', () => {
  it('reads the key set once for many requests, and shows a rotation at once', async () => {
    const first = await (await fetch(`${counted.app.url}/lti/v1/jwks`)).json();
    const before = counted.count(/from lti_keys/);
    for (let i = 0; i < 20; i++) expect(await (await fetch(`${counted.app.url}/lti/v1/jwks`)).json()).toEqual(first);
    expect(counted.count(/from lti_keys/) - before).toBe(0);

    const rotated = await t.op('lti.keys.rotate', {});
    await expect.poll(async () => (await (await fetch(`${counted.app.url}/lti/v1/jwks`)).json()).keys[0].kid, { timeout: 5000 }).toBe(rotated.kid);
  });

  it('imports the signing key once', async () => {
    const a = await t.db.transaction((tx) => currentKey(tx));
    const b = await t.db.transaction((tx) => currentKey(tx));
    expect(b.kid).toBe(a.kid);
    expect(b.privateKey).toBe(a.privateKey);
  });
});
