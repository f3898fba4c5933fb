/**
 * `/auth/v1/admin/users` over raw HTTP (GoTrue's shapes, headers and codes) and `svc user …`,
 * which runs the same code: page and keyset listing, get, update (email, metadata, ban), delete,
 * and who may call them. On PostgreSQL the real `svc` process is run too.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { AdminError } from '../../src/admin/ops.ts';
import { backend, useApp, useFreshDb } from '../helpers/harness.ts';
import { admin, auth, identityRows, signIn } from './helpers.ts';

const ids: Record<string, string> = {};
const t = useApp();
beforeAll(async () => {
  for (const n of [1, 2, 3, 4, 5]) ids[`u${n}`] = (await t.op('user.create', { email: `u${n}@list.test`, password: `list password ${n}` })).id;
});

const json = async (res: Response) => (await res.json()) as Record<string, any>;

describe('who may call the admin endpoints', () => {
  it('only the service-role key; the anon key or a user token is 403 not_admin', async () => {
    const anon = await auth(t, '/admin/users');
    expect(anon.status).toBe(403);
    expect(await anon.json()).toEqual({ code: 'not_admin', message: 'User not allowed' });
    const s = await signIn(t, 'u1@list.test', 'list password 1');
    const asUser = await auth(t, '/admin/users', { key: 'service', bearer: s.access_token });
    expect(asUser.status).toBe(403);
    const noKey = await auth(t, `/admin/users/${ids.u1}`, { method: 'DELETE', key: 'none', bearer: t.deps.config.serviceRoleKey });
    expect(noKey.status).toBe(401);
    expect((await admin(t, '/admin/users')).status).toBe(200);
    expect((await auth(t, '/admin/users', { key: 'service' })).status).toBe(200); // apikey alone, as the gateway allows
  });
});

describe('GET /admin/users', () => {
  it('page mode: newest first, X-Total-Count and Link in GoTrue’s form', async () => {
    const res = await admin(t, '/admin/users?page=2&per_page=2');
    expect(res.status).toBe(200);
    const body = await json(res);
    expect(Object.keys(body).sort()).toEqual(['aud', 'users']);
    expect(body.aud).toBe('authenticated');
    expect(body.users.map((u: { email: string }) => u.email)).toEqual(['u3@list.test', 'u2@list.test']);
    expect(res.headers.get('x-total-count')).toBe('5');
    expect(res.headers.get('link')).toBe('</auth/v1/admin/users?page=3&per_page=2>; rel="next", </auth/v1/admin/users?page=3&per_page=2>; rel="last"');
    const last = await admin(t, '/admin/users?page=3&per_page=2');
    expect(last.headers.get('link')).toBe('</auth/v1/admin/users?page=3&per_page=2>; rel="last"');
    expect((await json(last)).users).toHaveLength(1);
    const filtered = await json(await admin(t, '/admin/users?filter=U4'));
    expect(filtered.users.map((u: { email: string }) => u.email)).toEqual(['u4@list.test']);
  });

  it('keyset mode: cursors walk every user once, stable while users are added', async () => {
    const seen: string[] = [];
    let res = await admin(t, '/admin/users?limit=2');
    let body = await json(res);
    expect(body.pagination).toMatchObject({ has_more: true, next_cursor: expect.any(String) });
    expect(res.headers.get('link')).toContain(`cursor=${body.pagination.next_cursor}`);
    seen.push(...body.users.map((u: { email: string }) => u.email));
    await t.op('user.create', { email: 'newcomer@list.test', password: 'newcomer password' });
    while (body.pagination.has_more) {
      res = await admin(t, `/admin/users?limit=2&cursor=${body.pagination.next_cursor}`);
      body = await json(res);
      seen.push(...body.users.map((u: { email: string }) => u.email));
    }
    expect(body.pagination).toEqual({ has_more: false });
    expect(seen).toEqual(['u5@list.test', 'u4@list.test', 'u3@list.test', 'u2@list.test', 'u1@list.test']);
    await t.op('user.delete', { user: 'newcomer@list.test' });
  });

  it('bad pagination parameters are 400 validation_failed', async () => {
    for (const q of ['page=0', 'per_page=0', 'page=abc', 'per_page=-1', 'cursor=garbage', `cursor=${Buffer.from('["x","y"]').toString('base64url')}`]) {
      const res = await admin(t, `/admin/users?${q}`);
      expect(res.status, q).toBe(400);
      const body = await json(res);
      expect(body.code, q).toBe('validation_failed');
      expect(body.message, q).toMatch(/^Bad Pagination Parameters/);
    }
    const huge = await admin(t, '/admin/users?per_page=5000');
    expect(huge.headers.get('link')).toContain('per_page=1000');
  });
});

describe('GET, PUT, DELETE /admin/users/{id}', () => {
  it('get: the user; a malformed or unknown id is 404', async () => {
    expect((await json(await admin(t, `/admin/users/${ids.u2}`))).email).toBe('u2@list.test');
    const malformed = await admin(t, '/admin/users/42');
    expect(malformed.status).toBe(404);
    expect(await malformed.json()).toEqual({ code: 'validation_failed', message: 'user_id must be an UUID' });
    const unknown = await admin(t, '/admin/users/00000000-0000-7000-8000-000000000000');
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ code: 'user_not_found', message: 'User not found' });
  });

  it('put: email (normalised, unique), metadata merged, ban_duration', async () => {
    const res = await admin(t, `/admin/users/${ids.u3}`, {
      method: 'PUT',
      body: { email: ' New.U3@List.TEST ', user_metadata: { a: 1, b: 2 }, app_metadata: { plan: 'pro' } },
    });
    expect(res.status).toBe(200);
    const user = await json(res);
    expect(user).toMatchObject({ email: 'new.u3@list.test', user_metadata: { a: 1, b: 2 }, app_metadata: { provider: 'email', plan: 'pro' } });
    expect(user.identities[0].email).toBe('new.u3@list.test');
    await signIn(t, 'NEW.u3@list.test', 'list password 3');
    const merged = await json(await admin(t, `/admin/users/${ids.u3}`, { method: 'PUT', body: { user_metadata: { a: null, c: 3 } } }));
    expect(merged.user_metadata).toEqual({ b: 2, c: 3 });

    const taken = await admin(t, `/admin/users/${ids.u3}`, { method: 'PUT', body: { email: 'u4@list.test' } });
    expect(taken.status).toBe(422);
    expect((await json(taken)).code).toBe('email_exists');

    const badBan = await admin(t, `/admin/users/${ids.u3}`, { method: 'PUT', body: { ban_duration: '3 days' } });
    expect(badBan.status).toBe(400);
    expect((await json(badBan)).message).toMatch(/^invalid format for ban duration/);
    const banned = await json(await admin(t, `/admin/users/${ids.u3}`, { method: 'PUT', body: { ban_duration: '1h30m' } }));
    const until = new Date(banned.banned_until).getTime() - Date.now();
    expect(until).toBeGreaterThan(89 * 60_000);
    expect(until).toBeLessThan(91 * 60_000);
    const lifted = await json(await admin(t, `/admin/users/${ids.u3}`, { method: 'PUT', body: { ban_duration: 'none' } }));
    expect(lifted.banned_until).toBeUndefined();
  });

  it('delete: {} then gone with its sessions; soft delete is refused', async () => {
    const s = await signIn(t, 'u5@list.test', 'list password 5');
    const soft = await admin(t, `/admin/users/${ids.u5}`, { method: 'DELETE', body: { should_soft_delete: true } });
    expect(soft.status).toBe(400);
    const gone = await admin(t, `/admin/users/${ids.u5}`, { method: 'DELETE', body: { should_soft_delete: false } });
    expect(gone.status).toBe(200);
    expect(await gone.json()).toEqual({});
    expect((await admin(t, `/admin/users/${ids.u5}`)).status).toBe(404);
    expect((await auth(t, '/user', { bearer: s.access_token })).status).toBe(403);
    const [left] = await t.db.query<{ n: number }>('select count(*)::int as n from public.users where auth_user_id = $1', [ids.u5]);
    expect(left!.n).toBe(0);
  });
});

describe('svc user … (the admin operations the CLI runs)', () => {
  it('list, get, update, ban, delete by email or id; refusals are AdminErrors', async () => {
    const page = await t.op('user.list', { page: 1, per_page: 2 });
    expect(page).toMatchObject({ aud: 'authenticated', page: 1, per_page: 2, total: expect.any(Number) });
    expect(page.users).toHaveLength(2);
    expect((await t.op('user.get', { user: ids.u1 })).email).toBe('u1@list.test');
    expect((await t.op('user.get', { user: ' U1@LIST.test' })).id).toBe(ids.u1);
    const updated = await t.op('user.update', { user: 'u1@list.test', user_metadata: { via: 'cli' } });
    expect(updated.user_metadata).toEqual({ via: 'cli' });
    expect((await t.op('user.ban', { user: 'u1@list.test', duration: '24h' })).banned_until).toBeTruthy();
    expect((await t.op('user.ban', { user: 'u1@list.test', duration: 'none' })).banned_until).toBeUndefined();

    await expect(t.op('user.get', { user: 'nobody@list.test' })).rejects.toMatchObject({ code: 'not_found' });
    await expect(t.op('user.ban', { user: 'u1@list.test', duration: 'forever' })).rejects.toBeInstanceOf(AdminError);
    await expect(t.op('user.update', { user: 'u1@list.test', password: 'short' })).rejects.toMatchObject({ code: 'invalid' });
    await expect(t.op('user.update', { user: 'u1@list.test', email: 'u2@list.test' })).rejects.toMatchObject({ code: 'conflict' });
    const before = await identityRows(t);
    await t.op('user.create', { email: 'temp@list.test', password: 'temporary password' });
    await t.op('user.delete', { user: 'temp@list.test' });
    expect(await identityRows(t)).toEqual(before);
  });
});

describe.runIf(backend === 'postgres')('the real svc process (DATABASE_URL)', () => {
  const root = new URL('../../', import.meta.url).pathname;
  const db = useFreshDb();
  const svc = async (...args: string[]) => {
    try {
      const { stdout } = await promisify(execFile)(process.execPath, [join(root, 'bin/svc.js'), ...args], {
        env: { PATH: process.env.PATH, LOG_LEVEL: 'silent', DATABASE_URL: db.url! },
        cwd: root,
      });
      return { code: 0, out: stdout };
    } catch (err) {
      const e = err as { code: number; stdout: string; stderr: string };
      return { code: e.code, out: e.stdout + e.stderr };
    }
  };

  it('creates, lists, bans and deletes users', async () => {
    expect((await svc('user', 'create', '--email', 'Cli@Example.com', '--password', 'cli password 1')).code).toBe(0);
    const list = JSON.parse((await svc('user', 'list', '--json')).out);
    expect(list.users.map((u: { email: string }) => u.email)).toEqual(['cli@example.com']);
    const banned = JSON.parse((await svc('user', 'ban', 'cli@example.com', '12h', '--json')).out);
    expect(banned.banned_until).toBeTruthy();
    const bad = await svc('user', 'ban', 'cli@example.com', 'soon');
    expect(bad.code).toBe(1);
    expect(bad.out).toMatch(/invalid format for ban duration/);
    expect((await svc('user', 'delete', 'cli@example.com')).out).toMatch(/deleted user cli@example.com/);
    expect((await svc('user', 'get', 'cli@example.com')).code).toBe(1);
  });
});
