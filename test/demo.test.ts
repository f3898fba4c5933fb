/**
 * `npm run demo` from a fresh clone with nothing else (issue #25): a clone of this repository's
 * committed HEAD in a temp folder with no ../shared beside it (so no Odin course files), its
 * node_modules linked to ours. The demo starts its own service (embedded database, loopback model
 * and IdP), runs the tour on the sample course kept in scripts/demo/course/, prints a verdict, the
 * results pages and the partner page's URL, and keeps serving until Ctrl-C — a SIGINT to its whole
 * process group, as a terminal sends it — after which its ports are free. `--url <base>` runs the
 * same tour against a running server; `--url` pointing at nothing: one line on stderr, exit status 1.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from './helpers/pg-cluster.ts';
import { embeddedDatabase, killAll, ROOT, startServerProcess } from './helpers/server-process.ts';
import { startTestModel } from './helpers/test-model.ts';

let dir: string;
let clone: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'svc-demo-clone-'));
  clone = join(dir, 'repo');
  execFileSync('git', ['clone', '--quiet', ROOT, clone], { stdio: 'pipe' });
  symlinkSync(realpathSync(join(ROOT, 'node_modules')), join(clone, 'node_modules'));
});
/** Every demo started: one a failed assertion left running is ended with its group. */
const started: ChildProcess[] = [];
afterAll(() => {
  for (const child of started) {
    if (child.exitCode !== null || child.signalCode !== null) continue;
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  rmSync(dir, { recursive: true, force: true });
});

/** `npm run demo -- …args` in the clone, in a process group of its own (as a terminal runs it). */
function demo(args: string[], env: Record<string, string> = {}) {
  // Only PATH and HOME of ours: vitest's own variables (BASE_URL=/ among them) stay out.
  const child = spawn('npm', ['run', '--silent', 'demo', '--', ...args], {
    cwd: clone,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, NO_COLOR: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  started.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  // 'close': npm has exited and every process holding its output (tsx, the demo) has too.
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  return { child, out: () => stdout, err: () => stderr, exited };
}

/** Whether something accepts HTTP requests at `url`. */
const answers = (url: string) =>
  fetch(url, { signal: AbortSignal.timeout(2000) }).then(
    () => true,
    () => false,
  );

describe('npm run demo from a fresh clone', () => {
  it('has no ../shared beside it', () => {
    expect(existsSync(join(dir, 'shared'))).toBe(false);
    expect(existsSync(join(clone, 'scripts/demo/course/course.json'))).toBe(true);
  });

  it('starts its own service, runs the tour on the sample course, serves the partner page until SIGINT, then frees its ports', async () => {
    const run = demo(['--port', String(await freePort())]);
    try {
      await expect.poll(run.out, { timeout: 170_000, interval: 500 }).toMatch(/Serving until Ctrl-C/);
    } catch (err) {
      throw new Error(`the demo did not reach its end:\n${run.out()}\n${run.err()}`, { cause: err });
    } finally {
      if (run.child.exitCode !== null) expect.fail(`the demo exited (${run.child.exitCode}):\n${run.out()}\n${run.err()}`);
    }
    const out = run.out();
    expect(Number(/The tour took ([\d.]+) s/.exec(out)![1])).toBeLessThan(30);
    // Every step says what a real deployment does instead.
    expect(out.match(/↳ in a real deployment: /g)!.length).toBeGreaterThanOrEqual(8);
    expect(out).toMatch(/3 units, 5 lessons, 5 activities \(document, diagram, repo, site\)/);
    expect(out).toMatch(/verdict on "Write a one-page design note": passed \(score 100\)/);
    expect(out).toMatch(/verdict on "Write a short reflection": failed \(score 0\)/);
    expect(out).toMatch(/results page 1 \(GET \/v1\/activity-results\): completed, score 100/);
    const partnerUrl = /partner page \(the player, as learner [^)]+\): (http:\/\/127\.0\.0\.1:\d+\/\?activity=[^\s]+)/.exec(out)?.[1];
    const serviceUrl = /service \(readiness\): +(http:\/\/127\.0\.0\.1:\d+)\/readyz/.exec(out)?.[1];
    expect(partnerUrl).toBeTruthy();
    expect(serviceUrl).toBeTruthy();
    // Both are really served: the partner's page mounts the service's player.
    const page = await (await fetch(partnerUrl!)).text();
    expect(page).toContain(`${serviceUrl}/embed/v1/svc-embed.js`);
    expect((await fetch(`${serviceUrl}/v1/health`)).status).toBe(200);
    expect((await fetch(`${serviceUrl}/readyz`)).status, 'every link the demo prints answers').toBe(200);
    expect((await fetch(/results API reference: +(\S+)/.exec(out)![1]!)).status).toBe(200);

    process.kill(-run.child.pid!, 'SIGINT'); // Ctrl-C: the whole group (npm itself ends by the signal)
    await run.exited;
    expect(`${run.out()}\n${run.err()}`).toMatch(/SIGINT: stopped; ports freed\.\n*$/);
    expect(await answers(`${serviceUrl}/v1/health`)).toBe(false);
    expect(await answers(partnerUrl!)).toBe(false);
    expect(run.err()).not.toMatch(/\n\s+at /); // no stack trace
  }, 200_000);

  it('--url <base>: the tour against a service already running (its data folder named as for `npx svc`), verdicts from its judge', async () => {
    const [database, model] = [embeddedDatabase(), await startTestModel()];
    const server = await startServerProcess({ ...database.env, SVC_JUDGE_BASE_URL: model.baseUrl, SVC_JUDGE_MODEL: 'demo' });
    try {
      // The admin steps find the server through the data folder, as `npx svc` does.
      const run = demo(['--url', server.url], database.env);
      await expect.poll(run.out, { timeout: 100_000, interval: 500 }).toMatch(/Serving until Ctrl-C|npm run demo:/);
      const out = run.out();
      expect(out).toMatch(new RegExp(`The service at ${server.url} \\(--url\\)`));
      expect(out).not.toMatch(/Starting the service here/);
      expect(out).toMatch(/verdict on "Write a one-page design note": passed \(score 100\)/);
      expect(out).toMatch(/partner page \(the player, as learner [^)]+\): http:\/\/127\.0\.0\.1:\d+\/\?activity=/);
      process.kill(-run.child.pid!, 'SIGINT');
      await run.exited;
      expect(run.out()).toMatch(/SIGINT: stopped; ports freed\./);
      expect((await fetch(`${server.url}/v1/health`)).status).toBe(200); // the demo leaves a service it did not start running
    } finally {
      killAll([server]);
      await Promise.all([database.drop(), model.close()]);
    }
  }, 120_000);

  it('--url pointing at nothing: one line on stderr, exit status 1', async () => {
    const port = await freePort();
    const run = demo(['--url', `http://127.0.0.1:${port}`]);
    expect(await run.exited).toBe(1);
    expect(run.err().trim().split('\n')).toEqual([
      `npm run demo: no service answers at http://127.0.0.1:${port} (ECONNREFUSED); start one with \`npm start\`, or leave out --url and the demo starts its own`,
    ]);
  }, 60_000);
});
