/** POST /v1/embed/session — successful exchanges, on the real app and database. */
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { useApp, useServer } from '../helpers/harness.ts';
import { startTestIdp } from '../helpers/test-idp.ts';
import { countRows, post } from './fixtures.ts';

const t = useApp();
const rsa = useServer(() => startTestIdp());
const ec = useServer(() => startTestIdp({ alg: 'ES256' }));
const disc = useServer(() => startTestIdp());
const ed = useServer(() => startTestIdp({ alg: 'EdDSA' }));
beforeAll(async () => {
  await t.op('tenant.create', { slug: 'edco' });
  await t.op('idp.set', { tenant: 'edco', issuer: ed.issuer, discovery: true });
  await t.op('tenant.create', { slug: 'acme' });
  await t.op('idp.set', { tenant: 'acme', issuer: rsa.issuer, jwks_url: rsa.jwksUrl });
  await t.op('tenant.create', { slug: 'ecorp' });
  await t.op('idp.set', { tenant: 'ecorp', issuer: ec.issuer, jwks_url: ec.jwksUrl });
  await t.op('tenant.create', { slug: 'disco' });
  await t.op('idp.set', { tenant: 'disco', issuer: disc.issuer, discovery: true, audience: 'svc-embed' });
});
afterEach(() => {
  vi.useRealTimers();
});

const session = (tenant: string, idp_token: string) => post(t, '/v1/embed/session', { idp_token, tenant });

describe('POST /v1/embed/session 200', () => {
  it('creates the learner on first sight and maps the same subject to the same user afterwards', async () => {
    const first = await session('acme', await rsa.sign({ sub: 'learner-1' }));
    expect(first.status).toBe(200);
    expect(Object.keys(first.body).sort()).toEqual(['access_token', 'expires_in', 'refresh_token', 'svc_user_id']);
    expect(first.body.expires_in).toBe(3600);

    const [identity] = await t.db.query<{ provider: string; user_id: string; email: string | null }>(
      `select i.provider, i.user_id, u.email from auth.identities i join auth.users u on u.id = i.user_id where i.provider_id = 'learner-1'`,
    );
    expect(identity!.provider).toBe(`idp:${rsa.issuer}`);
    const memberships = await t.db.query<{ role: string; slug: string }>(
      `select m.role, t.slug from memberships m join tenants t on t.id = m.tenant_id where m.user_id = $1`,
      [first.body.svc_user_id],
    );
    expect(memberships).toEqual([{ role: 'learner', slug: 'acme' }]);

    const second = await session('acme', await rsa.sign({ sub: 'learner-1' }));
    expect(second.status).toBe(200);
    expect(second.body.svc_user_id).toBe(first.body.svc_user_id);
    expect(second.body.access_token).not.toBe(first.body.access_token);
    expect(await countRows(t, 'auth.identities', `provider_id = 'learner-1'`)).toBe(1);
    expect(await countRows(t, 'auth.sessions', 'user_id = $1', [identity!.user_id])).toBe(2);
  });

  it("keeps the IdP's email out of auth.users even when an instructor has that email", async () => {
    await t.op('user.create', { email: 'ada@example.com', password: 'correct horse battery' });
    const res = await session('acme', await rsa.sign({ sub: 'ada-at-idp', email: 'ada@example.com', name: 'Ada' }));
    expect(res.status).toBe(200);
    const [row] = await t.db.query<{ email: string | null; identity_data: Record<string, unknown> }>(
      `select u.email, i.identity_data from auth.identities i join auth.users u on u.id = i.user_id where i.provider_id = 'ada-at-idp'`,
    );
    expect(row!.email).toBeNull();
    expect(row!.identity_data).toMatchObject({ iss: rsa.issuer, sub: 'ada-at-idp', email: 'ada@example.com', name: 'Ada' });
    // The instructor account is untouched and separate.
    expect(await countRows(t, 'auth.users', `email = 'ada@example.com'`)).toBe(1);
  });

  it('issues tokens that work on /auth/v1/user and /auth/v1/token?grant_type=refresh_token', async () => {
    const res = await session('acme', await rsa.sign({ sub: 'learner-2' }));
    const headers = { apikey: t.deps.config.anonKey };
    const user = await fetch(`${t.url}/auth/v1/user`, { headers: { ...headers, authorization: `Bearer ${res.body.access_token}` } });
    expect(user.status).toBe(200);
    const me = (await user.json()) as { id: string; email: string };
    expect(me.email).toBe('');

    const refreshed = await post(t, '/auth/v1/token?grant_type=refresh_token', { refresh_token: res.body.refresh_token }, headers);
    expect(refreshed.status).toBe(200);
    expect(refreshed.body.user.id).toBe(me.id);
    expect(refreshed.body.refresh_token).not.toBe(res.body.refresh_token);
    const [svc] = await t.db.query<{ id: string }>('select id from users where auth_user_id = $1', [me.id]);
    expect(svc!.id).toBe(res.body.svc_user_id);
  });

  it('issues an access token that works on /mcp (the learner sees their tenant)', async () => {
    const res = await session('acme', await rsa.sign({ sub: 'mcp-learner' }));
    const mcp = await fetch(`${t.url}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${res.body.access_token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'list_tenants', arguments: {} } }),
    });
    expect(mcp.status).toBe(200);
    const reply = (await mcp.json()) as { result?: { isError?: boolean; structuredContent?: unknown }; error?: unknown };
    expect(reply.error).toBeUndefined();
    expect(reply.result?.isError).not.toBe(true);
    expect(JSON.stringify(reply.result?.structuredContent)).toContain('"slug":"acme"');
  });

  it('accepts ES256 tokens', async () => {
    const res = await session('ecorp', await ec.sign({ sub: 'ec-learner' }));
    expect(res.status).toBe(200);
  });

  it('accepts EdDSA (Ed25519) tokens, keys found through OIDC discovery', async () => {
    const res = await session('edco', await ed.sign({ sub: 'ed-learner' }));
    expect(res.status).toBe(200);
    expect(ed.discoveryRequests).toBe(1);
  });

  it('refetches the key set for an unknown kid at most once per cooldown, so random kids cannot hammer the IdP', async () => {
    expect((await session('edco', await ed.sign({ sub: 'ed-2' }))).status).toBe(200);
    const fetched = ed.jwksRequests;
    const forged = await Promise.all(Array.from({ length: 20 }, (_, i) => ed.sign({ sub: 'ed-2' }, { kid: `random-${i}` })));
    for (const token of forged) expect((await session('edco', token)).status).toBe(401);
    expect(ed.jwksRequests - fetched).toBeLessThanOrEqual(1);
    // The rotated key arrives after the cooldown: one refetch, and the new kid works.
    await ed.rotate();
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 31_000 });
    expect((await session('edco', await ed.sign({ sub: 'ed-2' }))).status).toBe(200);
    expect(ed.jwksRequests - fetched).toBeLessThanOrEqual(2);
  });

  it('finds the keys through OIDC discovery and checks the stored audience', async () => {
    const res = await session('disco', await disc.sign({ sub: 'disco-learner' }, { audience: 'svc-embed' }));
    expect(res.status).toBe(200);
  });

  it('accepts a token that expired within the 30 s clock tolerance', async () => {
    const res = await session('acme', await rsa.sign({ sub: 'skewed' }, { expiresIn: -10 }));
    expect(res.status).toBe(200);
  });

  it('follows a key rotation: a new kid refetches the key set (after the cooldown)', async () => {
    expect((await session('acme', await rsa.sign({ sub: 'rotating' }))).status).toBe(200);
    await rsa.rotate();
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 31_000 });
    const res = await session('acme', await rsa.sign({ sub: 'rotating' }));
    expect(res.status).toBe(200);
  });

  it('keeps an admin-granted author an author', async () => {
    const first = await session('acme', await rsa.sign({ sub: 'teacher-1' }));
    await t.db.query(`update memberships set role = 'author' where user_id = $1`, [first.body.svc_user_id]);
    expect((await session('acme', await rsa.sign({ sub: 'teacher-1' }))).status).toBe(200);
    const [m] = await t.db.query<{ role: string }>('select role from memberships where user_id = $1', [first.body.svc_user_id]);
    expect(m!.role).toBe('author');
  });

  it('creates one user when first-sight requests of one subject race', async () => {
    const token = await rsa.sign({ sub: 'racer' });
    const all = await Promise.all(Array.from({ length: 6 }, () => session('acme', token)));
    expect(all.map((r) => r.status)).toEqual(Array(6).fill(200));
    expect(new Set(all.map((r) => r.body.svc_user_id)).size).toBe(1);
    expect(await countRows(t, 'auth.identities', `provider_id = 'racer'`)).toBe(1);
  });

  it('maps the same subject at two issuers to two users', async () => {
    const a = await session('acme', await rsa.sign({ sub: 'same-sub' }));
    const b = await session('ecorp', await ec.sign({ sub: 'same-sub' }));
    expect(a.status).toBe(200);
    expect(b.status).toBe(200);
    expect(a.body.svc_user_id).not.toBe(b.body.svc_user_id);
  });
});
