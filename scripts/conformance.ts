/**
 * Runs the MCP conformance suite (`@modelcontextprotocol/conformance`, server scenarios) against
 * this service's `/mcp`, signed in the way an MCP host is: the OAuth flow (register → authorize
 * → sign-in → Allow → token) gives the access token, and a loopback proxy adds it to every
 * request, since the suite has no option for credentials.
 *
 *   npm run conformance [-- scenario …]      (default: the scenarios listed below)
 *
 * Needs the conformance package on the npm registry (fetched by npx) and Node.js ≥ 22 for it (it
 * uses fs.globSync): under npm, the project's Node.js 24. The suite's auth scenarios test MCP *clients* against its own
 * servers, so they do not apply to this server; its tool, resource and prompt scenarios expect
 * the suite's reference tools (test_simple_text, …), which a real server does not have.
 * Results: docs/connect-mcp.md "Conformance".
 */
import { spawn } from 'node:child_process';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { buildApp } from '../src/app.ts';
import { migrate, openDb } from '../src/db/index.ts';
import { runOp } from '../src/admin/ops.ts';
import { testConfig, type TestApp } from '../test/helpers/harness.ts';
import { rawFlow } from '../test/identity/oauth/helpers.ts';

const SCENARIOS = process.argv.slice(2).length
  ? process.argv.slice(2)
  : ['server-initialize', 'ping', 'tools-list', 'logging-set-level', 'completion-complete', 'resources-list', 'prompts-list', 'dns-rebinding-protection'];

const db = await openDb({});
await migrate(db);
const config = testConfig();
const app = await buildApp({ config, db, now: () => new Date() });
const url = await app.listen({ port: 0, host: '127.0.0.1' });
config.baseUrl = url;
await runOp(db, 'tenant.create', { slug: 'conformance' });
await runOp(db, 'user.create', { email: 'host@conformance.test', password: 'correct horse battery' });
await runOp(db, 'author.grant', { tenant: 'conformance', email: 'host@conformance.test' });
const flow = await rawFlow({ url } as TestApp, 'host@conformance.test', 'correct horse battery');
if (flow.status !== 200) throw new Error(`the OAuth flow failed: ${JSON.stringify(flow.body)}`);
console.log(`OAuth flow done: client ${flow.clientId}, scope ${flow.body.scope}`);

const target = new URL(url);
const proxy = createServer((req, res) => {
  const headers = { ...req.headers, authorization: `Bearer ${flow.body.access_token}` };
  const upstream = request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers }, (answer) => {
    res.writeHead(answer.statusCode ?? 502, answer.headers);
    answer.pipe(res);
  });
  upstream.on('error', () => res.writeHead(502).end());
  req.pipe(upstream);
});
await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
const proxied = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}/mcp`;
// To the suite the proxy is the service: its origin is the one a browser page of the service has
// (SVC_MCP_ALLOWED_ORIGINS). dns-rebinding-protection sends Host and Origin of the proxy's address
// and expects 2xx, then evil.example.com and expects 4xx; the proxy passes both headers unchanged.
config.mcpAllowedOrigins = [new URL(proxied).origin];

const outcome: Record<string, number | null> = {};
for (const scenario of SCENARIOS) {
  // Asynchronously: the app and the proxy answer from this process's event loop meanwhile.
  const child = spawn('npx', ['--yes', '@modelcontextprotocol/conformance@0.1.16', 'server', '--url', proxied, '--scenario', scenario], { stdio: 'inherit' });
  outcome[scenario] = await new Promise<number | null>((resolve) => child.on('exit', resolve));
}
console.log('\nexit status per scenario (0 = passed):', outcome);
proxy.close();
await app.close();
await db.close();
