/**
 * Sessions bound to the tenant that minted them (issue #10, defect 1): tenants A and C trust one
 * IdP issuer; A requires audience `app-a`, C `app-c`. A token A refuses (audience `app-c`) is
 * exchanged at C; the session it gets must act in C only — refused by A's judge (403, nothing
 * stored) and, on /mcp, unable to use author rights granted in A (RLS sees C only). Password
 * sessions still work across every tenant where their user is an author.
 */
import { SignJWT } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import { seedAuthor, useFixture } from '../helpers/harness.ts';
import { connect, fails, ok, signIn } from '../authoring/helpers.ts';
import { countRows, expectError, post, seedActivity, useAppWithIdp, type SeededActivity } from './fixtures.ts';

const { t, idp } = useAppWithIdp({ 'tenant-a': { audience: 'app-a' }, 'tenant-c': { audience: 'app-c' } });
const docA = useFixture(() => seedActivity(t, 'tenant-a'));
const docC = useFixture(() => seedActivity(t, 'tenant-c'));
beforeAll(async () => {
  // The same IdP user is an author of A (granted by subject), a learner of C.
  await t.op('author.grant', { tenant: 'tenant-a', subject: 'teacher-1' });
});

const session = async (tenant: string, audience: string, sub = 'teacher-1') =>
  post(t, '/v1/embed/session', { tenant, idp_token: await idp.sign({ sub }, { audience }) });

const judge = (token: string, tenant: string, activity: SeededActivity) =>
  post(
    t,
    '/v1/embed/judge',
    { tenant, activity_id: activity.activityId, artifact: { kind: 'document', content: 'my work' } },
    { authorization: `Bearer ${token}` },
  );

const payload = (jwt: string) => JSON.parse(Buffer.from(jwt.split('.')[1]!, 'base64url').toString()) as Record<string, unknown>;

describe('a token tenant A refuses, exchanged at tenant C', () => {
  it('is refused by A itself (wrong audience)', async () => {
    expectError(await session('tenant-a', 'app-c'), 401, 'unauthorized');
  });

  it("gives a session bound to C: its tokens carry C's tenant_id, refreshes included", async () => {
    const c = await session('tenant-c', 'app-c');
    expect(c.status).toBe(200);
    expect(payload(c.body.access_token).tenant_id).toBe(docC.tenantId);
    const refreshed = await fetch(`${t.url}/auth/v1/token?grant_type=refresh_token`, {
      method: 'POST',
      headers: { apikey: t.deps.config.anonKey, 'content-type': 'application/json' },
      body: JSON.stringify({ refresh_token: c.body.refresh_token }),
    });
    expect(refreshed.status).toBe(200);
    const next = (await refreshed.json()) as { access_token: string };
    expect(payload(next.access_token).tenant_id).toBe(docC.tenantId);
    expectError(await judge(next.access_token, 'tenant-a', docA), 403, 'forbidden');
  });

  it("is refused by A's judge with 403 and stores nothing; C's judge takes it", async () => {
    const c = await session('tenant-c', 'app-c');
    const before = { artifacts: await countRows(t, 'artifacts'), results: await countRows(t, 'activity_results') };
    const res = await judge(c.body.access_token, 'tenant-a', docA);
    expectError(res, 403, 'forbidden');
    // A's activity named under C's slug is simply not found in C.
    expectError(await judge(c.body.access_token, 'tenant-c', docA), 404, 'not_found');
    expect({ artifacts: await countRows(t, 'artifacts'), results: await countRows(t, 'activity_results') }).toEqual(before);
    expect((await judge(c.body.access_token, 'tenant-c', docC)).status).toBe(200);
  });

  it('cannot use the author rights granted in A on /mcp: create_program in A is denied, nothing written', async () => {
    const a = await session('tenant-a', 'app-a');
    const c = await session('tenant-c', 'app-c');
    expect(a.body.svc_user_id).toBe(c.body.svc_user_id); // one learner record across tenants

    const viaC = await connect(t, c.body.access_token);
    const programs = await countRows(t, 'programs');
    expect(await fails(viaC, 'create_program', { tenant: 'tenant-a', title: 'Smuggled' })).toMatch(/not an author|tenant/i);
    expect(await countRows(t, 'programs')).toBe(programs);
    // RLS sees tenant C only: whoami lists one membership, and A's content is invisible.
    const me = await ok(viaC, 'whoami');
    expect(me.memberships.map((m: { tenant: string }) => m.tenant)).toEqual(['tenant-c']);
    expect((await ok(viaC, 'list_programs', { tenant: 'tenant-c' })).programs).toHaveLength(1);
    expect(await fails(viaC, 'get_program', { id: docA.programId })).toMatch(/not found/i);
    await viaC.close();

    // The session A minted (right audience) does carry the grant.
    const viaA = await connect(t, a.body.access_token);
    expect((await ok(viaA, 'create_program', { tenant: 'tenant-a', title: 'Legit' })).title).toBe('Legit');
    expect(await fails(viaA, 'create_program', { tenant: 'tenant-c', title: 'Not mine' })).toMatch(/not an author|tenant/i);
    await viaA.close();
  });

  it('refuses a token whose tenant_id claim differs from its session, even with a valid signature', async () => {
    const c = await session('tenant-c', 'app-c');
    const claims = { ...payload(c.body.access_token), tenant_id: docA.tenantId };
    const forged = await new SignJWT(claims).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).sign(new TextEncoder().encode(t.deps.config.jwtSecret));
    expectError(await judge(forged, 'tenant-a', docA), 401, 'unauthorized');
    const res = await fetch(`${t.url}/mcp`, {
      method: 'POST',
      headers: { authorization: `Bearer ${forged}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(res.status).toBe(401);
  });

  it('still works on /auth/v1/user (the user is the same person everywhere)', async () => {
    const c = await session('tenant-c', 'app-c');
    const res = await fetch(`${t.url}/auth/v1/user`, { headers: { apikey: t.deps.config.anonKey, authorization: `Bearer ${c.body.access_token}` } });
    expect(res.status).toBe(200);
  });
});

describe('password-grant sessions', () => {
  it('keep working across every tenant where the user is an author', async () => {
    const { email, password } = await seedAuthor(t, 'tenant-p1', 'both@example.test');
    await t.op('tenant.create', { slug: 'tenant-p2' });
    await t.op('author.grant', { tenant: 'tenant-p2', email });
    const token = await signIn(t, email, password);
    expect(payload(token).tenant_id).toBeUndefined();
    const client = await connect(t, token);
    for (const tenant of ['tenant-p1', 'tenant-p2']) {
      expect((await ok(client, 'create_program', { tenant, title: `In ${tenant}` })).title).toBe(`In ${tenant}`);
    }
    expect((await ok(client, 'whoami')).memberships).toHaveLength(2);
    await client.close();
  });
});
