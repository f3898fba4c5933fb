/**
 * The `svc` command as a user runs it: a real process, the real bin, real databases.
 * Embedded runs cover both paths: a free data folder (the CLI opens it) and a folder held by a
 * running server (the CLI sends the command to the server). The PostgreSQL run uses DATABASE_URL.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient } from '@supabase/supabase-js';
import { afterAll, describe, expect, it } from 'vitest';
import { backend, freshDb } from '../helpers/harness.ts';
import { runSvc } from '../helpers/svc-cli.ts';

const root = new URL('../../', import.meta.url).pathname;
const svc = runSvc;
const json = (r: { stdout: string }) => JSON.parse(r.stdout);

// Each command is a process that opens the embedded database: slow on a busy 2-core machine.
describe.runIf(backend === 'pglite')('svc with the embedded database', { timeout: 240_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-cli-'));
  const env = { SVC_DATA_DIR: dir };
  let server: ChildProcess | undefined;
  afterAll(() => {
    server?.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  });

  it('works on a free data folder and explains refusals', async () => {
    const created = await svc(env, 'tenant', 'create', 'acme', '--name', 'Acme Inc', '--json');
    expect(created.code).toBe(0);
    expect(json(created)).toMatchObject({ slug: 'acme', name: 'Acme Inc' });
    const again = await svc(env, 'tenant', 'create', 'acme');
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('tenant "acme" already exists');
    const bad = await svc(env, 'tenant', 'create', 'Not A Slug');
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/slug/);
    // --help says which options are required (commander alone does not).
    const help = await svc(env, 'key', 'create', '--help');
    expect(help.stdout).toMatch(/--name <name>\s+required:/);
  });

  it('sends commands to the running server while it holds the folder', async () => {
    server = spawn(process.execPath, ['--import', 'tsx', join(root, 'src/main.ts')], {
      env: { PATH: process.env.PATH, ...env, PORT: '0', LOG_LEVEL: 'silent', BASE_URL: 'https://learn.example.test' },
      cwd: root,
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    const info = join(dir, 'server.json'); // written once it listens: up to 90 s
    for (let i = 0; i < 900 && !existsSync(info) && server.exitCode === null; i++) await new Promise((r) => setTimeout(r, 100));
    const { url } = JSON.parse(readFileSync(info, 'utf8'));

    expect((await svc(env, 'user', 'create', '--email', 'Grace@Example.com', '--password', 'hopper1906')).code).toBe(0);
    const grant = await svc(env, 'author', 'grant', 'acme', 'grace@example.com', '--json');
    expect(json(grant)).toMatchObject({ tenant: 'acme', email: 'grace@example.com', role: 'author' });
    const key = json(await svc(env, 'key', 'create', 'acme', '--name', 'dashboard', '--json'));
    expect(key.key).toMatch(/^svc_[0-9A-Za-z]{12}_[0-9A-Za-z]{40}$/);
    const keys = json(await svc(env, 'key', 'list', 'acme', '--json'));
    expect(keys).toHaveLength(1);
    expect(keys[0]).not.toHaveProperty('key');
    expect(keys[0]).not.toHaveProperty('key_hash');

    // URLs for an LMS come from the server's BASE_URL, not this shell's (which has none: its default is a loopback URL).
    expect(json(await svc(env, 'lti', 'registration-url', 'acme', '--json')).url).toMatch(/^https:\/\/learn\.example\.test\/lti\/v1\/register\/\S{43}$/);
    expect(json(await svc(env, 'lti', 'config', '--json')).login_url).toBe('https://learn.example.test/lti/v1/login');

    const secrets = json(await svc(env, 'secrets', '--json'));
    expect(secrets.anon_key).toBe(JSON.parse(readFileSync(join(dir, 'secrets.json'), 'utf8')).anonKey);
    const supabase = createClient(url, secrets.anon_key, { auth: { persistSession: false } });
    const signIn = await supabase.auth.signInWithPassword({ email: 'grace@example.com', password: 'hopper1906' });
    expect(signIn.error).toBeNull();

    const exited = new Promise((r) => server!.once('exit', r));
    server.kill('SIGTERM');
    await exited;
    server = undefined;
    const tenants = json(await svc(env, 'tenant', 'list', '--json'));
    expect(tenants.map((t: { slug: string }) => t.slug)).toEqual(['acme']);
  }, 180_000); // a server from the sources (tsx) and five CLI processes: over a minute on a loaded runner
});

describe.runIf(backend === 'postgres')('svc with DATABASE_URL', { timeout: 240_000 }, () => {
  it('migrates and runs every command against PostgreSQL', async () => {
    const { url, drop } = await freshDb();
    try {
      const env = { DATABASE_URL: url! };
      expect(json(await svc(env, 'migrate', '--json')).applied).toEqual([]);
      expect((await svc(env, 'tenant', 'create', 'acme')).code).toBe(0);
      expect((await svc(env, 'user', 'create', '--email', 'a@acme.test', '--password', 'secret123')).code).toBe(0);
      expect((await svc(env, 'author', 'grant', 'acme', 'a@acme.test')).code).toBe(0);
      const demoted = json(await svc(env, 'author', 'revoke', 'acme', 'a@acme.test', '--json'));
      expect(demoted.role).toBe('learner');
      const key = json(await svc(env, 'key', 'create', 'acme', '--name', 'k', '--json'));
      const revoked = json(await svc(env, 'key', 'revoke', key.prefix, '--json'));
      expect(revoked.revoked_at).not.toBeNull();
      const idp = await svc(env, 'idp', 'set', 'acme', '--issuer', 'https://idp.example', '--jwks-url', 'https://idp.example/jwks', '--json');
      expect(json(idp)).toMatchObject({ tenant: 'acme', issuer: 'https://idp.example' });
      const noAudience = await svc(env, 'idp', 'set', 'acme', '--issuer', 'https://idp.example', '--jwks-url', 'https://idp.example/jwks');
      expect(noAudience.stdout).toContain('note: no --audience');
      const withAudience = await svc(env, 'idp', 'set', 'acme', '--issuer', 'https://idp.example', '--discovery', '--audience', 'player');
      expect(withAudience.stdout).toContain('audience player');
      expect(withAudience.stdout).not.toContain('note:');
      const both = await svc(env, 'idp', 'set', 'acme', '--issuer', 'https://idp.example');
      expect(both.code).toBe(1);
      expect(both.stderr).toContain('exactly one of --jwks-url or --discovery');
      // svc learner delete: the user (a learner member after the revoke) leaves acme; they keep their password account.
      const learnerId = demoted.svc_user_id as string;
      const erased = await svc(env, 'learner', 'delete', 'acme', learnerId);
      expect(erased.stdout).toContain(`erased learner ${learnerId} from acme`);
      const twice = await svc(env, 'learner', 'delete', 'acme', learnerId);
      expect(twice.code).toBe(1);
      expect(twice.stderr).toContain(`no learner ${learnerId} in "acme"`);
      const missing = await svc(env, 'key', 'list', 'nope');
      expect(missing.code).toBe(1);
      expect(missing.stderr).toContain('no tenant "nope"');
    } finally {
      await drop();
    }
  });
});

describe.runIf(backend === 'pglite')('svc when the database cannot be used', { timeout: 120_000 }, () => {
  it('says why in one line and exits 2: an unreachable DATABASE_URL, a data folder with a file in its place', async () => {
    const unreachable = await svc({ DATABASE_URL: 'postgres://svc@127.0.0.1:1/svc' }, 'tenant', 'list');
    expect(unreachable.code).toBe(2);
    expect(unreachable.stderr.trim()).toMatch(
      /^svc: the database is unavailable \(connect ECONNREFUSED 127\.0\.0\.1:1\); check DATABASE_URL, or run svc doctor$/,
    );
    const dir = mkdtempSync(join(tmpdir(), 'svc-cli-file-'));
    try {
      const file = join(dir, 'not-a-folder');
      writeFileSync(file, '');
      const taken = await svc({ SVC_DATA_DIR: file }, 'tenant', 'list');
      expect(taken.code).toBe(2);
      expect(taken.stderr.trim()).toBe(`svc: SVC_DATA_DIR: the data folder ${file} cannot be created: a file is in its place`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
