/**
 * `npm start` delivers signals to the server (issue #11): SIGTERM sent to npm's own pid — what a
 * container runtime does to its PID 1 — or to npm's whole process group — what systemd's default
 * `KillMode=control-group` and Ctrl-C do, so the server gets it twice, directly and forwarded by
 * npm — stops the server process within the shutdown deadline, with 0, and releases the embedded
 * data folder. And `npm start` is the compiled service (dist/, built by its `prestart`) on the
 * project's own Node.js LTS, not the machine's (issue #15).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isDataDirLocked } from '../../src/db/data-dir-lock.ts';
import { backend } from '../helpers/harness.ts';
import { ROOT, embeddedDatabase, killAll, startServerProcess, type ServerDatabase, type ServerProcess } from '../helpers/server-process.ts';
import { alive } from '../helpers/pids.ts';

const TIMEOUT_MS = 4000;
const SHUTDOWN = { SVC_SHUTDOWN_DELAY: '0.5', SVC_SHUTDOWN_TIMEOUT: String(TIMEOUT_MS / 1000) };

describe.runIf(backend === 'pglite')('npm start', () => {
  let databases: ServerDatabase[] = [];
  const npms: ServerProcess[] = [];
  const serverPids: number[] = [];
  beforeAll(async () => {
    databases = [embeddedDatabase(), embeddedDatabase()];
    // One after the other: each `npm start` builds first, and two builds of one checkout would race.
    npms.push(await startServerProcess({ ...databases[0]!.env, ...SHUTDOWN }, { npm: true }));
    npms.push(await startServerProcess({ ...databases[1]!.env, ...SHUTDOWN }, { npm: true, group: true }));
  }, 180_000);
  afterAll(async () => {
    for (const pid of serverPids) if (alive(pid)) process.kill(pid, 'SIGKILL');
    killAll(npms);
    await Promise.all(npms.map((n) => n.exited));
    await Promise.all(databases.map((d) => d.drop()));
  });

  it('runs the compiled code on the Node.js LTS the project brings', () => {
    for (const [i, npm] of npms.entries()) {
      const line = npm
        .output()
        .split('\n')
        .find((l) => l.includes('service listening on'))!;
      expect(JSON.parse(line).node).toMatch(/^v24\./);
      const serverPid = JSON.parse(readFileSync(join(databases[i]!.dataDir!, 'server.json'), 'utf8')).pid as number;
      const argv = readFileSync(`/proc/${serverPid}/cmdline`, 'utf8').split('\0');
      expect(argv).toContain('dist/main.js');
      expect(argv.join(' ')).not.toContain('tsx');
    }
    expect(existsSync(join(ROOT, 'dist/player/assets.json'))).toBe(true);
  });

  /** Send `signal()`, then expect the server gone within the deadline, npm ended with 0 and the folder free. */
  async function expectStopped(i: number, signal: (npm: ServerProcess) => void) {
    const npm = npms[i]!;
    const dataDir = databases[i]!.dataDir!;
    const serverPid = JSON.parse(readFileSync(join(dataDir, 'server.json'), 'utf8')).pid as number;
    serverPids.push(serverPid);
    expect(serverPid).not.toBe(npm.child.pid);
    expect(await isDataDirLocked(dataDir)).toBe(true);

    const sent = Date.now();
    signal(npm);
    await expect.poll(() => alive(serverPid), { timeout: TIMEOUT_MS + 2000, interval: 100 }).toBe(false);
    expect(Date.now() - sent).toBeLessThan(TIMEOUT_MS);
    expect((await npm.exited).code).toBe(0);
    expect(await isDataDirLocked(dataDir)).toBe(false);
    expect(existsSync(join(dataDir, '.lock'))).toBe(false);
    expect(existsSync(join(dataDir, 'server.json'))).toBe(false);
  }

  it("stops the server when npm's pid gets SIGTERM, and releases the data folder", async () => {
    await expectStopped(0, (npm) => npm.child.kill('SIGTERM'));
  });

  it("stops the server, with 0, when npm's process group gets SIGTERM", async () => {
    await expectStopped(1, (npm) => process.kill(-npm.child.pid!, 'SIGTERM'));
  });
});
