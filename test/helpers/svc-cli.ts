/**
 * The `svc` command as an admin runs it: the real `bin/svc.js` in its own process, with `env`
 * (a data folder or DATABASE_URL) and nothing else of the test's environment but PATH.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { backend, freshDb } from './harness.ts';

const root = new URL('../../', import.meta.url).pathname;
const run = promisify(execFile);

/** Runs `svc …args`; its exit code, stdout and stderr (a failing command does not throw). */
export async function runSvc(env: Record<string, string>, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [join(root, 'bin/svc.js'), ...args], {
      env: { PATH: process.env.PATH, LOG_LEVEL: 'silent', ...env },
      cwd: root,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/**
 * A store for CLI tests on the suite's backend: a fresh PostgreSQL database (DATABASE_URL) or an
 * empty embedded data folder (SVC_DATA_DIR) named after `prefix`; `cleanup` removes it.
 */
export async function cliStore(prefix: string): Promise<{ env: Record<string, string>; cleanup: () => Promise<void> }> {
  if (backend === 'postgres') {
    const store = await freshDb();
    await store.db.close().catch(() => {});
    return { env: { DATABASE_URL: store.url! }, cleanup: store.drop };
  }
  const dir = mkdtempSync(join(tmpdir(), `svc-${prefix}-`));
  return { env: { SVC_DATA_DIR: dir }, cleanup: async () => rmSync(dir, { recursive: true, force: true }) };
}
