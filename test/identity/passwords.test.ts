/**
 * Passwords: argon2id at the configured cost (OWASP's by default), GoTrue bcrypt imports
 * verified and re-hashed to argon2id on sign-in, the 72-byte bcrypt guard, bounds on imported
 * hashes, the policy (`weak_password`, `same_password`), unconfirmed emails.
 */
import { hash as argon2Hash, Algorithm } from '@node-rs/argon2';
import bcrypt from 'bcryptjs';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { OWASP_ARGON2ID } from '../../src/identity/passwords.ts';
import { useApp } from '../helpers/harness.ts';
import { admin, auth, identityRows, signIn } from './helpers.ts';

const t = useApp();

const storedHash = async (email: string) => (await t.db.query<{ h: string }>('select encrypted_password as h from auth.users where email = $1', [email]))[0]!.h;
const grant = (email: string, password: string) => auth(t, '/token?grant_type=password', { body: { email, password } });
const importUser = (email: string, password_hash: string) => admin(t, '/admin/users', { body: { email, password_hash, email_confirm: true } });

describe('argon2id cost', () => {
  it('production default is OWASP’s m=19456 KiB, t=2, p=1; new hashes use the configured cost', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-config-'));
    try {
      expect(loadConfig({ SVC_DATA_DIR: dir }).identity.argon2).toEqual(OWASP_ARGON2ID);
      expect(() => loadConfig({ SVC_DATA_DIR: dir, SVC_ARGON2_MEMORY_KIB: '1024' })).toThrow(/SVC_ARGON2_MEMORY_KIB/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    await t.op('user.create', { email: 'fresh@example.com', password: 'fresh password' });
    const { memoryKib, timeCost, parallelism } = t.deps.config.identity.argon2;
    expect(await storedHash('fresh@example.com')).toMatch(new RegExp(`^\\$argon2id\\$v=19\\$m=${memoryKib},t=${timeCost},p=${parallelism}\\$`));
  });

  it('a hash at another cost is upgraded on the next sign-in', async () => {
    const old = await argon2Hash('older cost password', { algorithm: Algorithm.Argon2id, memoryCost: 2048, timeCost: 1, parallelism: 1 });
    expect((await importUser('older@example.com', old)).status).toBe(200);
    await signIn(t, 'older@example.com', 'older cost password');
    const upgraded = await storedHash('older@example.com');
    expect(upgraded).not.toBe(old);
    expect(upgraded).toMatch(/^\$argon2id\$v=19\$m=1024,t=1,p=1\$/);
    await signIn(t, 'older@example.com', 'older cost password');
  });
});

describe('GoTrue bcrypt imports', () => {
  it('verifies a bcrypt hash and re-hashes it to argon2id on sign-in', async () => {
    const gotrueHash = bcrypt.hashSync('imported password', 10).replace(/^\$2b\$/, '$2a$'); // GoTrue writes $2a$
    const created = await importUser('Imported@Example.com', gotrueHash);
    expect(created.status).toBe(200);
    expect(await storedHash('imported@example.com')).toBe(gotrueHash);
    expect((await grant('imported@example.com', 'imported-password')).status).toBe(400);
    await signIn(t, 'imported@example.com', 'imported password');
    expect(await storedHash('imported@example.com')).toMatch(/^\$argon2id\$/);
    await signIn(t, 'imported@example.com', 'imported password');
  });

  it('a password over 72 bytes never matches a bcrypt hash (bcrypt would read only its first 72)', async () => {
    const seventyTwo = 'é'.repeat(36); // 72 UTF-8 bytes
    expect((await importUser('long@example.com', bcrypt.hashSync(seventyTwo, 4))).status).toBe(200);
    const longer = await grant('long@example.com', `${seventyTwo}-and-more`);
    expect(longer.status).toBe(400);
    expect((await longer.json()).code).toBe('invalid_credentials');
    expect(await storedHash('long@example.com')).toMatch(/^\$2[ab]\$/);
    await signIn(t, 'long@example.com', seventyTwo);
  });

  it('refuses hashes that are not bcrypt/argon2 or whose cost would be a denial of service; writes nothing', async () => {
    const before = await identityRows(t);
    const argon2Huge = '$argon2id$v=19$m=4194304,t=1,p=1$c29tZXNhbHRzb21lc2FsdA$YWJjZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXo';
    for (const bad of ['plaintext', `$2b$31$${'a'.repeat(53)}`, '$1$md5$hash', argon2Huge]) {
      const res = await importUser('bad-hash@example.com', bad);
      expect(res.status, bad).toBe(400);
      expect((await res.json()).code, bad).toBe('validation_failed');
    }
    const both = await admin(t, '/admin/users', { body: { email: 'both@example.com', password: 'a password 1', password_hash: bcrypt.hashSync('x', 4) } });
    expect(both.status).toBe(400);
    expect(await identityRows(t)).toEqual(before);
  });
});

describe('policy', () => {
  it('weak passwords: 422 weak_password with reasons, in both API versions', async () => {
    const v2024 = await admin(t, '/admin/users', { body: { email: 'weak@example.com', password: 'short' } });
    expect(v2024.status).toBe(422);
    expect(await v2024.json()).toEqual({
      code: 'weak_password',
      message: 'Password should be at least 8 characters.',
      weak_password: { reasons: ['length'] },
    });
    const legacy = await admin(t, '/admin/users', { body: { email: 'weak@example.com', password: 'short' }, version: null });
    expect(await legacy.json()).toEqual({
      code: 422,
      error_code: 'weak_password',
      msg: 'Password should be at least 8 characters.',
      weak_password: { reasons: ['length'] },
    });
    expect(legacy.headers.get('x-sb-error-code')).toBe('weak_password');
  });

  it('a user whose (imported) password is weak signs in, told so in weak_password', async () => {
    await importUser('legacy@example.com', bcrypt.hashSync('abc123', 4));
    const s = await signIn(t, 'legacy@example.com', 'abc123');
    expect(s.weak_password).toEqual({ reasons: ['length'], message: 'Password should be at least 8 characters.' });
  });

  it('an unconfirmed email cannot sign in (400 email_not_confirmed), only with the right password', async () => {
    expect((await admin(t, '/admin/users', { body: { email: 'unconfirmed@example.com', password: 'unconfirmed pw' } })).status).toBe(200);
    const wrong = await grant('unconfirmed@example.com', 'not the password');
    expect((await wrong.json()).code).toBe('invalid_credentials');
    const right = await grant('unconfirmed@example.com', 'unconfirmed pw');
    expect(right.status).toBe(400);
    expect(await right.json()).toEqual({ code: 'email_not_confirmed', message: 'Email not confirmed' });
  });
});
