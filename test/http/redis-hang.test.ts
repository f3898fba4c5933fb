/**
 * A Redis that hangs (issue #11): the real server (`src/main.ts`, a child process, embedded
 * database in a temporary folder) counts its rate limits in a throwaway `redis-server` started
 * here — never the shared one. Frozen with SIGSTOP, the results API and sign-in still answer
 * within 3 s (the command timeout fails the count and the request is let through), and the
 * server logs ONE warning for the outage, not one per request; thawed with SIGCONT, it logs
 * once that Redis is back and counts again.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runOp } from '../../src/admin/ops.ts';
import { loadOrCreateEmbeddedSecrets } from '../../src/config.ts';
import { migrate, openDb } from '../../src/db/index.ts';
import { freePort } from '../helpers/pg-cluster.ts';

const REDIS_SERVER = '/usr/bin/redis-server';
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const EMAIL = 'ada@acme.test';
const PASSWORD = 'correct horse battery';

let dir: string;
let redis: ChildProcess | undefined;
let server: ChildProcess | undefined;
let url: string;
let apiKey: string;
let anonKey: string;
const logs: { level: number; msg: string }[] = [];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Resolve when `child` prints a line matching `pattern` (stdout or stderr), or reject after `ms`. */
function waitForLine(child: ChildProcess, pattern: RegExp, ms: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no line matching ${pattern} within ${ms} ms`)), ms);
    const onData = (chunk: Buffer) => {
      const line = chunk
        .toString()
        .split('\n')
        .find((l) => pattern.test(l));
      if (line === undefined) return;
      clearTimeout(timer);
      child.stdout?.off('data', onData);
      child.stderr?.off('data', onData);
      resolve(line);
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
  });
}

const warnings = () => logs.filter((l) => /^Redis unavailable/.test(l.msg));
const recoveries = () => logs.filter((l) => /^Redis is back/.test(l.msg));

/** A request with its time in milliseconds; aborted after 3 s (the bound). */
async function timed(path: string, init: RequestInit = {}): Promise<{ status: number; ms: number; headers: Headers }> {
  const start = performance.now();
  const res = await fetch(`${url}${path}`, { ...init, signal: AbortSignal.timeout(3000) });
  await res.arrayBuffer();
  return { status: res.status, ms: performance.now() - start, headers: res.headers };
}
const results = () => timed('/v1/activity-results?limit=1', { headers: { authorization: `Bearer ${apiKey}` } });
const signIn = () =>
  timed('/auth/v1/token?grant_type=password', {
    method: 'POST',
    headers: { apikey: anonKey, 'content-type': 'application/json' },
    body: JSON.stringify({ email: EMAIL, password: PASSWORD }),
  });

const redisMissing = !existsSync(REDIS_SERVER);

describe.skipIf(redisMissing)(`a frozen Redis (SIGSTOP)${redisMissing ? ` (skipped: ${REDIS_SERVER} is not installed)` : ''}`, () => {
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'svc-redis-hang-'));
    const redisPort = await freePort();
    redis = spawn(REDIS_SERVER, ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'pipe' });
    await waitForLine(redis, /Ready to accept connections/, 10_000);

    // The tenant, key and user, written before the server holds the folder.
    const db = await openDb({ dataDir: dir });
    await migrate(db);
    await runOp(db, 'tenant.create', { slug: 'acme', name: 'Acme' });
    apiKey = ((await runOp(db, 'key.create', { tenant: 'acme', name: 'dashboard' })) as { key: string }).key;
    await runOp(db, 'user.create', { email: EMAIL, password: PASSWORD });
    await db.close();
    anonKey = loadOrCreateEmbeddedSecrets(dir).anonKey;

    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    server = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      cwd: ROOT,
      env: { PATH: process.env.PATH, PORT: String(port), HOST: '127.0.0.1', SVC_DATA_DIR: dir, REDIS_URL: `redis://127.0.0.1:${redisPort}`, LOG_LEVEL: 'info' },
      stdio: 'pipe',
    });
    let buffered = '';
    server.stdout!.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      const lines = buffered.split('\n');
      buffered = lines.pop()!;
      for (const line of lines) {
        try {
          logs.push(JSON.parse(line));
        } catch {
          // not a log line
        }
      }
    });
    await waitForLine(server, /service listening/, 90_000); // a spawned tsx server under a loaded machine (CI with other work) can take longer than 30 s to start
  }, 120_000);

  afterAll(async () => {
    if (redis?.pid) {
      redis.kill('SIGCONT');
      redis.kill('SIGKILL');
    }
    server?.kill('SIGKILL');
    await sleep(200);
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('counts in Redis while it answers', async () => {
    const res = await results();
    expect(res.status).toBe(200);
    expect(res.headers.get('ratelimit-remaining')).toMatch(/^\d+$/);
    expect((await signIn()).status).toBe(200);
    expect(warnings()).toEqual([]);
  });

  it('frozen: the results API and sign-in answer within 3 s, and one warning is logged for the outage', async () => {
    redis!.kill('SIGSTOP');
    for (let i = 0; i < 4; i++) {
      const res = await results();
      expect(res.status).toBe(200);
      expect(res.ms).toBeLessThan(3000);
    }
    for (let i = 0; i < 2; i++) {
      const res = await signIn();
      expect(res.status).toBe(200);
      expect(res.ms).toBeLessThan(3000);
    }
    await sleep(1500);
    expect(warnings()).toHaveLength(1);
    expect(warnings()[0]!.level).toBe(40); // pino's warn
  }, 30_000);

  it('thawed: one line says it is back, and requests are counted again', async () => {
    redis!.kill('SIGCONT');
    const end = Date.now() + 5000;
    while (recoveries().length === 0 && Date.now() < end) await sleep(100);
    expect(recoveries()).toHaveLength(1);
    expect(warnings()).toHaveLength(1);
    const first = await results();
    const second = await results();
    expect(Number(second.headers.get('ratelimit-remaining'))).toBeLessThan(Number(first.headers.get('ratelimit-remaining')));
  }, 15_000);
});
