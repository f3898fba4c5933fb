/**
 * `npm start` delivers signals to the server (issue #11): SIGTERM sent to npm's own pid — what a
 * supervisor or a container runtime that started `npm start` does — stops the server process
 * within the shutdown deadline and releases the embedded data folder.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { isDataDirLocked } from '../../src/db/data-dir-lock.ts';
import { backend } from '../helpers/harness.ts';
import { embeddedDatabase, killAll, startServerProcess, type ServerProcess } from '../helpers/server-process.ts';

const TIMEOUT_MS = 4000;

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe.runIf(backend === 'pglite')('npm start', () => {
  const database = embeddedDatabase();
  let npm: ServerProcess | undefined;
  let serverPid: number | undefined;
  afterAll(async () => {
    if (serverPid && alive(serverPid)) process.kill(serverPid, 'SIGKILL');
    if (npm) {
      killAll([npm]);
      await npm.exited;
    }
    await database.drop();
  });

  it('stops the server when npm gets SIGTERM, and releases the data folder', async () => {
    const dataDir = database.dataDir!;
    npm = await startServerProcess({ ...database.env, SVC_SHUTDOWN_DELAY: '0.5', SVC_SHUTDOWN_TIMEOUT: String(TIMEOUT_MS / 1000) }, { npm: true });
    serverPid = JSON.parse(readFileSync(join(dataDir, 'server.json'), 'utf8')).pid as number;
    expect(serverPid).not.toBe(npm.child.pid);
    expect(await isDataDirLocked(dataDir)).toBe(true);

    const sent = Date.now();
    npm.child.kill('SIGTERM');
    await expect.poll(() => alive(serverPid!), { timeout: TIMEOUT_MS + 2000, interval: 100 }).toBe(false);
    expect(Date.now() - sent).toBeLessThan(TIMEOUT_MS);
    await npm.exited;
    expect(await isDataDirLocked(dataDir)).toBe(false);
    expect(existsSync(join(dataDir, '.lock'))).toBe(false);
    expect(existsSync(join(dataDir, 'server.json'))).toBe(false);
  });
});
