/**
 * The real @supabase/supabase-js client against the identity platform, unchanged: sign-in,
 * user, refresh, update, sign-out in each scope, the admin API, and auto-refresh with a short
 * token lifetime. Whether a session still works is checked on /auth/v1/user and on /mcp.
 */
import { createClient, type SupabaseClient } from '@supabase/supabase-js';
import { beforeAll, describe, expect, it } from 'vitest';
import { sha256Hex } from '../../src/lib/hash.ts';
import { startApp, useApp } from '../helpers/harness.ts';
import { auth, mcpInitialize } from './helpers.ts';

const t = useApp();
beforeAll(async () => {
  await t.op('user.create', { email: 'Ada@Example.com', password: 'correct horse battery' });
});

const client = (key = t.deps.config.anonKey, app = t) => createClient(app.url, key, { auth: { persistSession: false, autoRefreshToken: false } });

/** Does this access token still open /auth/v1/user and /mcp? */
async function works(token: string, app = t): Promise<{ user: number; mcp: number }> {
  const user = await auth(app, '/user', { bearer: token });
  const mcp = await mcpInitialize(app, token);
  return { user: user.status, mcp: mcp.status };
}
const LIVE = { user: 200, mcp: 200 };
const ENDED = { user: 403, mcp: 401 };

async function signedIn(email: string, password: string): Promise<{ supabase: SupabaseClient; token: string }> {
  const supabase = client();
  const { data, error } = await supabase.auth.signInWithPassword({ email, password });
  expect(error).toBeNull();
  return { supabase, token: data.session!.access_token };
}

describe('supabase-js against /auth/v1', () => {
  it('signs in with a password (odd case and spaces), reads the user, refreshes and signs out', async () => {
    const supabase = client();
    const { data, error } = await supabase.auth.signInWithPassword({ email: ' ada@example.COM ', password: 'correct horse battery' });
    expect(error).toBeNull();
    expect(data.session).toMatchObject({ token_type: 'bearer', expires_in: 3600 });
    expect(data.session!.expires_at).toBeGreaterThan(Date.now() / 1000 + 3500);
    expect(data.user?.email).toBe('ada@example.com');
    expect(data.user?.identities?.[0]).toMatchObject({ provider: 'email', user_id: data.user!.id });

    const me = await supabase.auth.getUser();
    expect(me.error).toBeNull();
    expect(me.data.user?.id).toBe(data.user?.id);

    const refreshed = await supabase.auth.refreshSession();
    expect(refreshed.error).toBeNull();
    expect(refreshed.data.session?.refresh_token).not.toBe(data.session?.refresh_token);
    expect(await works(refreshed.data.session!.access_token)).toEqual(LIVE);

    const oldAccess = refreshed.data.session!.access_token;
    expect((await supabase.auth.signOut()).error).toBeNull();
    const after = await auth(t, '/user', { bearer: oldAccess });
    expect(after.status).toBe(403);
    expect(after.headers.get('x-sb-error-code')).toBe('session_not_found');
    expect(await works(oldAccess)).toEqual(ENDED);
  });

  it('gives the same answer for an unknown email and a wrong password', async () => {
    const supabase = client();
    const wrong = await supabase.auth.signInWithPassword({ email: 'ada@example.com', password: 'wrong password!' });
    const unknown = await supabase.auth.signInWithPassword({ email: 'nobody@example.com', password: 'wrong password!' });
    expect(wrong.error?.code).toBe('invalid_credentials');
    expect(unknown.error?.code).toBe('invalid_credentials');
    expect(wrong.error?.status).toBe(400);
    expect(wrong.error?.message).toBe('Invalid login credentials');
    expect(wrong.error?.message).toBe(unknown.error?.message);
  });

  it('signOut ends sessions by scope: others, local, global', async () => {
    const email = 'scopes@example.com';
    await t.op('user.create', { email, password: 'scope password' });
    const [a, b, c] = [await signedIn(email, 'scope password'), await signedIn(email, 'scope password'), await signedIn(email, 'scope password')];

    expect((await a.supabase.auth.signOut({ scope: 'others' })).error).toBeNull();
    expect(await works(a.token)).toEqual(LIVE);
    expect(await works(b.token)).toEqual(ENDED);
    expect(await works(c.token)).toEqual(ENDED);

    expect((await a.supabase.auth.signOut({ scope: 'local' })).error).toBeNull();
    expect(await works(a.token)).toEqual(ENDED);

    const [d, e] = [await signedIn(email, 'scope password'), await signedIn(email, 'scope password')];
    expect(await works(e.token)).toEqual(LIVE);
    expect((await d.supabase.auth.signOut({ scope: 'global' })).error).toBeNull();
    expect(await works(d.token)).toEqual(ENDED);
    expect(await works(e.token)).toEqual(ENDED);
  });

  it('updateUser: metadata, then a new password that ends the other sessions', async () => {
    const email = 'update@example.com';
    await t.op('user.create', { email, password: 'first password' });
    const me = await signedIn(email, 'first password');
    const other = await signedIn(email, 'first password');

    const named = await me.supabase.auth.updateUser({ data: { name: 'Ada', team: 'x' } });
    expect(named.error).toBeNull();
    expect(named.data.user?.user_metadata).toEqual({ name: 'Ada', team: 'x' });
    const unset = await me.supabase.auth.updateUser({ data: { team: null } });
    expect(unset.data.user?.user_metadata).toEqual({ name: 'Ada' });

    const weak = await me.supabase.auth.updateUser({ password: 'short' });
    expect(weak.error?.code).toBe('weak_password');
    expect(weak.error?.name).toBe('AuthWeakPasswordError');
    expect((weak.error as unknown as { reasons: string[] }).reasons).toEqual(['length']);
    const same = await me.supabase.auth.updateUser({ password: 'first password' });
    expect(same.error?.code).toBe('same_password');
    expect(await works(other.token)).toEqual(LIVE);

    const changed = await me.supabase.auth.updateUser({ password: 'second password' });
    expect(changed.error).toBeNull();
    expect(await works(me.token)).toEqual(LIVE);
    expect(await works(other.token)).toEqual(ENDED);
    expect((await client().auth.signInWithPassword({ email, password: 'first password' })).error?.code).toBe('invalid_credentials');
    expect((await client().auth.signInWithPassword({ email, password: 'second password' })).error).toBeNull();

    const appMeta = await auth(t, '/user', { method: 'PUT', bearer: me.token, body: { app_metadata: { role: 'admin' } } });
    expect(appMeta.status).toBe(403);
    expect(await appMeta.json()).toEqual({ code: 'not_admin', message: 'Updating app_metadata requires admin privileges' });
  });

  it('admin API with the service-role key: createUser, listUsers, getUserById, ban, deleteUser', async () => {
    const adminClient = client(t.deps.config.serviceRoleKey).auth.admin;
    const created = [];
    for (const n of [1, 2, 3]) {
      const { data, error } = await adminClient.createUser({
        email: `Staff${n}@Example.com`,
        password: `staff password ${n}`,
        email_confirm: true,
        user_metadata: { n },
        app_metadata: { team: 'staff' },
      });
      expect(error).toBeNull();
      created.push(data.user!);
    }
    expect(created[0]).toMatchObject({
      email: 'staff1@example.com',
      user_metadata: { n: 1 },
      app_metadata: { provider: 'email', providers: ['email'], team: 'staff' },
    });
    expect(created[0]!.email_confirmed_at).toBeTruthy();

    const dup = await adminClient.createUser({ email: 'staff1@example.com', password: 'another password' });
    expect(dup.error).toMatchObject({ status: 422, code: 'email_exists' });

    const total = (await t.db.query<{ n: number }>('select count(*)::int as n from auth.users'))[0]!.n;
    const page1 = await adminClient.listUsers({ page: 1, perPage: 2 });
    expect(page1.error).toBeNull();
    expect(page1.data.users.map((u) => u.email)).toEqual(['staff3@example.com', 'staff2@example.com']);
    expect(page1.data).toMatchObject({ aud: 'authenticated', total, nextPage: 2, lastPage: Math.ceil(total / 2) });
    const page2 = await adminClient.listUsers({ page: 2, perPage: 2 });
    expect(page2.data.users[0]!.email).toBe('staff1@example.com');

    const got = await adminClient.getUserById(created[1]!.id);
    expect(got.data.user?.email).toBe('staff2@example.com');

    const session = await signedIn('staff2@example.com', 'staff password 2');
    const banned = await adminClient.updateUserById(created[1]!.id, { ban_duration: '1h' });
    expect(banned.error).toBeNull();
    expect(new Date((banned.data.user as { banned_until?: string }).banned_until!).getTime()).toBeGreaterThan(Date.now() + 3_500_000);
    expect(await works(session.token)).toEqual(ENDED);
    const refused = await client().auth.signInWithPassword({ email: 'staff2@example.com', password: 'staff password 2' });
    expect(refused.error).toMatchObject({ status: 400, code: 'user_banned' });
    await adminClient.updateUserById(created[1]!.id, { ban_duration: 'none' });
    expect((await client().auth.signInWithPassword({ email: 'staff2@example.com', password: 'staff password 2' })).error).toBeNull();

    const doomed = await signedIn('staff3@example.com', 'staff password 3');
    expect((await adminClient.deleteUser(created[2]!.id)).error).toBeNull();
    expect((await adminClient.getUserById(created[2]!.id)).error).toMatchObject({ status: 404, code: 'user_not_found' });
    expect(await works(doomed.token)).toEqual(ENDED);

    const anonAdmin = await client().auth.admin.listUsers();
    expect(anonAdmin.error).toMatchObject({ status: 403, code: 'not_admin' });
  });
});

describe('auto-refresh with a short token lifetime', () => {
  // 30 s is the configuration minimum; auth-js refreshes a token that expires within its
  // margin (3 ticks × 30 s), so the first tick after sign-in refreshes at once.
  const short = useApp(() => startApp({ accessTokenTtl: 30 }));
  beforeAll(async () => {
    await short.op('user.create', { email: 'tabs@example.com', password: 'auto refresh me' });
  });

  it('the client refreshes on its own, uses the new token, and the old refresh token is spent', async () => {
    const supabase = createClient(short.url, short.deps.config.anonKey, { auth: { persistSession: false, autoRefreshToken: true } });
    try {
      const { data, error } = await supabase.auth.signInWithPassword({ email: 'tabs@example.com', password: 'auto refresh me' });
      expect(error).toBeNull();
      expect(data.session!.expires_in).toBe(30);
      const refreshed = new Promise<{ access_token: string; refresh_token: string }>((resolve) => {
        const { data: sub } = supabase.auth.onAuthStateChange((event, session) => {
          if (event === 'TOKEN_REFRESHED' && session) {
            sub.subscription.unsubscribe();
            resolve(session);
          }
        });
      });
      await supabase.auth.startAutoRefresh(); // the ticker's first tick runs at once
      const next = await refreshed;
      expect(next.refresh_token).not.toBe(data.session!.refresh_token);
      expect(await works(next.access_token, short)).toEqual(LIVE);

      const [spent] = await short.db.query<{ revoked: boolean }>('select revoked from auth.refresh_tokens where token_hash = $1', [
        sha256Hex(data.session!.refresh_token),
      ]);
      expect(spent!.revoked).toBe(true);
      // The client keeps going on its own: getUser() (via getSession) uses, or refreshes, the session.
      const me = await supabase.auth.getUser();
      expect(me.data.user?.email).toBe('tabs@example.com');
      const [live] = await short.db.query<{ n: number }>('select count(*)::int as n from auth.sessions');
      expect(live!.n).toBe(1);
    } finally {
      await supabase.auth.stopAutoRefresh();
    }
  });
});
