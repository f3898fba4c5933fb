/**
 * Bounded shutdown (issue #11, src/http/shutdown.ts) of real server processes, with the delay
 * and the deadline set small (1 s, 4 s from the signal): readiness fails at once while requests
 * are still served; an idle keep-alive client does not hold the process; a slow request under
 * way finishes, then the process exits 0; a request still running at the deadline is cut and the
 * process exits 0; a second signal exits at once with 1 (the same signal twice at once is one).
 */
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPEAT_MS } from '../../src/http/shutdown.ts';
import { killAll, serverDatabase, startServerProcess, type ServerDatabase, type ServerProcess } from '../helpers/server-process.ts';

const DELAY_MS = 1000;
const TIMEOUT_MS = 4000;
/** The first test's server's delay. */
const FIRST_DELAY_MS = 2000;
const SHUTDOWN = { SVC_SHUTDOWN_DELAY: String(DELAY_MS / 1000), SVC_SHUTDOWN_TIMEOUT: String(TIMEOUT_MS / 1000) };

interface Answer {
  status: number;
  connection: string | undefined;
  body: string;
}

/** Send a request; `body` is written in two parts when `holdBody` is given (the second when it settles). */
function send(url: string, options: { agent?: http.Agent; method?: string; body?: string; holdBody?: Promise<unknown> } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const body = options.body ?? '';
    const req = http.request(
      url,
      {
        method: options.method ?? 'GET',
        agent: options.agent,
        headers: options.body === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        let text = '';
        res.on('data', (chunk) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode!, connection: res.headers.connection, body: text }));
      },
    );
    req.on('error', reject);
    if (!options.holdBody) return void req.end(body);
    req.write(body.slice(0, 5));
    void options.holdBody.then(() => req.end(body.slice(5)));
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Signal `server`; resolves with its exit code and the milliseconds from the signal to the exit. */
async function signal(server: ServerProcess, name: NodeJS.Signals = 'SIGTERM'): Promise<{ code: number | null; ms: number }> {
  const sent = Date.now();
  server.child.kill(name);
  const { code } = await server.exited;
  return { code, ms: Date.now() - sent };
}

describe('shutdown on SIGTERM', () => {
  const databases: ServerDatabase[] = [];
  let servers: ServerProcess[] = [];

  beforeAll(async () => {
    for (let i = 0; i < 4; i++) databases.push(await serverDatabase());
    // The first server waits 2 s before closing its listener (two requests must land in the delay
    // on a loaded runner); the last 3 s: its second signal comes first.
    const delays: Record<number, string> = { 0: String(FIRST_DELAY_MS / 1000), 3: '3' };
    servers = await Promise.all(databases.map((d, i) => startServerProcess({ ...d.env, ...SHUTDOWN, ...(delays[i] && { SVC_SHUTDOWN_DELAY: delays[i] }) })));
  }, 120_000);
  afterAll(async () => {
    killAll(servers);
    await Promise.all(servers.map((s) => s.exited));
    await Promise.all(databases.map((d) => d.drop()));
  });

  it('fails readiness at once, still serves during the delay, and an idle keep-alive client does not hold it', async () => {
    const server = servers[0]!;
    const agent = new http.Agent({ keepAlive: true });
    const ready = await send(`${server.url}/readyz`, { agent });
    expect(ready.status).toBe(200);
    expect(JSON.parse(ready.body)).toEqual({ status: 'ready', checks: { database: 'ok', migrations: 'ok', queue: 'ok', shutdown: 'ok' } });
    expect(ready.connection).toBe('keep-alive'); // the agent's connection stays open, idle

    const exit = signal(server);
    // At once: the first answer after the signal is handled (the child may take a moment to get it).
    let draining = await send(`${server.url}/readyz`);
    for (let i = 0; draining.status === 200 && i < 20; i++) draining = await sleep(50).then(() => send(`${server.url}/readyz`));
    expect(draining.status).toBe(503);
    expect(JSON.parse(draining.body)).toEqual({
      status: 'unavailable',
      failing: ['shutdown'],
      checks: { database: 'ok', migrations: 'ok', queue: 'ok', shutdown: 'shutting down' },
    });
    const served = await send(`${server.url}/livez`);
    expect(served).toMatchObject({ status: 200, connection: 'close' });

    const { code, ms } = await exit;
    expect(code).toBe(0);
    expect(ms).toBeGreaterThanOrEqual(FIRST_DELAY_MS - 100);
    expect(ms).toBeLessThan(TIMEOUT_MS);
    agent.destroy();
  });

  it('lets a slow request under way finish, then exits 0 before the deadline', async () => {
    const server = servers[1]!;
    const agent = new http.Agent({ keepAlive: true });
    const finishBody = sleep(DELAY_MS + 1000); // the client sends the rest of its body after the listener closed
    const answer = send(`${server.url}/v1/embed/session`, {
      agent,
      method: 'POST',
      body: JSON.stringify({ idp_token: 'not-a-token', tenant: 'acme' }),
      holdBody: finishBody,
    });
    await sleep(200);
    const exit = signal(server);
    const { status, connection, body } = await answer;
    expect(status).toBe(401); // the request ran to its end: the tenant is unknown
    expect(JSON.parse(body).error.code).toBe('unauthorized');
    expect(connection).toBe('close');
    const { code, ms } = await exit;
    expect(code).toBe(0);
    expect(ms).toBeLessThan(TIMEOUT_MS);
    agent.destroy();
  });

  it('cuts a request still running at the deadline, then exits 0', async () => {
    const server = servers[2]!;
    const never = new Promise(() => {});
    const answer = send(`${server.url}/v1/embed/session`, { method: 'POST', body: '{"idp_token":"x","tenant":"acme"}', holdBody: never }).then(
      () => 'answered',
      (err: Error) => err.message,
    );
    await sleep(200);
    const { code, ms } = await signal(server);
    expect(await answer).toMatch(/socket hang up|ECONNRESET/);
    expect(code).toBe(0);
    expect(ms).toBeGreaterThanOrEqual(TIMEOUT_MS - 100);
    expect(ms).toBeLessThan(TIMEOUT_MS + 3000);
  });

  it('exits at once, with 1, on a second signal', async () => {
    const server = servers[3]!;
    const sent = Date.now();
    server.child.kill('SIGTERM');
    server.child.kill('SIGTERM'); // the same stop delivered twice (npm forwarding a group's signal): not a second one
    await sleep(REPEAT_MS + 500);
    expect(server.child.exitCode).toBeNull();
    const { code } = await signal(server);
    expect(code).toBe(1);
    expect(Date.now() - sent).toBeLessThan(3000); // before the first signal's delay was over
  });
});
