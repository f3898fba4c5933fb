/**
 * The runtime (issue #15): the suite, `npm start` and the CLI run on the Node.js LTS the project
 * brings (the `node` package, first on PATH under npm), package.json's `engines` says what
 * src/runtime.ts enforces, and an unsupported Node.js gets a clear message instead of a start.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { SUPPORTED_NODE, unsupportedRuntime } from '../../src/runtime.ts';
import { ROOT } from '../helpers/server-process.ts';

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));

describe('runtime', () => {
  it('runs this suite on Node.js 24 LTS, the version the project installs', () => {
    expect(process.versions.node).toBe(pkg.dependencies.node);
    expect(process.versions.node).toMatch(/^24\./);
    expect(unsupportedRuntime()).toBeUndefined();
  });

  it('declares in engines exactly the range it enforces', () => {
    expect(pkg.engines.node).toBe(SUPPORTED_NODE);
  });

  it.each(['20.20.2', '18.20.0', '23.11.0', '25.0.0'])('refuses Node.js %s with a message naming the way out', (version) => {
    expect(unsupportedRuntime(version)).toMatch(new RegExp(`Node.js ${version} is not supported .*npm start`));
  });

  it.each(['22.12.0', '24.21.0'])('accepts Node.js %s', (version) => {
    expect(unsupportedRuntime(version)).toBeUndefined();
  });

  it('runs the CLI through npx on the same Node.js', async () => {
    const { stdout } = await promisify(execFile)('npx', ['--no-install', 'svc', '--version'], {
      cwd: ROOT,
      env: { PATH: process.env.PATH, HOME: process.env.HOME },
    });
    expect(stdout.trim()).toBe(pkg.version);
    const { stdout: node } = await promisify(execFile)('npx', ['--no-install', 'node', '--version'], {
      cwd: ROOT,
      env: { PATH: process.env.PATH, HOME: process.env.HOME },
    });
    expect(node.trim()).toBe(`v${pkg.dependencies.node}`);
  });
});
