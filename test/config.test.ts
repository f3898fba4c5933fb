/** Configuration is validated at boot: bad or dangerous values stop the service with a clear message. */
import { mkdtempSync, statSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.ts';

const server = {
  DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/x',
  SVC_JWT_SECRET: 'k8Jd0s9QmZ2v7Xw4Lr1Tn6Bc3Yp5Hf0Ga8Ue2Ri9Ow7',
  SVC_ANON_KEY: 'sb_publishable_Q2w9Er4Ty7Ui1Op3',
  SVC_SERVICE_ROLE_KEY: 'sb_secret_Zx5Cv8Bn2Mm4Lk6Jh9Gf',
};

describe('loadConfig', () => {
  it('takes server-mode secrets from the environment', () => {
    const config = loadConfig(server);
    expect(config).toMatchObject({ databaseUrl: server.DATABASE_URL, anonKey: server.SVC_ANON_KEY, port: 8787, host: '127.0.0.1' });
    expect(config.dataDir).toBeUndefined();
  });

  it('reads SVC_TRUST_PROXY as Fastify takes it', () => {
    expect(loadConfig(server).trustProxy).toBe(false);
    expect(loadConfig({ ...server, SVC_TRUST_PROXY: 'true' }).trustProxy).toBe(true);
    expect(loadConfig({ ...server, SVC_TRUST_PROXY: '2' }).trustProxy).toBe(2);
    expect(loadConfig({ ...server, SVC_TRUST_PROXY: '10.0.0.0/8, 127.0.0.1' }).trustProxy).toBe('10.0.0.0/8,127.0.0.1');
    expect(() => loadConfig({ ...server, SVC_TRUST_PROXY: 'everyone' })).toThrow(/SVC_TRUST_PROXY/);
  });

  it('sizes the PostgreSQL pool at twice the cores (at least 4) unless SVC_DB_POOL_SIZE says otherwise', () => {
    expect(loadConfig(server).dbPoolSize).toBe(Math.max(4, 2 * availableParallelism()));
    expect(loadConfig({ ...server, SVC_DB_POOL_SIZE: '12' }).dbPoolSize).toBe(12);
  });

  it('reads the shutdown delay and deadline in seconds (defaults 5 and 20)', () => {
    expect(loadConfig(server).shutdown).toEqual({ delayMs: 5000, timeoutMs: 20_000 });
    expect(loadConfig({ ...server, SVC_SHUTDOWN_DELAY: '0.5', SVC_SHUTDOWN_TIMEOUT: '4' }).shutdown).toEqual({ delayMs: 500, timeoutMs: 4000 });
  });

  it('reads the database bounds in seconds (decimals allowed; a statement timeout of 0 means none)', () => {
    expect(loadConfig(server)).toMatchObject({ dbAcquireTimeoutMs: 5000, dbStatementTimeoutMs: 30_000 });
    expect(loadConfig({ ...server, SVC_DB_ACQUIRE_TIMEOUT: '1.5', SVC_DB_STATEMENT_TIMEOUT: '0' })).toMatchObject({
      dbAcquireTimeoutMs: 1500,
      dbStatementTimeoutMs: 0,
    });
  });

  it.each([
    ['a missing secret', { SVC_JWT_SECRET: undefined }, /SVC_JWT_SECRET is required/],
    ['a short secret', { SVC_JWT_SECRET: 'short' }, /at least 32/],
    ["Supabase's demo secret", { SVC_JWT_SECRET: 'super-secret-jwt-token-with-at-least-32-characters-long' }, /well-known/],
    ['a JWT as a key', { SVC_ANON_KEY: 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.e30.x' }, /well-known example value or a JWT/],
    ['a low-entropy secret', { SVC_JWT_SECRET: 'a'.repeat(40) }, /not random enough/],
    ['the anon key equal to the service-role key', { SVC_ANON_KEY: server.SVC_SERVICE_ROLE_KEY }, /must all differ/],
    ['a bad port', { PORT: '70000' }, /PORT/],
    ['a pool of one connection', { SVC_DB_POOL_SIZE: '1' }, /SVC_DB_POOL_SIZE/],
    ['an acquisition timeout of 0 (wait forever)', { SVC_DB_ACQUIRE_TIMEOUT: '0' }, /SVC_DB_ACQUIRE_TIMEOUT: must be at least 0.1 seconds/],
    ['an acquisition timeout in words', { SVC_DB_ACQUIRE_TIMEOUT: 'soon' }, /SVC_DB_ACQUIRE_TIMEOUT: must be a number of seconds/],
    ['a negative statement timeout', { SVC_DB_STATEMENT_TIMEOUT: '-1' }, /SVC_DB_STATEMENT_TIMEOUT: must be a number of seconds/],
    ['a statement timeout with a unit', { SVC_DB_STATEMENT_TIMEOUT: '30s' }, /SVC_DB_STATEMENT_TIMEOUT: must be a number of seconds/],
    ['a statement timeout of a millisecond', { SVC_DB_STATEMENT_TIMEOUT: '0.001' }, /SVC_DB_STATEMENT_TIMEOUT: must be 0 \(no limit\) or at least 0.1/],
    ['an hour-long acquisition timeout', { SVC_DB_ACQUIRE_TIMEOUT: '3600' }, /SVC_DB_ACQUIRE_TIMEOUT: must be at most 60 seconds/],
    ['half a judge', { SVC_JUDGE_BASE_URL: 'http://127.0.0.1:9/v1' }, /SVC_JUDGE_BASE_URL and SVC_JUDGE_MODEL/],
    ['a negative shutdown delay', { SVC_SHUTDOWN_DELAY: '-1' }, /SVC_SHUTDOWN_DELAY/],
    ['a shutdown delay in words', { SVC_SHUTDOWN_DELAY: 'five' }, /SVC_SHUTDOWN_DELAY/],
    ['no shutdown deadline', { SVC_SHUTDOWN_TIMEOUT: '0' }, /SVC_SHUTDOWN_TIMEOUT/],
    ['a shutdown deadline in words', { SVC_SHUTDOWN_TIMEOUT: '20s' }, /SVC_SHUTDOWN_TIMEOUT/],
    [
      'a shutdown delay past the deadline',
      { SVC_SHUTDOWN_DELAY: '30', SVC_SHUTDOWN_TIMEOUT: '20' },
      /SVC_SHUTDOWN_DELAY must be less than SVC_SHUTDOWN_TIMEOUT/,
    ],
  ])('refuses %s', (_name, change, message) => {
    expect(() => loadConfig({ ...server, ...change })).toThrow(ConfigError);
    expect(() => loadConfig({ ...server, ...change })).toThrow(message);
  });

  it('generates embedded secrets once, private to the owner, and lets the environment override them', () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-config-'));
    const first = loadConfig({ SVC_DATA_DIR: dir });
    expect(loadConfig({ SVC_DATA_DIR: dir }).jwtSecret).toBe(first.jwtSecret);
    expect(statSync(join(dir, 'secrets.json')).mode & 0o777).toBe(0o600);
    expect(new Set([first.jwtSecret, first.anonKey, first.serviceRoleKey]).size).toBe(3);
    expect(loadConfig({ SVC_DATA_DIR: dir, SVC_ANON_KEY: server.SVC_ANON_KEY }).anonKey).toBe(server.SVC_ANON_KEY);
    expect(() => loadConfig({ SVC_DATA_DIR: dir, SVC_ANON_KEY: first.serviceRoleKey })).toThrow(/must all differ/);
  });
});
