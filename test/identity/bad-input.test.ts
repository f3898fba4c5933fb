/**
 * Bad input to /auth/v1: bodies that are not JSON, huge bodies, a missing or unknown
 * grant_type, emails with odd case or whitespace, 10,000-character passwords, wrong types.
 * Each gets a 4xx in GoTrue's shape (exact keys, both API versions) and writes nothing.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { useApp } from '../helpers/harness.ts';
import { admin, auth, identityRows, signIn, type CallOptions } from './helpers.ts';

let session: Record<string, any>;
const t = useApp();
beforeAll(async () => {
  await t.op('user.create', { email: 'ada@example.com', password: 'correct horse battery' });
  session = await signIn(t, 'ada@example.com', 'correct horse battery');
});

/** Call, expect `status` and `code` in the 2024 shape with exactly {code, message}, and no rows written. */
async function refused(path: string, o: CallOptions, status: number, code: string) {
  const before = await identityRows(t);
  const res = await auth(t, path, o);
  const body = await res.json();
  expect(res.status, `${path} ${JSON.stringify(body)}`).toBe(status);
  expect(Object.keys(body).sort()).toEqual(['code', 'message']);
  expect(body.code).toBe(code);
  expect(res.headers.get('x-sb-error-code')).toBe(code);
  expect(await identityRows(t)).toEqual(before);
  return body.message as string;
}

const password = (body: unknown, o: CallOptions = {}) => ({ method: 'POST', body, ...o });

describe('bodies', () => {
  it('not JSON, not an object, the wrong content type → 400 bad_json / 415', async () => {
    await refused('/token?grant_type=password', password('{"email": '), 400, 'bad_json');
    await refused('/token?grant_type=password', password('[1, 2]'), 400, 'bad_json');
    await refused('/token?grant_type=password', password('"just a string"'), 400, 'bad_json');
    await refused('/admin/users', { ...password('{nope'), key: 'service', bearer: t.deps.config.serviceRoleKey }, 400, 'bad_json');
    await refused(
      '/token?grant_type=password',
      { body: 'email=ada@example.com&password=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } },
      415,
      'validation_failed',
    );
  });

  it('huge bodies → 413, before anything is parsed or written', async () => {
    const big = { email: 'ada@example.com', password: 'correct horse battery', padding: 'x'.repeat(100_000) };
    await refused('/token?grant_type=password', password(big), 413, 'validation_failed');
    const hugeMeta = { email: 'big@example.com', password: 'big password', user_metadata: { blob: 'x'.repeat(2_000_000) } };
    await refused('/admin/users', { body: hugeMeta, key: 'service', bearer: t.deps.config.serviceRoleKey }, 413, 'validation_failed');
  });

  it('wrong types → 400 validation_failed naming the field', async () => {
    expect(await refused('/token?grant_type=password', password({ email: 42, password: 'x' }), 400, 'validation_failed')).toMatch(/^email/);
    expect(
      await refused(
        '/admin/users',
        { body: { email: 'typed@example.com', password: 'typed password', user_metadata: [1] }, key: 'service', bearer: t.deps.config.serviceRoleKey },
        400,
        'validation_failed',
      ),
    ).toMatch(/^user_metadata/);
    await refused('/user', { method: 'PUT', bearer: session.access_token, body: { data: 'not an object' } }, 400, 'validation_failed');
  });
});

describe('grants', () => {
  it('a missing or unknown grant_type → 400 invalid_credentials "unsupported_grant_type" (GoTrue)', async () => {
    for (const q of ['', '?grant_type=', '?grant_type=client_credentials', '?grant_type=PASSWORD']) {
      expect(await refused(`/token${q}`, password({ email: 'ada@example.com', password: 'correct horse battery' }), 400, 'invalid_credentials')).toBe(
        'unsupported_grant_type',
      );
    }
  });

  it('missing fields', async () => {
    expect(await refused('/token?grant_type=password', password({ password: 'correct horse battery' }), 400, 'validation_failed')).toBe(
      'missing email or phone',
    );
    expect(await refused('/token?grant_type=password', password(undefined), 400, 'validation_failed')).toBe('missing email or phone');
    await refused('/token?grant_type=password', password({ email: 'ada@example.com' }), 400, 'invalid_credentials');
    await refused('/token?grant_type=password', password({ email: 'ada@example.com', phone: '+15555550100', password: 'x' }), 400, 'validation_failed');
    expect(await refused('/token?grant_type=refresh_token', password({}), 400, 'validation_failed')).toBe('refresh_token required');
    await refused('/token?grant_type=refresh_token', password({ refresh_token: 'short' }), 400, 'refresh_token_not_found');
  });

  it('10,000-character passwords: a clear 4xx everywhere, nothing hashed into the database', async () => {
    const long = 'p'.repeat(10_000);
    await refused('/token?grant_type=password', password({ email: 'ada@example.com', password: long }), 400, 'invalid_credentials');
    await refused('/token?grant_type=password', password({ email: 'ada@example.com', password: `${long}!` }), 400, 'validation_failed');
    const svc = { key: 'service' as const, bearer: t.deps.config.serviceRoleKey };
    expect(await refused('/admin/users', { body: { email: 'long@example.com', password: long }, ...svc }, 400, 'validation_failed')).toMatch(
      /longer than 1024/,
    );
    await refused('/user', { method: 'PUT', bearer: session.access_token, body: { password: long } }, 400, 'validation_failed');
  });
});

describe('emails', () => {
  it('odd case and whitespace are normalised once, on every path', async () => {
    const created = await (
      await admin(t, '/admin/users', { body: { email: '  Grace.Hopper@Example.COM\t', password: 'hopper password', email_confirm: true } })
    ).json();
    expect(created.email).toBe('grace.hopper@example.com');
    await refused(
      '/admin/users',
      { body: { email: 'GRACE.HOPPER@example.com ', password: 'other password' }, key: 'service', bearer: t.deps.config.serviceRoleKey },
      422,
      'email_exists',
    );
    expect((await signIn(t, ' grace.HOPPER@example.com', 'hopper password')).user.email).toBe('grace.hopper@example.com');
    expect((await t.op('user.get', { user: 'Grace.Hopper@example.com ' })).id).toBe(created.id);
    for (const bad of ['not-an-email', 'two@@example.com', 'spaces in@example.com', `${'x'.repeat(300)}@example.com`]) {
      await refused(
        '/admin/users',
        { body: { email: bad, password: 'some password' }, key: 'service', bearer: t.deps.config.serviceRoleKey },
        400,
        'validation_failed',
      );
    }
  });
});

describe('the legacy error shape (no X-Supabase-Api-Version)', () => {
  it('is {code: <status>, error_code, msg} with x-sb-error-code', async () => {
    const res = await auth(t, '/token?grant_type=password', { body: { email: 'ada@example.com', password: 'wrong password' }, version: null });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ code: 400, error_code: 'invalid_credentials', msg: 'Invalid login credentials' });
    expect(res.headers.get('x-sb-error-code')).toBe('invalid_credentials');
    expect(res.headers.get('x-supabase-api-version')).toBeNull();
  });
});
