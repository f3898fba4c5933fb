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
      judgeRetryMaxDelaySeconds: 3600,
      judgeMaxAgeSeconds: 86_400,
      learnerRate: 10,
      learnerWindowSeconds: 60,
      tenantBudget: { callsPerHour: 1000, callsPerDay: 10_000, tokensPerHour: 5_000_000, tokensPerDay: 50_000_000 },
      jwksMaxAgeSeconds: 300,
      judgeLeaseSeconds: 30,
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
      SVC_JUDGE_RETRY_MAX_DELAY: '600',
      SVC_JUDGE_MAX_AGE: '7200',
      SVC_JUDGE_LEARNER_RATE: '3',
      SVC_JUDGE_LEARNER_WINDOW: '30',
      SVC_JUDGE_TENANT_CALLS_PER_HOUR: '5',
      SVC_JUDGE_TENANT_CALLS_PER_DAY: '50',
      SVC_JUDGE_TENANT_TOKENS_PER_HOUR: '10000',
      SVC_JUDGE_TENANT_TOKENS_PER_DAY: '100000',
      SVC_IDP_JWKS_MAX_AGE: '60',
      SVC_JUDGE_LEASE: '12',
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
      judgeRetryMaxDelaySeconds: 600,
      judgeMaxAgeSeconds: 7200,
      learnerRate: 3,
      learnerWindowSeconds: 30,
      tenantBudget: { callsPerHour: 5, callsPerDay: 50, tokensPerHour: 10_000, tokensPerDay: 100_000 },
      jwksMaxAgeSeconds: 60,
      judgeLeaseSeconds: 12,
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
    // Bounds of issue #10: nonsense values are refused at boot.
    ['SVC_JUDGE_LEARNER_RATE', '0'],
    ['SVC_JUDGE_LEARNER_RATE', '-5'],
    ['SVC_JUDGE_LEARNER_RATE', 'lots'],
    ['SVC_JUDGE_LEARNER_WINDOW', '0'],
    ['SVC_JUDGE_TENANT_CALLS_PER_HOUR', '0'],
    ['SVC_JUDGE_TENANT_CALLS_PER_DAY', '-1'],
    ['SVC_JUDGE_TENANT_TOKENS_PER_HOUR', 'unlimited'],
    ['SVC_JUDGE_TENANT_TOKENS_PER_DAY', '1.5'],
    ['SVC_JUDGE_MAX_AGE', '0'],
    ['SVC_JUDGE_MAX_AGE', 'a day'],
    ['SVC_JUDGE_RETRY_MAX_DELAY', '-1'],
    ['SVC_JUDGE_MAX_TOKENS', '0'],
    ['SVC_JUDGE_TOKEN_PARAM', 'max_output'],
    ['SVC_JUDGE_TEMPERATURE', '-1'],
    ['SVC_JUDGE_SEED', 'random'],
    ['SVC_IDP_JWKS_MAX_AGE', '0'],
    ['SVC_JUDGE_LEASE', '1'],
    ['SVC_JUDGE_LEASE', 'forever'],
  ])('refuses %s=%s, naming the variable', (name, value) => {
    expect(() => loadConfig({ ...base(), [name]: value })).toThrow(ConfigError);
    expect(() => loadConfig({ ...base(), [name]: value })).toThrow(new RegExp(name));
  });

  it.each([
    [{ SVC_JUDGE_TENANT_CALLS_PER_HOUR: '100', SVC_JUDGE_TENANT_CALLS_PER_DAY: '10' }, /SVC_JUDGE_TENANT_CALLS_PER_HOUR/],
    [{ SVC_JUDGE_TENANT_TOKENS_PER_HOUR: '100000', SVC_JUDGE_TENANT_TOKENS_PER_DAY: '10000' }, /SVC_JUDGE_TENANT_TOKENS_PER_HOUR/],
    [{ SVC_JUDGE_RETRY_DELAY: '600', SVC_JUDGE_RETRY_MAX_DELAY: '60' }, /SVC_JUDGE_RETRY_MAX_DELAY/],
  ])('refuses budgets and delays that contradict each other (%j)', (vars, message) => {
    expect(() => loadConfig({ ...base(), ...vars })).toThrow(message);
  });

  it('sends temperature 0, a seed and a token cap by default', () => {
    const config = loadConfig({ ...base(), SVC_JUDGE_BASE_URL: 'http://127.0.0.1:1/v1', SVC_JUDGE_MODEL: 'm' });
    expect(config.judge).toMatchObject({ maxTokens: 2048, tokenParam: 'max_completion_tokens', temperature: 0, seed: expect.any(Number) });
  });
});
