/** The real @supabase/supabase-js client against the identity platform. */
import { createClient } from '@supabase/supabase-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestApp } from '../helpers/harness.ts';

let t: TestApp;
beforeAll(async () => {
  t = await startApp();
  await t.op('user.create', { email: 'Ada@Example.com', password: 'correct horse battery' });
});
afterAll(() => t.close());

const client = () =>
  createClient(t.url, t.deps.config.anonKey, { auth: { persistSession: false, autoRefreshToken: false } });

describe('supabase-js against /auth/v1', () => {
  it('signs in with a password, reads the user, refreshes and signs out', async () => {
    const supabase = client();
    const { data, error } = await supabase.auth.signInWithPassword({ email: ' ada@example.COM ', password: 'correct horse battery' });
    expect(error).toBeNull();
    expect(data.session?.token_type).toBe('bearer');
    expect(data.user?.email).toBe('ada@example.com');

    const me = await supabase.auth.getUser();
    expect(me.error).toBeNull();
    expect(me.data.user?.id).toBe(data.user?.id);

    const refreshed = await supabase.auth.refreshSession();
    expect(refreshed.error).toBeNull();
    expect(refreshed.data.session?.refresh_token).not.toBe(data.session?.refresh_token);

    const oldAccess = refreshed.data.session!.access_token;
    expect((await supabase.auth.signOut()).error).toBeNull();
    const after = await fetch(`${t.url}/auth/v1/user`, {
      headers: { apikey: t.deps.config.anonKey, authorization: `Bearer ${oldAccess}` },
    });
    expect(after.status).toBe(403);
    expect(after.headers.get('x-sb-error-code')).toBe('session_not_found');
  });

  it('gives the same answer for an unknown email and a wrong password', async () => {
    const supabase = client();
    const wrong = await supabase.auth.signInWithPassword({ email: 'ada@example.com', password: 'wrong password!' });
    const unknown = await supabase.auth.signInWithPassword({ email: 'nobody@example.com', password: 'wrong password!' });
    expect(wrong.error?.code).toBe('invalid_credentials');
    expect(unknown.error?.code).toBe('invalid_credentials');
    expect(wrong.error?.message).toBe(unknown.error?.message);
  });

  it('refuses requests without the apikey header or with a wrong one', async () => {
    const none = await fetch(`${t.url}/auth/v1/token?grant_type=password`, { method: 'POST', body: '{}' });
    expect(none.status).toBe(401);
    expect(await none.json()).toEqual({ message: 'No API key found in request' });
    const wrong = await fetch(`${t.url}/auth/v1/token?grant_type=password`, {
      method: 'POST',
      headers: { apikey: 'sb_publishable_nope', 'content-type': 'application/json' },
      body: '{}',
    });
    expect(wrong.status).toBe(401);
    expect(await wrong.json()).toEqual({ message: 'Invalid API key' });
  });
});
