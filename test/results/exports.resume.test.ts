/**
 * `svc-results export` when things go wrong (clients/js/src/export.ts, cli.ts): a streamed CSV or
 * NDJSON export cut mid-way keeps `<out>.partial` with a checkpoint, and `--resume` continues it —
 * the finished file is byte for byte the export of one go (rows sharing one updated_at, from one
 * transaction, too); a cut is a `ResultsApiError` naming the bytes received; a finished export
 * whose file is gone is exported again; `--out` is checked before any request; `| head` ends
 * quietly; Ctrl-C keeps a resumable partial file and exits 130; retries are announced and an unreachable service is named with its cause; `--help`
 * names SVC_API_KEY.
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ORDER_KEY, runExport } from '../../clients/js/src/export.ts';
import { COLUMNS } from '../../src/results/exports/columns.ts';
import { createResultsClient, ResultsApiError, type ResultsClient } from '../../clients/js/src/index.ts';
import { registry } from '../../src/telemetry/metrics.ts';
import { useApp, useFixture } from '../helpers/harness.ts';
import { bulkResults } from './exports-fixtures.ts';
import { seedTenant } from './fixtures.ts';

const CLI = fileURLToPath(new URL('../../clients/js/bin/svc-results.js', import.meta.url));
const t = useApp();
const g = useFixture(async () => {
  const tenant = await seedTenant(t, 'gamma');
  await bulkResults(t.db, tenant.activityIds[2]!, 6000); // one transaction: one updated_at for all
  return tenant;
});
let tmp: string;
beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'svc-resume-'));
});
afterAll(() => rm(tmp, { recursive: true, force: true }));

const quiet = () => {};
const clientOf = (fetchImpl?: (request: Request) => Promise<Response>): ResultsClient =>
  createResultsClient({ baseUrl: t.url, apiKey: g.key, ...(fetchImpl && { fetch: fetchImpl }) });

/** A fetch whose export bodies fail after `cut` bytes (a connection lost mid-stream), in small chunks. */
const cutAfter =
  (cut: number) =>
  async (request: Request): Promise<Response> => {
    const response = await fetch(request);
    if (!new URL(request.url).pathname.startsWith('/v1/exports/') || !response.body) return response;
    const reader = response.body.getReader();
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const { done, value } = await reader.read();
        if (done) return controller.close();
        for (let i = 0; i < value.length; i += 4096) {
          if (sent >= cut) {
            await reader.cancel();
            return controller.error(new TypeError('terminated', { cause: { code: 'UND_ERR_SOCKET', message: 'other side closed' } }));
          }
          const part = value.subarray(i, i + 4096);
          sent += part.length;
          controller.enqueue(part);
        }
      },
    });
    return new Response(body, { status: response.status, headers: response.headers });
  };

describe('a streamed export cut mid-way', () => {
  it.each(['ndjson', 'csv'] as const)('%s: keeps the partial file; --resume finishes it as one export in one go would', async (format) => {
    const whole = join(tmp, `whole.${format}`);
    await runExport(clientOf(), { resource: 'activity-results', format, out: whole, progress: quiet });
    const expected = await readFile(whole);
    expect(expected.length).toBeGreaterThan(600_000);

    const out = join(tmp, `cut.${format}`);
    const lines: string[] = [];
    const cut = runExport(clientOf(cutAfter(300_000)), {
      resource: 'activity-results',
      format,
      out,
      checkpointEveryMs: 0,
      progress: (l) => lines.push(l),
    });
    const err = await cut.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ResultsApiError);
    expect(err).toMatchObject({ code: 'network_error', status: 0 });
    const [, received] = /^the export was cut after (\d+) bytes: terminated \(UND_ERR_SOCKET: other side closed\)$/.exec((err as Error).message) ?? [];
    expect(Number(received), (err as Error).message).toBeGreaterThan(0);
    expect(Number(received)).toBeLessThanOrEqual(300_000);
    expect(lines.at(-1)).toMatch(/stopped after \d+ rows; .*\.partial is kept: run the same command with --resume/);
    expect(existsSync(out)).toBe(false);
    const state = JSON.parse(await readFile(`${out}.checkpoint.json`, 'utf8'));
    expect(state).toMatchObject({ stream: true, position: { at: expect.any(String), id: expect.any(String) } });
    expect(state.bytes).toBeGreaterThan(0);
    expect(state.bytes).toBeLessThanOrEqual(300_000);

    // Cut again while resuming, still among the rows it skips: the checkpoint stays where it was,
    // and the next resume goes on from there.
    const again = await runExport(clientOf(cutAfter(1_000)), {
      resource: 'activity-results',
      format,
      out,
      resume: true,
      checkpointEveryMs: 0,
      progress: quiet,
    }).catch((e: unknown) => e);
    expect(again).toMatchObject({ code: 'network_error' });
    const later = JSON.parse(await readFile(`${out}.checkpoint.json`, 'utf8'));
    expect(later).toMatchObject({ bytes: state.bytes, position: state.position });

    const requests: string[] = [];
    const resumed = await runExport(
      clientOf((r) => {
        requests.push(r.url);
        return fetch(r);
      }),
      { resource: 'activity-results', format, out, resume: true, progress: quiet },
    );
    // One request — or more: on a loaded machine the export left by the cut above may still be
    // ending, and a 429 is retried after its Retry-After.
    expect(requests.length).toBeGreaterThan(0);
    for (const url of requests) expect(url).toContain(`updated_since=${encodeURIComponent(later.position.at)}`);
    expect((await readFile(out)).equals(expected)).toBe(true);
    expect(resumed.rows).toBe(format === 'csv' ? expected.toString().trim().split('\r\n').length - 1 : expected.toString().trim().split('\n').length);
    expect(existsSync(`${out}.partial`)).toBe(false);
  });
});

describe('a stream that ends cleanly in the middle of a record (an HTTP/1.0 hop)', () => {
  it.each(['ndjson', 'csv'] as const)('%s: is an error, not a finished file', async (format) => {
    const halfway = createServer((_req, res) => {
      res.writeHead(200, { 'svc-consistent-through': '2026-11-27T00:00:00.000000Z' });
      res.end(
        format === 'csv' ? 'id,updated_at\r\n"1",2026-11-26T00:00:00.000000Z\r\n"2,2026' : '{"id":"1","updated_at":"2026-11-26T00:00:00.000000Z"}\n{"id":"2"',
      );
    });
    await new Promise<void>((resolve) => halfway.listen(0, '127.0.0.1', resolve));
    try {
      const out = join(tmp, `halfway.${format}`);
      const client = createResultsClient({ baseUrl: `http://127.0.0.1:${(halfway.address() as AddressInfo).port}`, apiKey: 'svc_x_y' });
      const err = await runExport(client, { resource: 'activity-results', format, out, progress: quiet }).catch((e: unknown) => e);
      expect(err).toMatchObject({ code: 'network_error', message: expect.stringMatching(/ended in the middle of a record/) });
      expect(existsSync(out)).toBe(false);
    } finally {
      halfway.closeAllConnections();
      await new Promise((resolve) => halfway.close(resolve));
    }
  });
});

describe('a stream cut before its first checkpoint', () => {
  it('starts over on --resume, of the rows it was asked for (its --updated-since)', async () => {
    const out = join(tmp, 'early.ndjson');
    const since = '2000-01-01T00:00:00Z';
    const err = await runExport(clientOf(cutAfter(1_000)), { resource: 'activity-results', format: 'ndjson', out, updatedSince: since, progress: quiet }).catch(
      (e: unknown) => e,
    );
    expect(err).toMatchObject({ code: 'network_error' });
    const lines: string[] = [];
    const requests: string[] = [];
    await runExport(
      clientOf((r) => {
        requests.push(r.url);
        return fetch(r);
      }),
      { resource: 'activity-results', format: 'ndjson', out, resume: true, progress: (l) => lines.push(l) },
    );
    expect(lines[0]).toMatch(/starting over: it stopped before its first checkpoint/);
    expect(requests.length).toBeGreaterThan(0); // more than one when a 429 (the cut export still ending) was retried
    for (const url of requests) expect(url).toContain(`updated_since=${encodeURIComponent(since)}`);
  });
});

describe('Ctrl-C', () => {
  it('stops a streamed export, keeps what can be resumed, says so, and exits 130', async () => {
    // A service that sends a row every 20 ms and never ends.
    const slow = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/x-ndjson', 'svc-consistent-through': '2026-11-27T00:00:00.000000Z' });
      let n = 0;
      const timer = setInterval(() => {
        n += 1;
        res.write(`{"id":"00000000-0000-7000-8000-${String(n).padStart(12, '0')}","updated_at":"2026-11-26T00:00:00.000000Z"}\n`);
      }, 20);
      res.on('close', () => clearInterval(timer));
    });
    await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve));
    try {
      const out = join(tmp, 'interrupted.ndjson');
      const baseUrl = `http://127.0.0.1:${(slow.address() as AddressInfo).port}`;
      const child = spawn(process.execPath, [CLI, 'export', 'activity-results', '--format', 'ndjson', '--out', out], {
        env: { ...process.env, SVC_BASE_URL: baseUrl, SVC_API_KEY: 'svc_x_y' },
      });
      let stderr = '';
      child.stderr.on('data', (d) => (stderr += d));
      const closed = new Promise((resolve) => child.on('close', resolve));
      // Once a checkpoint with a position is written (every second), interrupt.
      await expect
        .poll(async () => JSON.parse((await readFile(`${out}.checkpoint.json`, 'utf8').catch(() => '{}')) || '{}').position, { timeout: 15_000 })
        .toBeTruthy();
      child.kill('SIGINT');
      expect(await closed).toBe(130);
      expect(stderr).toMatch(/stopped after \d+ rows; .*interrupted\.ndjson\.partial is kept: run the same command with --resume/);
      expect(stderr).toMatch(/svc-results: interrupted\n$/);
      expect(existsSync(`${out}.partial`)).toBe(true);
      expect(existsSync(out)).toBe(false);
    } finally {
      slow.closeAllConnections();
      await new Promise((resolve) => slow.close(resolve));
    }
  });
});

describe('ORDER_KEY', () => {
  it("names fields every export's rows carry", () => {
    for (const [resource, key] of Object.entries(ORDER_KEY)) {
      const names = COLUMNS[resource as keyof typeof COLUMNS].map((c) => c.name);
      expect(names, resource).toContain(key!.at);
      expect(names, resource).toContain(key!.id);
    }
  });
});

describe('svc-results export: files and messages', () => {
  const env = () => ({ ...process.env, SVC_BASE_URL: t.url, SVC_API_KEY: g.key });
  const run = (args: string[], extra: Record<string, string> = {}) =>
    promisify(execFile)(process.execPath, [CLI, ...args], { env: { ...env(), ...extra } }).then(
      ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
      (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
    );

  it('exports again a finished export whose file is gone, instead of calling it complete', async () => {
    const out = join(tmp, 'gone.ndjson');
    expect((await run(['export', 'progress', '--format', 'ndjson', '--out', out])).code).toBe(0);
    const first = await readFile(out);
    await rm(out);
    const again = await run(['export', 'progress', '--format', 'ndjson', '--out', out, '--resume']);
    expect(again.code).toBe(0);
    expect(again.stderr).toMatch(/missing or has changed .* exporting it again/);
    expect(await readFile(out)).toEqual(first);
  });

  it('refuses --out in a missing folder, or a folder, before any request; names --out', async () => {
    const exportsStarted = async () =>
      [...(await registry.metrics()).matchAll(/svc_exports_total\{export="progress",format="csv",outcome="\w+"\} (\d+)/g)].reduce(
        (n, m) => n + Number(m[1]),
        0,
      );
    const before = await exportsStarted();
    const missing = await run(['export', 'progress', '--format', 'csv', '--out', join(tmp, 'no', 'such', 'a.csv')]);
    expect(missing).toMatchObject({ code: 1, stderr: expect.stringMatching(/--out .*a\.csv: its folder .*such does not exist/) });
    const folder = await run(['export', 'progress', '--format', 'csv', '--out', tmp]);
    expect(folder).toMatchObject({ code: 1, stderr: expect.stringMatching(/is a folder/) });
    expect(await exportsStarted()).toBe(before);
  });

  it('ends quietly when the reader of its output goes away (| head)', async () => {
    const child = spawn(process.execPath, [CLI, 'export', 'activity-results', '--format', 'ndjson'], { env: env() });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    await new Promise((resolve) => child.stdout.once('data', resolve));
    child.stdout.destroy(); // head -1 has its line
    const code = await new Promise((resolve) => child.on('close', resolve));
    expect(stderr).not.toMatch(/EPIPE|Error|at /);
    expect(code).toBe(0);
  });

  it('--help names the environment it reads', async () => {
    for (const args of [['--help'], ['export', '--help']]) {
      const { stdout } = await run(args);
      expect(stdout, args.join(' ')).toMatch(/SVC_API_KEY .*required/);
      expect(stdout).toMatch(/SVC_BASE_URL/);
    }
    const nokey = await run(['export', 'progress', '--format', 'csv'], { SVC_API_KEY: '' });
    expect(nokey).toMatchObject({ code: 1, stderr: 'svc-results: set SVC_API_KEY to a results API key (svc_…)\n' });
  });
});

describe('an unreachable service', () => {
  it('announces each retry with its cause, then names the address', async () => {
    const retries: string[] = [];
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve)); // nothing listens there now
    const client = createResultsClient({
      baseUrl: `http://127.0.0.1:${port}`,
      apiKey: 'svc_x_y',
      sleep: async () => {},
      onRetry: ({ attempt, waitSeconds, reason }) => retries.push(`${attempt} ${waitSeconds} ${reason}`),
    });
    const err = await client.page('progress').catch((e: unknown) => e);
    const refused = `fetch failed (connect ECONNREFUSED 127.0.0.1:${port})`;
    expect(retries).toEqual([1, 2, 3, 4, 5].map((n) => `${n} ${2 ** (n - 1)} ${refused}`));
    expect(err).toMatchObject({ code: 'network_error', status: 0 });
    expect((err as Error).message).toBe(`cannot reach the service at http://127.0.0.1:${port}: ${refused}`);
  });
});
