/**
 * The MCP Inspector CLI (@modelcontextprotocol/inspector-cli@1.0.3, a devDependency), run as a
 * child process against the running server: it lists the tools and calls them with the
 * Authorization header, exactly as a person would from a terminal. Skipped, with a message,
 * when the binary is not installed.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { seedAuthor, useApp } from '../helpers/harness.ts';
import { contentCounts, signIn } from './helpers.ts';

const BIN = fileURLToPath(new URL('../../node_modules/.bin/mcp-inspector-cli', import.meta.url));
// inspector-cli 1.0.3 checks `existsSync('../package.json')` against the working directory but
// imports it relative to its own build/index.js; run it from its build folder so both agree.
const CWD = fileURLToPath(new URL('../../node_modules/@modelcontextprotocol/inspector-cli/build/', import.meta.url));
const present = existsSync(BIN);
const run = promisify(execFile);

describe.skipIf(!present)(`MCP Inspector CLI (${present ? BIN : `skipped: ${BIN} is missing; run npm ci`})`, () => {
  let token: string;

  const t = useApp();
  beforeAll(async () => {
    const author = await seedAuthor(t, 'acme');
    token = await signIn(t, author.email, author.password);
  });

  /** Run the inspector in CLI mode against /mcp; returns its parsed JSON output. */
  async function inspector(args: string[], bearer = token): Promise<{ code: number; json?: any; stderr: string }> {
    try {
      const { stdout, stderr } = await run(BIN, ['--cli', `${t.url}/mcp`, '--transport', 'http', '--header', `Authorization: Bearer ${bearer}`, ...args], {
        cwd: CWD,
        timeout: 30_000,
        maxBuffer: 16 << 20,
      });
      return { code: 0, json: JSON.parse(stdout), stderr };
    } catch (err) {
      const e = err as { code?: number; stdout?: string; stderr?: string };
      return { code: typeof e.code === 'number' ? e.code : 1, stderr: `${e.stderr ?? ''}${e.stdout ?? ''}` };
    }
  }

  it('lists the tools', async () => {
    const out = await inspector(['--method', 'tools/list']);
    expect(out.code, out.stderr).toBe(0);
    const names = (out.json.tools as { name: string }[]).map((x) => x.name);
    expect(names).toHaveLength(42);
    expect(names).toEqual(expect.arrayContaining(['whoami', 'get_program', 'get_activity', 'search_content', 'import_program', 'instantiate_program']));
  });

  it('calls whoami and create_program with the Authorization header', async () => {
    const me = await inspector(['--method', 'tools/call', '--tool-name', 'whoami']);
    expect(me.code, me.stderr).toBe(0);
    expect(me.json.structuredContent).toMatchObject({ email: 'author@acme.test', memberships: [{ tenant: 'acme', role: 'author' }] });

    const before = await contentCounts(t);
    const created = await inspector(['--method', 'tools/call', '--tool-name', 'create_program', '--tool-arg', 'tenant=acme', 'title=From the inspector']);
    expect(created.code, created.stderr).toBe(0);
    expect(created.json.isError).toBeFalsy();
    expect(created.json.structuredContent).toMatchObject({ title: 'From the inspector', tenant_id: expect.any(String) });
    expect((await contentCounts(t)).programs).toBe(before.programs + 1);
  });

  it('is refused with a forged token', async () => {
    const out = await inspector(['--method', 'tools/list'], `${token.slice(0, -4)}AAAA`);
    expect(out.code).not.toBe(0);
    expect(out.stderr).toMatch(/401|Unauthorized|-32001/);
  });
});
