/**
 * Issue #23 — the audit log (src/audit, migration 0160): every privileged act leaves exactly one
 * row with the right actor, in the act's transaction (a refused act leaves none); rows cannot be
 * updated, deleted or truncated by any of the service's roles; a tenant reads its own log with
 * `GET /v1/audit-events` (keyset pages, filters) and nothing of another tenant's.
 */
import { createHash } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { post } from '../embed/fixtures.ts';
import { auth } from '../identity/helpers.ts';
import { expectError, getJson, walk } from '../results/fixtures.ts';
import { fails, ok, signIn } from '../authoring/helpers.ts';
import { asUser } from '../../src/db/index.ts';
import { rawFlow } from '../identity/oauth/helpers.ts';
import { learnerSession, submit, importTree, useLifecycleWorld } from '../authoring/lifecycle-world.ts';

const x = useLifecycleWorld();
const t = () => x.w.t;

interface Row {
  tenant_id: string;
  actor_kind: string;
  actor_id: string | null;
  action: string;
  target_type: string;
  target_id: string;
  request_id: string | null;
  detail: Record<string, unknown>;
}
let seen = 0;
/** The rows appended since the last call. */
async function fresh(): Promise<Row[]> {
  const rows = await t().db.query<Row>(
    'select tenant_id, actor_kind, actor_id, action, target_type, target_id, request_id, detail from audit_events order by at, id',
  );
  const out = rows.slice(seen);
  seen = rows.length;
  return out;
}
const tenantIdOf = async (slug: string) => (await t().db.query<{ id: string }>('select id from tenants where slug = $1', [slug]))[0]!.id;
const svcIdOf = async (email: string) =>
  (await t().db.query<{ id: string }>('select u.id from users u join auth.users a on a.id = u.auth_user_id where a.email = $1', [email]))[0]!.id;
const NIL = '00000000-0000-0000-0000-000000000000';

beforeAll(async () => {
  await fresh();
});

describe('admin acts (svc, as the CLI runs them)', () => {
  it('each act leaves exactly one row: action, actor cli, target by id, no email anywhere', async () => {
    const acme = await tenantIdOf('acme');
    const expectOne = async (action: string, target: { type: string; id?: string }, tenant: string = acme) => {
      const rows = await fresh();
      expect(rows, action).toHaveLength(1);
      expect(rows[0]).toMatchObject({ action, actor_kind: 'cli', actor_id: null, tenant_id: tenant, target_type: target.type, request_id: null });
      if (target.id) expect(rows[0]!.target_id).toBe(target.id);
      expect(JSON.stringify(rows[0])).not.toMatch(/@/);
      return rows[0]!;
    };
    const created = await t().op('tenant.create', { slug: 'audited' });
    await expectOne('tenant.create', { type: 'tenant', id: created.id }, created.id);
    const user = await t().op('user.create', { email: 'aud@audit.test', password: 'correct horse battery' });
    await expectOne('user.create', { type: 'auth_user', id: user.id }, NIL);
    await t().op('user.update', { user: user.id, user_metadata: { a: 1 } });
    await expectOne('user.update', { type: 'auth_user', id: user.id }, NIL);
    await t().op('user.ban', { user: user.id, duration: '1h' });
    await expectOne('user.ban', { type: 'auth_user', id: user.id }, NIL);
    await t().op('author.grant', { tenant: 'acme', email: 'aud@audit.test' });
    await expectOne('author.grant', { type: 'user', id: await svcIdOf('aud@audit.test') });
    await t().op('author.revoke', { tenant: 'acme', email: 'aud@audit.test' });
    await expectOne('author.revoke', { type: 'user', id: await svcIdOf('aud@audit.test') });
    await t().op('author.grant', { tenant: 'acme', email: 'nobody-yet@audit.test' });
    const pending = await expectOne('author.grant', { type: 'email_hmac' });
    expect(pending.target_id).toMatch(/^[0-9a-f]{64}$/);
    // A keyed hash: a reader of the log cannot test a guessed address against it (a plain SHA-256 could be).
    expect(pending.target_id).not.toBe(createHash('sha256').update('nobody-yet@audit.test').digest('hex'));
    await t().op('author.revoke', { tenant: 'acme', email: 'nobody-yet@audit.test' });
    expect((await expectOne('author.revoke', { type: 'email_hmac' })).target_id, 'the same address, the same target').toBe(pending.target_id);
    const key = await t().op('key.create', { tenant: 'acme', name: 'audit' });
    await expectOne('key.create', { type: 'api_key', id: key.prefix });
    await t().op('key.revoke', { prefix: key.prefix });
    await expectOne('key.revoke', { type: 'api_key', id: key.prefix });
    await t().op('embed.origins.add', { tenant: 'acme', origin: 'https://lms.audit.test' });
    await expectOne('embed.origin.add', { type: 'origin', id: 'https://lms.audit.test' });
    await t().op('embed.origins.add', { tenant: 'acme', origin: 'https://lms.audit.test' });
    expect(await fresh(), 'adding an origin already there changes nothing: no row').toHaveLength(0);
    await t().op('embed.origins.remove', { tenant: 'acme', origin: 'https://lms.audit.test' });
    await expectOne('embed.origin.remove', { type: 'origin', id: 'https://lms.audit.test' });
    await t().op('idp.refresh', { tenant: 'acme' });
    await expectOne('idp.refresh', { type: 'tenant', id: acme });
    await t().op('judge.thresholds.set', { tenant: 'acme', min_kappa: 0.5 });
    expect((await expectOne('judge.thresholds.set', { type: 'tenant', id: acme })).detail).toMatchObject({ min_kappa: 0.5 });
    await t().op('judge.consistency.set', { tenant: 'acme', margin: 5 });
    await expectOne('judge.consistency.set', { type: 'tenant', id: acme });
    await t().op('judge.consistency.off', { tenant: 'acme' });
    expect((await expectOne('judge.consistency.set', { type: 'tenant', id: acme })).detail).toMatchObject({ margin: null });
    const platform = {
      tenant: 'acme',
      issuer: 'https://lms.audit.test',
      client_id: 'tool-1',
      auth_url: 'https://lms.audit.test/auth',
      token_url: 'https://lms.audit.test/token',
      jwks_url: 'https://lms.audit.test/jwks',
    };
    const registered = await t().op('lti.platforms.add', platform);
    await expectOne('lti.platform.add', { type: 'lti_platform', id: registered.id });
    await t().op('lti.platforms.remove', { tenant: 'acme', issuer: platform.issuer, client_id: platform.client_id });
    await expectOne('lti.platform.remove', { type: 'lti_platform', id: 'https://lms.audit.test tool-1' });
    const rotated = await t().op('lti.keys.rotate', {});
    await expectOne('lti.keys.rotate', { type: 'lti_key', id: rotated.kid }, NIL);
    await t().op('user.delete', { user: user.id });
    await expectOne('user.delete', { type: 'auth_user', id: user.id }, NIL);
    // reads are not acts
    await t().op('key.list', { tenant: 'acme' });
    await t().op('tenant.list', {});
    expect(await fresh()).toHaveLength(0);
  });

  it('a refused act leaves no row', async () => {
    await expect(t().op('author.revoke', { tenant: 'acme', email: 'never@audit.test' })).rejects.toThrow(/not an author/);
    await expect(t().op('key.revoke', { prefix: 'nosuchprefix' })).rejects.toThrow(/no API key/);
    await expect(t().op('embed.origins.remove', { tenant: 'acme', origin: 'https://never.audit.test' })).rejects.toThrow(/not an allowed origin/);
    await expect(t().op('tenant.create', { slug: 'acme' })).rejects.toThrow(/already exists/);
    await expect(t().op('judge.thresholds.set', { tenant: 'acme', min_kappa: 7 })).rejects.toThrow(/min_kappa/);
    await expect(t().op('oauth.clients.revoke', { client_id: 'no-such-client' })).rejects.toThrow(/no OAuth client/);
    expect(await fresh()).toHaveLength(0);
  });

  it('through the running server’s admin door: actor service_role, with the request id', async () => {
    const res = await fetch(`${t().url}/admin/v1/ops/tenant.create`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t().deps.config.serviceRoleKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ slug: 'by-door' }),
    });
    expect(res.status).toBe(200);
    const rows = await fresh();
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ action: 'tenant.create', actor_kind: 'service_role', request_id: res.headers.get('x-request-id') });
  });

  it('the identity admin API (service-role key): user create, update and delete as service_role', async () => {
    const created = await auth(t(), '/admin/users', { key: 'service', body: { email: 'api@audit.test', password: 'correct horse battery' } });
    expect(created.status).toBe(200);
    const id = ((await created.json()) as { id: string }).id;
    const rows = await fresh();
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      action: 'user.create',
      actor_kind: 'service_role',
      target_type: 'auth_user',
      target_id: id,
      request_id: created.headers.get('x-request-id'),
    });
    const refused = await auth(t(), '/admin/users', { key: 'service', body: { email: 'api@audit.test', password: 'correct horse battery' } });
    expect(refused.status).toBe(422);
    expect(await fresh(), 'a refused creation leaves no row').toHaveLength(0);
    expect((await auth(t(), `/admin/users/${id}`, { key: 'service', method: 'DELETE', body: {} })).status).toBe(200);
    expect(await fresh()).toMatchObject([{ action: 'user.delete', actor_kind: 'service_role', target_id: id }]);
  });
});

describe('a user ending an OAuth grant (DELETE /auth/v1/user/oauth/grants)', () => {
  it('one row: the user as actor, the client by id, the request id; an unknown grant leaves none', async () => {
    const flow = await rawFlow(t(), 'author@acme.test', 'correct horse battery');
    const session = (await (
      await auth(t(), '/token?grant_type=password', { method: 'POST', body: { email: 'author@acme.test', password: 'correct horse battery' } })
    ).json()) as { access_token: string };
    await fresh();
    const revoke = (clientId: string) => auth(t(), `/user/oauth/grants?client_id=${clientId}`, { method: 'DELETE', bearer: session.access_token });
    const res = await revoke(flow.clientId);
    expect(res.status).toBeLessThan(300);
    const me = await svcIdOf('author@acme.test');
    expect(await fresh()).toMatchObject([
      {
        action: 'oauth.grant.revoke',
        actor_kind: 'user',
        actor_id: me,
        tenant_id: NIL,
        target_type: 'user',
        target_id: me,
        detail: { client_id: flow.clientId },
        request_id: res.headers.get('x-request-id'),
      },
    ]);
    expect((await revoke(flow.clientId)).status).toBe(404);
    expect(await fresh()).toEqual([]);
  });
});

describe('authors’ acts through MCP: the author is the actor (set by the database from the claims)', () => {
  it('override_verdict, resolve_review (uphold an appeal), set_grading: one row each; refusals none', async () => {
    const tree = await importTree(x.author, 'acme', 1, 1, 2);
    const activity = tree.units[0].lessons[0].activities[0];
    const learner = await learnerSession(x.w, 'aud-learner');
    const graded = await submit(x.w, learner, activity.id, 'My audited note.');
    expect(graded.status).toBe(200);
    await fresh();
    const me = await svcIdOf('author@acme.test');
    const acme = await tenantIdOf('acme');

    expect(await fails(x.outsider, 'override_verdict', { result_id: graded.body.result_id, passed: false, reason: 'not mine' })).toMatch(/not found/);
    expect(await fresh(), 'a refused override leaves no row').toHaveLength(0);
    await ok(x.author, 'override_verdict', { result_id: graded.body.result_id, passed: false, score: 30, reason: 'Copied.' });
    const [override] = await fresh();
    expect(override).toMatchObject({
      action: 'verdict.override',
      actor_kind: 'user',
      actor_id: me,
      tenant_id: acme,
      target_type: 'activity_result',
      target_id: graded.body.result_id,
    });
    expect(override!.request_id).toEqual(expect.any(String));
    expect(JSON.stringify(override)).not.toContain('Copied.');

    const appeal = await post(
      t(),
      `/v1/embed/results/${graded.body.result_id}/appeal`,
      { message: 'Please look again.' },
      { authorization: `Bearer ${learner}` },
    );
    expect(appeal.status).toBe(201);
    expect(await fresh(), 'filing an appeal is the learner’s, not a privileged act').toHaveLength(0);
    await ok(x.author, 'resolve_review', { review_id: appeal.body.id, decision: 'uphold', reason: 'The override stands.' });
    expect(await fresh()).toMatchObject([{ action: 'review.uphold', actor_kind: 'user', actor_id: me, target_type: 'review', target_id: appeal.body.id }]);

    await ok(x.author, 'set_grading', { activity_id: activity.id, mode: 'live', force: true, reason: 'exam week' });
    expect(await fresh()).toMatchObject([
      { action: 'grading.mode.set', actor_kind: 'user', actor_id: me, target_type: 'activity', target_id: activity.id, detail: { mode: 'live', forced: true } },
    ]);
    expect(await fails(x.outsider, 'set_grading', { activity_id: activity.id, mode: 'gated', reason: 'not mine' })).toMatch(/not found/);
    expect(await fresh()).toHaveLength(0);
  });

  it('svc review reject (admin): the override is audited once, actor cli', async () => {
    const tree = await importTree(x.author, 'acme', 1, 1, 1);
    const learner = await learnerSession(x.w, 'aud-learner-2');
    const graded = await submit(x.w, learner, tree.units[0].lessons[0].activities[0].id, 'Another note.');
    const appeal = await post(t(), `/v1/embed/results/${graded.body.result_id}/appeal`, { message: 'Again please.' }, { authorization: `Bearer ${learner}` });
    expect(appeal.status).toBe(201);
    await fresh();
    await t().op('review.reject', { result_id: graded.body.result_id });
    expect(await fresh()).toMatchObject([{ action: 'verdict.override', actor_kind: 'cli', actor_id: null, target_id: graded.body.result_id }]);
  });
});

describe('append-only', () => {
  const attempts = ["update audit_events set action = 'tampered'", 'delete from audit_events', 'truncate audit_events'];
  it('the owner (the CLI’s role) cannot update, delete or truncate a row', async () => {
    const before = await t().db.query('select * from audit_events order by at, id');
    expect(before.length).toBeGreaterThan(0);
    for (const sql of attempts) await expect(t().db.query(sql), sql).rejects.toThrow(/append-only|permission denied/);
    expect(await t().db.query('select * from audit_events order by at, id')).toEqual(before);
  });

  it('authenticated, anon and svc_results can neither write nor rewrite rows directly', async () => {
    const count = async () => (await t().db.query<{ n: number }>('select count(*)::int as n from audit_events'))[0]!.n;
    const n = await count();
    for (const role of ['authenticated', 'anon', 'svc_results']) {
      for (const sql of [
        ...attempts,
        `insert into audit_events (tenant_id, actor_kind, action, target_type, target_id) values ('${NIL}', 'cli', 'forged', 'tenant', 'x')`,
      ]) {
        await expect(
          t().db.transaction(async (tx) => {
            await tx.query(`set local role ${role}`);
            await tx.query(sql);
          }),
          `${role}: ${sql}`,
        ).rejects.toThrow(/permission denied|append-only/);
      }
    }
    expect(await count()).toBe(n);
  });
});

describe('svc.audit as an author (authenticated, RLS on)', () => {
  it('appends only to a tenant the caller is an author of: another tenant, or none, is refused (42501), nothing stored', async () => {
    // author@globex.test is an author of globex only
    const token = await signIn(t(), 'author@globex.test', 'correct horse battery');
    const claims = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8')) as Record<string, unknown>;
    const [acme, globex] = [await tenantIdOf('acme'), await tenantIdOf('globex')];
    const append = (tenant: string | null) =>
      asUser(t().db, claims, (tx) => tx.query(`select svc.audit($1, 'cli', null, 'grading.mode.set', 'activity', 'forged', null, '{}'::jsonb)`, [tenant]));
    await fresh();
    for (const tenant of [acme, null]) await expect(append(tenant), String(tenant)).rejects.toMatchObject({ code: '42501' });
    expect(await fresh()).toEqual([]);
    await append(globex);
    expect(await fresh()).toMatchObject([{ tenant_id: globex, actor_kind: 'user', action: 'grading.mode.set', target_id: 'forged' }]);
  });
});

describe('GET /v1/audit-events', () => {
  it('the key’s tenant only, oldest first, in keyset pages; filters by action and since', async () => {
    const acme = await tenantIdOf('acme');
    const all = await t().db.query<{ id: string }>('select id from audit_events where tenant_id = $1 order by at, id', [acme]);
    expect(all.length).toBeGreaterThan(5);
    const walked = await walk(t(), '/v1/audit-events', x.apiKey, 2);
    expect(walked.ids).toEqual(all.map((r) => r.id));
    const first = walked.pages[0].data[0];
    expect(Object.keys(first).sort()).toEqual(['action', 'actor', 'at', 'detail', 'id', 'request_id', 'target', 'tenant_id']);
    expect(first.tenant_id).toBe(acme);
    expect(walked.pages.flatMap((p: any) => p.data).every((e: any) => e.tenant_id === acme)).toBe(true);

    const grants = await getJson(t(), '/v1/audit-events?action=author.grant', x.apiKey);
    expect(grants.data.length).toBeGreaterThan(0);
    expect(grants.data.every((e: any) => e.action === 'author.grant')).toBe(true);
    const last = walked.pages.at(-1).data.at(-1);
    const since = await getJson(t(), `/v1/audit-events?since=${encodeURIComponent(last.at)}`, x.apiKey);
    expect(since.data.map((e: any) => e.id)).toContain(last.id);
    expect(since.data.every((e: any) => e.at >= last.at)).toBe(true);
  });

  it('another tenant’s events are not listed; bad filters are 400 naming the parameter', async () => {
    const globexKey = (await t().op('key.create', { tenant: 'globex', name: 'g' })).key as string;
    const globex = await tenantIdOf('globex');
    const page = await getJson(t(), '/v1/audit-events?limit=200', globexKey);
    expect(page.data.length).toBeGreaterThan(0);
    expect(page.data.every((e: any) => e.tenant_id === globex)).toBe(true);
    expect(page.data.some((e: any) => e.action === 'verdict.override')).toBe(false);
    for (const [query, name] of [
      ['since=yesterday', 'since'],
      ['action=Bad%20Name', 'action'],
      ['updated_since=2026-01-01T00:00:00Z', 'updated_since'],
    ]) {
      const res = await fetch(`${t().url}/v1/audit-events?${query}`, { headers: { authorization: `Bearer ${globexKey}` } });
      expect(await expectError(res, 400, 'invalid_request')).toContain(name);
    }
  });
});
