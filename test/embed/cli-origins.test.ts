/**
 * `svc embed origins add|remove|list` as an admin types it: the real `bin/svc.js` process on the
 * suite's backend (an embedded data folder the CLI opens itself, or DATABASE_URL).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backend, freshDb } from '../helpers/harness.ts';

const root = new URL('../../', import.meta.url).pathname;
const run = promisify(execFile);
let env: Record<string, string>;
let cleanup: () => Promise<void>;

beforeAll(async () => {
  if (backend === 'postgres') {
    const store = await freshDb();
    await store.db.close().catch(() => {});
    env = { DATABASE_URL: store.url! };
    cleanup = store.drop;
  } else {
    const dir = mkdtempSync(join(tmpdir(), 'svc-cli-origins-'));
    env = { SVC_DATA_DIR: dir };
    cleanup = async () => rmSync(dir, { recursive: true, force: true });
  }
});
afterAll(async () => {
  await cleanup?.().catch(() => {});
});

async function svc(...args: string[]) {
  try {
    const { stdout } = await run(process.execPath, [join(root, 'bin/svc.js'), ...args], { env: { PATH: process.env.PATH!, LOG_LEVEL: 'silent', ...env }, cwd: root });
    return { code: 0, out: stdout };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, out: e.stdout + e.stderr };
  }
}

describe('svc embed origins', () => {
  // Few commands: each CLI process opens the database (an embedded folder is slow on a busy machine).
  it('says the player cannot be framed without origins; adds, lists and removes them', async () => {
    expect((await svc('tenant', 'create', 'acme')).code).toBe(0);
    const none = await svc('embed', 'origins', 'list', 'acme');
    expect(none.out).toContain("no origins: acme's player cannot be framed by any page (frame-ancestors 'none')");

    const added = await svc('embed', 'origins', 'add', 'acme', 'https://*.partner.example', '--json');
    expect(JSON.parse(added.out)).toEqual({ tenant: 'acme', origin: 'https://*.partner.example', added: true, origins: ['https://*.partner.example'] });
    const listed = await svc('embed', 'origins', 'list', 'acme');
    expect(listed.out).toContain("origins allowed to embed acme's player:\n  https://*.partner.example");

    const bad = await svc('embed', 'origins', 'add', 'acme', 'https://partner.example/course');
    expect(bad.code).toBe(1);
    expect(bad.out).toMatch(/is not an origin/);

    const removed = await svc('embed', 'origins', 'remove', 'acme', 'https://*.partner.example');
    expect(removed.code).toBe(0);
    expect(removed.out).toContain('removed https://*.partner.example');
  }, 180_000);
});
