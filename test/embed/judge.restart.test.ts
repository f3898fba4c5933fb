/**
 * A server process killed in the middle of a grading loses nothing: a real `src/main.ts` process
 * (PostgreSQL with DATABASE_URL, or the embedded database in a data folder) is killed with
 * SIGKILL while the model is answering, restarted, and the submission is graded by the restarted
 * process once the dead run's short lease has expired (issue #11: within 60 s of the restart,
 * however long a run may take — here a 60 s model timeout, whose fixed lease would be 80 s —
 * with one model call after the restart).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runOp } from '../../src/admin/ops.ts';
import { migrate, openDb, type Db } from '../../src/db/index.ts';
import { backend, freshDb, useServer, type TestApp } from '../helpers/harness.ts';
import { startTestIdp } from '../helpers/test-idp.ts';
import { startTestModel } from '../helpers/test-model.ts';
import { seedActivity, type SeededActivity } from './fixtures.ts';
import { eventually } from '../helpers/wait.ts';

const ROOT = join(import.meta.dirname, '..', '..');

const idp = useServer(() => startTestIdp());
const model = useServer(() => startTestModel());
let activity: SeededActivity;
let apiKey: string;
let env: NodeJS.ProcessEnv;
let cleanup: () => Promise<void>;
const children: ChildProcess[] = [];

beforeAll(async () => {
  let db: Db;
  let target: NodeJS.ProcessEnv;
  if (backend === 'postgres') {
    const store = await freshDb();
    db = store.db;
    target = {
      DATABASE_URL: store.url,
      SVC_JWT_SECRET: randomBytes(36).toString('base64url'),
      SVC_ANON_KEY: `anon_${randomBytes(18).toString('base64url')}`,
      SVC_SERVICE_ROLE_KEY: `service_${randomBytes(24).toString('base64url')}`,
    };
    cleanup = store.drop;
  } else {
    const dir = await mkdtemp(join(tmpdir(), 'svc-restart-'));
    db = await openDb({ dataDir: dir });
    await migrate(db);
    target = { SVC_DATA_DIR: dir };
    cleanup = () => rm(dir, { recursive: true, force: true });
  }
  await runOp(db, 'tenant.create', { slug: 'acme' });
  await runOp(db, 'idp.set', { tenant: 'acme', issuer: idp.issuer, jwks_url: idp.jwksUrl });
  activity = await seedActivity({ db } as TestApp, 'acme');
  apiKey = ((await runOp(db, 'key.create', { tenant: 'acme', name: 'restart' })) as { key: string }).key;
  if (backend === 'pglite') await db.close(); // the server process opens the folder
  env = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    ...target,
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'info',
    SVC_JUDGE_BASE_URL: model.baseUrl,
    SVC_JUDGE_MODEL: 'test-model',
    SVC_JUDGE_TIMEOUT: '60',
    SVC_JUDGE_LEASE: '9',
    SVC_JUDGE_ATTEMPTS: '1',
    SVC_JUDGE_RETRY_DELAY: '1',
    SVC_JUDGE_POLL: '0.5',
    SVC_JUDGE_WAIT: '0.5',
    SVC_FETCH_TIMEOUT: '1',
    SVC_FETCH_ALLOW_PRIVATE: '1',
  };
  if (backend === 'postgres') await db.close();
}, 60_000);

afterAll(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await cleanup?.();
});

/** Start `src/main.ts`; resolves with its URL once it listens (retrying while an embedded folder's stale lock lasts). */
async function startServer(): Promise<{ url: string; child: ChildProcess }> {
  for (let attempt = 0; ; attempt++) {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    let output = '';
    const url = await new Promise<string | undefined>((resolve) => {
      child.stdout!.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        const m = /service listening on (http:\/\/[^"\s]+)/.exec(output);
        if (m) resolve(m[1]);
      });
      child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
      child.on('exit', () => resolve(undefined));
    });
    if (url) return { url, child };
    // A killed embedded server leaves its folder lock until it goes stale (10 s).
    if (attempt > 30 || !/busy|locked|in use/i.test(output)) throw new Error(`server did not start:\n${output}`);
    await new Promise((r) => setTimeout(r, 1000));
  }
}

const artifactOf = async (url: string, id: string) => {
  const res = await fetch(`${url}/v1/artifacts/${id}`, { headers: { authorization: `Bearer ${apiKey}` } });
  return res.status === 200 ? ((await res.json()) as { verification: { status: string; runs?: number } }) : undefined;
};

describe('a server killed mid-grading', () => {
  it('grades the submission after a restart', async () => {
    model.setMode('slow');
    const first = await startServer();
    const before = model.requests.length;
    const res = await fetch(`${first.url}/v1/embed/judge`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${await idp.sign({ sub: 'killed' })}` },
      body: JSON.stringify({ tenant: 'acme', activity_id: activity.activityId, artifact: { kind: 'document', content: 'work of the killed run' } }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { status: string; artifact_id: string };
    expect(body.status).toBe('pending');
    // The model has the request: the grading is under way. Kill the server now.
    await eventually(async () => model.requests.length > before, 10_000, 'the model to receive the grading request');
    first.child.kill('SIGKILL');
    await new Promise((r) => first.child.once('exit', r));

    model.setMode('grade');
    const second = await startServer();
    const restartedAt = Date.now();
    const verdict = await eventually(
      async () => {
        const a = await artifactOf(second.url, body.artifact_id);
        return a?.verification.status === 'passed' ? a.verification : undefined;
      },
      60_000,
      'the restarted server to grade the submission within 60 s',
    );
    expect(Date.now() - restartedAt).toBeLessThan(60_000);
    expect(verdict.runs).toBe(1); // the killed run recorded nothing
    // The killed run's call, then exactly one after the restart.
    expect(model.artifacts().filter((a) => a.includes('work of the killed run'))).toHaveLength(2);
    second.child.kill('SIGTERM');
    await new Promise((r) => second.child.once('exit', r));
  }, 90_000);
});
