/**
 * The log's format (issue #25, src/telemetry/log-format.ts): pretty on a terminal, JSON elsewhere,
 * and `SVC_LOG_FORMAT=json|pretty` chooses whatever stdout is. A real server process writes to a
 * pipe (not a terminal): JSON by default (every other server-process test reads it so), pretty lines
 * with SVC_LOG_FORMAT=pretty.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.ts';
import { resolveLogFormat } from '../../src/telemetry/log-format.ts';
import { killAll, serverDatabase, startServerProcess, type ServerDatabase, type ServerProcess } from '../helpers/server-process.ts';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

describe('choosing the format', () => {
  it('is pretty on a terminal and JSON elsewhere when SVC_LOG_FORMAT is unset', () => {
    expect(resolveLogFormat(undefined, true)).toBe('pretty');
    expect(resolveLogFormat(undefined, false)).toBe('json');
  });

  it('follows SVC_LOG_FORMAT whatever stdout is', () => {
    expect(resolveLogFormat('json', true)).toBe('json');
    expect(resolveLogFormat('pretty', false)).toBe('pretty');
  });

  it('reads SVC_LOG_FORMAT from the environment and refuses another value, naming the variable', () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-logfmt-'));
    try {
      expect(loadConfig({ SVC_DATA_DIR: dir, SVC_LOG_FORMAT: 'pretty' }).logFormat).toBe('pretty');
      expect(loadConfig({ SVC_DATA_DIR: dir, SVC_LOG_FORMAT: 'json' }).logFormat).toBe('json');
      expect(loadConfig({ SVC_DATA_DIR: dir }).logFormat).toBeUndefined();
      expect(() => loadConfig({ SVC_DATA_DIR: dir, SVC_LOG_FORMAT: 'yaml' })).toThrow(/^SVC_LOG_FORMAT: /);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('a server process writing to a pipe', () => {
  let database: ServerDatabase | undefined;
  let server: ServerProcess | undefined;
  afterAll(async () => {
    killAll(server ? [server] : []);
    await database?.drop();
  });

  it('writes pretty lines with SVC_LOG_FORMAT=pretty: time, level, message and fields on one line, no JSON', async () => {
    database = await serverDatabase();
    server = await startServerProcess({ ...database.env, SVC_LOG_FORMAT: 'pretty', NO_COLOR: '1' });
    await fetch(`${server.url}/v1/health`, { headers: { 'x-request-id': 'pretty-1' } });
    await expect.poll(() => server!.output(), { timeout: 10_000 }).toMatch(/pretty-1/);
    const lines = server.output().split('\n').filter(Boolean);
    expect(lines.some((l) => l.startsWith('{'))).toBe(false);
    expect(lines.find((l) => l.includes('service listening on'))).toMatch(
      /^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: service listening on http:\/\/127\.0\.0\.1:\d+ \{.*"backend":/,
    );
    expect(lines.find((l) => l.includes('pretty-1'))).toMatch(/^\[[\d:.]+\] INFO: request \{.*"route":"\/v1\/health".*"status":200/);
  }, 60_000);
});
