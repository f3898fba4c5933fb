/**
 * POST /v1/embed/session — internal teachers: an admin grants authorship (the CLI's operations)
 * by IdP subject or by email, before or after the teacher's first sign-in; the session then has
 * author rights in that tenant only (proved on /mcp), and a revoke takes them away.
 */
import { describe, expect, it } from 'vitest';
import { startTestIdp } from '../helpers/test-idp.ts';
import { post, useAppWithIdp } from './fixtures.ts';
import { useServer } from '../helpers/harness.ts';

const { t, idp } = useAppWithIdp({ acme: {}, globex: {}, 'no-idp': null });
const other = useServer(() => startTestIdp());

const signIn = async (tenant: string, claims: Record<string, unknown> & { sub: string }) => {
  const res = await post(t, '/v1/embed/session', { tenant, idp_token: await idp.sign(claims) });
  expect(res.status).toBe(200);
  return res.body as { access_token: string; svc_user_id: string };
};
const roleIn = async (tenant: string, userId: string) =>
  (
    await t.db.query<{ role: string }>('select m.role from memberships m join tenants t on t.id = m.tenant_id where t.slug = $1 and m.user_id = $2', [
      tenant,
      userId,
    ])
  )[0]?.role;

/** create_program over MCP with the session's token: true when the server wrote it. */
async function canAuthor(token: string, tenant: string): Promise<boolean> {
  const res = await fetch(`${t.url}/mcp`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'create_program', arguments: { tenant, title: 'By a teacher' } } }),
  });
  const reply = (await res.json()) as { result?: { isError?: boolean } };
  return res.status === 200 && reply.result !== undefined && reply.result.isError !== true;
}

describe('authorship by IdP subject', () => {
  it('granted before the first sign-in: the first session is an author of that tenant only', async () => {
    const grant = await t.op('author.grant', { tenant: 'acme', subject: 'teacher-1' });
    expect(grant).toEqual({ tenant: 'acme', issuer: idp.issuer, subject: 'teacher-1', svc_user_id: null, role: 'author' });
    const s = await signIn('acme', { sub: 'teacher-1' });
    expect(await roleIn('acme', s.svc_user_id)).toBe('author');
    expect(await canAuthor(s.access_token, 'acme')).toBe(true);
    const g = await signIn('globex', { sub: 'teacher-1' });
    expect(g.svc_user_id).toBe(s.svc_user_id); // one user per (issuer, subject)
    expect(await roleIn('globex', g.svc_user_id)).toBe('learner');
    expect(await canAuthor(g.access_token, 'globex')).toBe(false);
  });

  it('granted after the first sign-in: effective at once, on the session already issued', async () => {
    const s = await signIn('acme', { sub: 'teacher-2' });
    expect(await canAuthor(s.access_token, 'acme')).toBe(false);
    expect((await t.op('author.grant', { tenant: 'acme', subject: 'teacher-2' })).svc_user_id).toBe(s.svc_user_id);
    expect(await canAuthor(s.access_token, 'acme')).toBe(true);
  });

  it('revoked: a learner again, and the next sign-in does not bring it back', async () => {
    const s = await signIn('acme', { sub: 'teacher-3' });
    await t.op('author.grant', { tenant: 'acme', subject: 'teacher-3' });
    expect((await t.op('author.revoke', { tenant: 'acme', subject: 'teacher-3' })).role).toBe('learner');
    expect(await roleIn('acme', s.svc_user_id)).toBe('learner');
    await signIn('acme', { sub: 'teacher-3' });
    expect(await roleIn('acme', s.svc_user_id)).toBe('learner');
    await expect(t.op('author.revoke', { tenant: 'acme', subject: 'teacher-3' })).rejects.toMatchObject({ code: 'not_found' });
  });

  it("matches the issuer too: another issuer's subject of the same name is not granted", async () => {
    await t.op('author.grant', { tenant: 'acme', subject: 'teacher-4', issuer: other.issuer });
    const s = await signIn('acme', { sub: 'teacher-4' });
    expect(await roleIn('acme', s.svc_user_id)).toBe('learner');
  });

  it('needs an issuer when the tenant has no IdP, and an email or a subject (not both)', async () => {
    await expect(t.op('author.grant', { tenant: 'no-idp', subject: 'x' })).rejects.toMatchObject({ code: 'invalid' });
    await expect(t.op('author.grant', { tenant: 'acme', subject: 'x', email: 'x@acme.test' })).rejects.toMatchObject({ code: 'invalid' });
    await expect(t.op('author.grant', { tenant: 'acme' })).rejects.toMatchObject({ code: 'invalid' });
    await expect(t.op('author.grant', { tenant: 'acme', email: 'x@acme.test', issuer: idp.issuer })).rejects.toMatchObject({ code: 'invalid' });
  });
});

describe('authorship by email', () => {
  it('covers an IdP sign-in whose token carries the address verified', async () => {
    const grant = await t.op('author.grant', { tenant: 'acme', email: 'Grace@School.test ' });
    expect(grant).toMatchObject({ email: 'grace@school.test', svc_user_id: null, role: 'author' });
    const verified = await signIn('acme', { sub: 'grace', email: 'grace@school.test', email_verified: true });
    expect(await roleIn('acme', verified.svc_user_id)).toBe('author');
    const unverified = await signIn('acme', { sub: 'not-grace', email: 'grace@school.test' });
    expect(await roleIn('acme', unverified.svc_user_id)).toBe('learner');
    const elsewhere = await signIn('globex', { sub: 'grace', email: 'grace@school.test', email_verified: true });
    expect(await roleIn('globex', elsewhere.svc_user_id)).toBe('learner');
  });

  it('keeps working for a password user (svc author grant <tenant> <email>), and revokes both', async () => {
    await t.op('user.create', { email: 'ada@school.test', password: 'correct horse battery' });
    const grant = await t.op('author.grant', { tenant: 'acme', email: 'ada@school.test' });
    expect(grant.svc_user_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(await roleIn('acme', grant.svc_user_id)).toBe('author');
    const idpAda = await signIn('acme', { sub: 'ada', email: 'ada@school.test', email_verified: true });
    expect(await roleIn('acme', idpAda.svc_user_id)).toBe('author');
    await t.op('author.revoke', { tenant: 'acme', email: 'ada@school.test' });
    expect(await roleIn('acme', grant.svc_user_id)).toBe('learner');
    expect(await roleIn('acme', idpAda.svc_user_id)).toBe('learner');
    await signIn('acme', { sub: 'ada', email: 'ada@school.test', email_verified: true });
    expect(await roleIn('acme', idpAda.svc_user_id)).toBe('learner');
  });
});
