/**
 * LTI 1.3 registration and keys (issue #22, step 1): platform registrations per tenant through the
 * admin operations (the CLI's code path, directly and through a running server's
 * `/admin/v1/ops`), the tool's RS256 keys at `GET /lti/v1/jwks`, rotation keeping the previous key
 * published until tokens signed with it have expired, and nothing of it readable under RLS.
 */
import { describe, expect, it } from 'vitest';
import { createLocalJWKSet, jwtVerify, SignJWT } from 'jose';
import { useApp, useFixture } from '../helpers/harness.ts';
import { currentKey, RETIRED_KEY_SECONDS } from '../../src/lti/index.ts';

const t = useApp();
useFixture(async () => {
  for (const slug of ['acme', 'globex']) await t.op('tenant.create', { slug });
  return {};
});

const canvas = {
  issuer: 'https://canvas.instructure.com',
  client_id: '10000000000042',
  auth_url: 'https://sso.canvaslms.com/api/lti/authorize_redirect',
  token_url: 'https://sso.canvaslms.com/login/oauth2/token',
  jwks_url: 'https://sso.canvaslms.com/api/lti/security/jwks',
};

const jwks = async () => {
  const res = await fetch(`${t.url}/lti/v1/jwks`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  return (await res.json()) as { keys: Array<Record<string, unknown>> };
};

/** A token signed with the current key, as the tool signs its client assertions. */
const signed = async () => {
  const key = await t.db.transaction((tx) => currentKey(tx));
  return new SignJWT({ sub: 'tool' }).setProtectedHeader({ alg: 'RS256', kid: key.kid }).setIssuedAt().setExpirationTime('5m').sign(key.privateKey);
};

describe('platform registrations', () => {
  it('registers a platform for one tenant, with deployments; lists and removes it', async () => {
    const added = await t.op('lti.platforms.add', { tenant: 'acme', ...canvas, deployments: ['1:abc', '2:def', '1:abc'] });
    expect(added).toMatchObject({ tenant: 'acme', ...canvas, token_audience: null, deployments: ['1:abc', '2:def'], created: true });
    // Again with the same issuer + client id in the same tenant: URLs updated, deployments added.
    const again = await t.op('lti.platforms.add', { tenant: 'acme', ...canvas, token_audience: 'https://api.example/token', deployments: ['3:ghi'] });
    expect(again).toMatchObject({ id: added.id, created: false, token_audience: 'https://api.example/token', deployments: ['1:abc', '2:def', '3:ghi'] });

    expect((await t.op('lti.platforms.list', { tenant: 'acme' })).map((p: { client_id: string }) => p.client_id)).toEqual([canvas.client_id]);
    expect(await t.op('lti.platforms.list', { tenant: 'globex' })).toEqual([]);
    expect(await t.op('lti.platforms.list', {})).toHaveLength(1);

    await expect(t.op('lti.platforms.remove', { tenant: 'globex', issuer: canvas.issuer, client_id: canvas.client_id })).rejects.toMatchObject({
      code: 'not_found',
    });
    expect(await t.op('lti.platforms.remove', { tenant: 'acme', issuer: canvas.issuer, client_id: canvas.client_id })).toMatchObject({ removed: true });
    expect(await t.op('lti.platforms.list', {})).toEqual([]);
    expect(await t.db.query('select 1 from lti_deployments')).toEqual([]);
  });

  it('keeps issuer + client id to one tenant (every Canvas Cloud shares one issuer: another client id is another registration)', async () => {
    await t.op('lti.platforms.add', { tenant: 'acme', ...canvas });
    await expect(t.op('lti.platforms.add', { tenant: 'globex', ...canvas })).rejects.toMatchObject({
      code: 'conflict',
      message: expect.stringMatching(/another tenant/),
    });
    const other = await t.op('lti.platforms.add', { tenant: 'globex', ...canvas, client_id: '10000000000077' });
    expect(other).toMatchObject({ tenant: 'globex', issuer: canvas.issuer, created: true });
    // The unique key holds in the database too, not only in addPlatform's check.
    const [acme] = await t.db.query<{ id: string }>(`select id from tenants where slug = 'globex'`);
    await expect(
      t.db.query('insert into lti_platforms (tenant_id, issuer, client_id, auth_url, token_url, jwks_url) values ($1, $2, $3, $4, $4, $4)', [
        acme!.id,
        canvas.issuer,
        canvas.client_id,
        canvas.auth_url,
      ]),
    ).rejects.toThrow();
    for (const [tenant, client_id] of [
      ['acme', canvas.client_id],
      ['globex', '10000000000077'],
    ]) {
      await t.op('lti.platforms.remove', { tenant, issuer: canvas.issuer, client_id });
    }
  });

  it('refuses bad input naming the field, storing nothing', async () => {
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ ...canvas, issuer: 'ftp://lms.example' }, /^issuer: /],
      [{ ...canvas, auth_url: 'not a url' }, /^auth_url: /],
      [{ ...canvas, client_id: '' }, /^client_id: /],
      [{ ...canvas, jwks_url: undefined }, /^jwks_url: /],
      [{ ...canvas, deployments: [''] }, /^deployments\.0: /],
      [{ ...canvas, client_id: 'x'.repeat(300) }, /^client_id: /],
    ];
    for (const [args, message] of cases) {
      await expect(t.op('lti.platforms.add', { tenant: 'acme', ...args })).rejects.toMatchObject({ code: 'invalid', message: expect.stringMatching(message) });
    }
    await expect(t.op('lti.platforms.add', { tenant: 'nobody', ...canvas })).rejects.toMatchObject({ code: 'not_found' });
    expect(await t.db.query('select 1 from lti_platforms')).toEqual([]);
  });

  it('works through a running server (the CLI against an embedded folder held by npm start)', async () => {
    const call = (op: string, body: unknown, key = t.deps.config.serviceRoleKey) =>
      fetch(`${t.url}/admin/v1/ops/${op}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const res = await call('lti.platforms.add', { tenant: 'acme', ...canvas, deployments: ['1:abc'] });
    expect(res.status).toBe(200);
    expect((await res.json()).data).toMatchObject({ tenant: 'acme', deployments: ['1:abc'] });
    expect((await call('lti.platforms.add', { tenant: 'globex', ...canvas })).status).toBe(409);
    expect((await call('lti.platforms.list', {}, t.deps.config.anonKey)).status).toBe(401);
    const config = await (await call('lti.config', { base_url: 'https://learn.example.com/' })).json();
    expect(config.data).toEqual({
      login_url: 'https://learn.example.com/lti/v1/login',
      launch_url: 'https://learn.example.com/lti/v1/launch',
      redirect_uris: ['https://learn.example.com/lti/v1/launch'],
      jwks_url: 'https://learn.example.com/lti/v1/jwks',
      deep_linking_url: 'https://learn.example.com/lti/v1/launch',
      domain: 'learn.example.com',
      scopes: expect.arrayContaining(['https://purl.imsglobal.org/spec/lti-ags/scope/score']),
    });
    expect((await call('lti.platforms.remove', { tenant: 'acme', issuer: canvas.issuer, client_id: canvas.client_id })).status).toBe(200);
  });
});

describe('the tool keys', () => {
  it('publishes one RS256 public key with a kid, made on first use; tokens signed with it verify', async () => {
    const set = await jwks();
    expect(set.keys).toHaveLength(1);
    const [key] = set.keys;
    expect(key).toMatchObject({ kty: 'RSA', alg: 'RS256', use: 'sig', kid: expect.stringMatching(/^[A-Za-z0-9_-]{8,}$/), e: 'AQAB' });
    for (const secret of ['d', 'p', 'q', 'dp', 'dq', 'qi']) expect(key).not.toHaveProperty(secret);
    expect(((key!.n as string).length * 6) / 8).toBeGreaterThanOrEqual(255); // 2048-bit modulus
    await jwtVerify(await signed(), createLocalJWKSet(set as never), { algorithms: ['RS256'] });
    expect((await jwks()).keys).toEqual(set.keys); // the same key on the next read
  });

  it('rotates: the new key signs at once, the previous stays published until its tokens have expired, then leaves', async () => {
    const before = (await jwks()).keys[0]!;
    const oldToken = await signed();
    const rotated = await t.op('lti.keys.rotate', {});
    expect(rotated).toMatchObject({ retired: before.kid, retired_published_seconds: RETIRED_KEY_SECONDS });
    expect(RETIRED_KEY_SECONDS).toBeGreaterThanOrEqual(300 + 60); // tokens live 5 minutes, 60 s of skew

    // The rotation ran outside the server (the CLI's code path): its NOTIFY reaches the server's
    // listener asynchronously, so the first read may still get the kept set.
    await expect.poll(async () => (await jwks()).keys.map((k) => k.kid), { timeout: 5_000, interval: 50 }).toEqual([rotated.kid, before.kid]);
    const after = await jwks();
    const newToken = await signed();
    expect(JSON.parse(Buffer.from(newToken.split('.')[0]!, 'base64url').toString()).kid).toBe(rotated.kid);
    for (const token of [oldToken, newToken]) await jwtVerify(token, createLocalJWKSet(after as never), { algorithms: ['RS256'] });

    // Once the retired key is older than its tokens' lifetime, it leaves the set and the next rotation deletes it.
    await t.db.query(`update lti_keys set retired_at = now() - make_interval(secs => $1) where kid = $2`, [RETIRED_KEY_SECONDS + 1, before.kid]);
    await t.db.query(`select pg_notify('svc_lti_keys', 'aged')`); // the served set is kept until the retired key's time is up: time passed by hand, say so
    // As above, the next read may come before the notice.
    await expect.poll(async () => (await jwks()).keys.map((k) => k.kid), { timeout: 5_000, interval: 50 }).toEqual([rotated.kid]);
    await expect(jwtVerify(oldToken, createLocalJWKSet((await jwks()) as never))).rejects.toThrow();
    const third = await t.op('lti.keys.rotate', {});
    const listed = await t.op('lti.keys.list', {});
    expect(listed.map((k: { kid: string }) => k.kid)).toEqual([third.kid, rotated.kid]);
    expect(listed[0].retired_at).toBeNull();
    expect(listed[1].retired_at).toMatch(/^\d{4}-\d\d-\d\dT/);
  });

  it('keeps the keys and registrations away from signed-in users and API keys (RLS, no grant)', async () => {
    await t.op('lti.platforms.add', { tenant: 'acme', ...canvas, deployments: ['1:abc'] });
    for (const role of ['authenticated', 'svc_results']) {
      for (const table of ['lti_keys', 'lti_platforms', 'lti_deployments', 'lti_used_values']) {
        await expect(
          t.db.transaction(async (tx) => {
            await tx.query(`set local role ${role}`);
            return tx.query(`select * from ${table}`);
          }),
        ).rejects.toThrow(/permission denied/);
      }
    }
    await t.op('lti.platforms.remove', { tenant: 'acme', issuer: canvas.issuer, client_id: canvas.client_id });
  });

  it('answers other LTI paths with the surface error body', async () => {
    const res = await fetch(`${t.url}/lti/v1/nowhere`);
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ error: { code: 'not_found' } });
  });
});
