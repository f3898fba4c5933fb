/**
 * The Node.js releases the service supports: the LTS lines 24 (what the project installs and CI
 * runs: the `node` package in package.json, which `npm start`, `npm test` and `npx svc` put first
 * on PATH) and 22. Node.js 20 reached end of life on 2026-04-30. Kept equal to package.json's
 * `engines.node` (test/ops/runtime.test.ts).
 */
import semver from 'semver';

export const SUPPORTED_NODE = '^22.12.0 || ^24.11.0';

/**
 * The message to stop with when `version` (default: this process's, e.g. "20.20.2") is outside
 * SUPPORTED_NODE; undefined when it is supported.
 */
export function unsupportedRuntime(version: string = process.versions.node): string | undefined {
  if (semver.satisfies(version, SUPPORTED_NODE)) return undefined;
  return (
    `Node.js ${version} is not supported (supported: ${SUPPORTED_NODE}). ` +
    'Run through npm (`npm start`, `npx svc …`), which uses the Node.js 24 the project installs ' +
    '(node_modules/.bin/node), or install Node.js 24 LTS.'
  );
}
