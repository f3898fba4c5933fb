/** The embed judge's settings in `loadConfig` (src/config.ts): defaults, parsing, bounds. */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.ts';

const base = () => ({ SVC_DATA_DIR: mkdtempSync(join(tmpdir(), 'svc-embed-config-')) });

describe('embed settings', () => {
  it('has documented defaults', () => {
    expect(loadConfig(base()).embed).toEqual({
      judgeWaitMs: 20_000,
      judgeAttempts: 3,
      judgeRetryDelaySeconds: 60,
      judgeConcurrency: 4,
      judgePollSeconds: 2,
      judgeVision: true,
      fetchTimeoutMs: 15_000,
      fetchMaxBytes: 20 * 1024 * 1024,
      judgeInputBytes: 200_000,
    });
  });

  it('reads SVC_JUDGE_* and SVC_FETCH_* from the environment', () => {
    const config = loadConfig({
      ...base(),
      SVC_JUDGE_WAIT: '0.5',
      SVC_JUDGE_ATTEMPTS: '5',
      SVC_JUDGE_RETRY_DELAY: '10',
      SVC_JUDGE_CONCURRENCY: '16',
      SVC_JUDGE_POLL: '0.5',
      SVC_JUDGE_VISION: '0',
      SVC_JUDGE_INPUT_BYTES: '65536',
      SVC_FETCH_TIMEOUT: '3',
      SVC_FETCH_MAX_BYTES: '1048576',
    });
    expect(config.embed).toEqual({
      judgeWaitMs: 500,
      judgeAttempts: 5,
      judgeRetryDelaySeconds: 10,
      judgeConcurrency: 16,
      judgePollSeconds: 0.5,
      judgeVision: false,
      fetchTimeoutMs: 3000,
      fetchMaxBytes: 1_048_576,
      judgeInputBytes: 65_536,
    });
  });

  it.each([
    ['SVC_JUDGE_ATTEMPTS', '0'],
    ['SVC_JUDGE_CONCURRENCY', '1000'],
    ['SVC_JUDGE_POLL', '0.1'],
    ['SVC_JUDGE_RETRY_DELAY', '0'],
    ['SVC_JUDGE_VISION', 'maybe'],
    ['SVC_FETCH_MAX_BYTES', '10'],
    ['SVC_JUDGE_WAIT', 'soon'],
  ])('refuses %s=%s, naming the variable', (name, value) => {
    expect(() => loadConfig({ ...base(), [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ ...base(), [name]: value })).toThrow(new RegExp(name));
  });
});
