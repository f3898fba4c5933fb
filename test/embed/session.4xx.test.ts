/**
 * POST /v1/embed/session — refusals. Every token here is refused with the same 401 body; each
 * case is built so that it would pass if its one protection were removed.
 */
import { randomBytes } from 'node:crypto';
import { SignJWT } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import { startTestIdp } from '../helpers/test-idp.ts';
import { countRows, expectError, post, useAppWithIdp, withoutRequestId } from './fixtures.ts';
import { startSite } from './servers.ts';
import { useServer } from '../helpers/harness.ts';

const { t, idp } = useAppWithIdp({ acme: {}, aud: { audience: 'svc-embed' }, 'no-idp': null });
const evil = useServer(() => startTestIdp());

// A misconfigured IdP whose JWKS publishes a symmetric key: only the algorithm allow-list
// stands between an HS256 token signed with that (public!) key and a session.
const octSecret = randomBytes(32);
const oct = useServer(() =>
  startSite({
    '/jwks.json': {
      type: 'application/json',
      body: JSON.stringify({ keys: [{ kty: 'oct', kid: 'oct-1', alg: 'HS256', use: 'sig', k: octSecret.toString('base64url') }] }),
    },
  }),
);
beforeAll(async () => {
  await t.op('tenant.create', { slug: 'octo' });
  await t.op('idp.set', { tenant: 'octo', issuer: oct.url, jwks_url: `${oct.url}/jwks.json` });
});

const session = (tenant: string, idp_token: string) => post(t, '/v1/embed/session', { idp_token, tenant });

describe('POST /v1/embed/session 401', () => {
  let reference: unknown;
  beforeAll(async () => {
    reference = (await session('acme', 'not-a-jwt')).body;
  });

  const refused = async (tenant: string, token: string) => {
    const res = await session(tenant, token);
    expectError(res, 401, 'unauthorized');
    expect(withoutRequestId(res.body)).toEqual(withoutRequestId(reference));
  };

  it('control: a good token of the same IdP is accepted', async () => {
    expect((await session('acme', await idp.sign({ sub: 'control' }))).status).toBe(200);
    expect((await session('aud', await idp.sign({ sub: 'control' }, { audience: 'svc-embed' }))).status).toBe(200);
  });

  it('refuses HS256 signed with the IdP public key (key confusion)', async () => {
    await refused('acme', await idp.sign({ sub: 'mallory' }, { alg: 'HS256' }));
  });

  it('refuses HS256 even when the JWKS publishes a symmetric key', async () => {
    const token = await new SignJWT({ sub: 'mallory' })
      .setProtectedHeader({ alg: 'HS256', kid: 'oct-1' })
      .setIssuer(oct.url)
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(octSecret);
    await refused('octo', token);
  });

  it('refuses alg none', async () => {
    await refused('acme', await idp.sign({ sub: 'mallory' }, { alg: 'none' }));
  });

  it('refuses a token expired beyond the clock tolerance', async () => {
    await refused('acme', await idp.sign({ sub: 'late' }, { expiresIn: -120 }));
  });

  it('refuses a token not yet valid beyond the clock tolerance', async () => {
    await refused('acme', await idp.sign({ sub: 'early', nbf: Math.floor(Date.now() / 1000) + 120 }));
  });

  it('refuses a token without exp', async () => {
    await refused('acme', await idp.sign({ sub: 'forever', exp: undefined }));
  });

  it('refuses a token without a usable sub', async () => {
    await refused('acme', await idp.sign({ sub: '' }));
  });

  it('refuses a wrong or missing audience when the tenant has one', async () => {
    await refused('aud', await idp.sign({ sub: 'a' }, { audience: 'someone-else' }));
    await refused('aud', await idp.sign({ sub: 'a' }));
  });

  it("refuses a token of the tenant's keys that names another issuer", async () => {
    await refused('acme', await idp.sign({ sub: 'a', iss: 'https://idp.example.com' }));
  });

  it("refuses a token that names the tenant's issuer but is signed by another key", async () => {
    await refused('acme', await evil.sign({ sub: 'a', iss: idp.issuer }));
  });

  it('refuses an unknown kid', async () => {
    await refused('acme', await idp.sign({ sub: 'a' }, { kid: 'no-such-kid' }));
  });

  it('answers an unknown tenant and a tenant without IdP exactly like a bad token', async () => {
    const token = await idp.sign({ sub: 'a' });
    await refused('nowhere', token);
    await refused('no-idp', token);
  });

  it('answers 401, not 500, when the IdP cannot be reached', async () => {
    const gone = await startTestIdp();
    await t.op('tenant.create', { slug: 'gone' });
    await t.op('idp.set', { tenant: 'gone', issuer: gone.issuer, discovery: true });
    const token = await gone.sign({ sub: 'a' });
    await gone.close();
    await refused('gone', token);
  });

  it('writes nothing for a refused token', async () => {
    const before = await countRows(t, 'auth.users');
    await refused('acme', await idp.sign({ sub: 'never-created' }, { expiresIn: -3600 }));
    expect(await countRows(t, 'auth.users')).toBe(before);
    expect(await countRows(t, 'auth.identities', `provider_id = 'never-created'`)).toBe(0);
  });
});

describe('POST /v1/embed/session 400 and 404', () => {
  it('refuses a body that is not JSON', async () => {
    const res = await post(t, '/v1/embed/session', '{"idp_token": ');
    expectError(res, 400, 'invalid_request');
    expect(res.body.error.message).toBe('the request body is not valid JSON');
  });

  it('refuses an empty body and a non-JSON content type', async () => {
    expectError(await post(t, '/v1/embed/session', ''), 400, 'invalid_request');
    expectError(await post(t, '/v1/embed/session', 'idp_token=x', { 'content-type': 'application/x-www-form-urlencoded' }), 400, 'invalid_request');
  });

  it('refuses missing fields and wrong types', async () => {
    const missing = await post(t, '/v1/embed/session', { tenant: 'acme' });
    expectError(missing, 400, 'invalid_request');
    expect(missing.body.error.message).toMatch(/^idp_token: /);
    expectError(await post(t, '/v1/embed/session', { idp_token: 42, tenant: 'acme' }), 400, 'invalid_request');
    expectError(await post(t, '/v1/embed/session', { idp_token: 'x', tenant: 'Not A Slug' }), 400, 'invalid_request');
    expectError(await post(t, '/v1/embed/session', [1, 2]), 400, 'invalid_request');
  });

  it('refuses a body over the size limit with 400', async () => {
    const res = await post(t, '/v1/embed/session', { idp_token: 'x'.repeat(t.deps.config.bodyLimit + 10), tenant: 'acme' });
    expectError(res, 400, 'invalid_request');
  });

  it('answers unknown embed routes with the same error body', async () => {
    expectError(await post(t, '/v1/embed/nothing', {}), 404, 'not_found');
  });
});
