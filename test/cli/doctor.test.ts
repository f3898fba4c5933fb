/**
 * `svc doctor` (issue #25, src/admin/doctor/), run as an operator runs it: the real `bin/svc.js`
 * in its own process against a store of the suite's backend, with the loopback model as the judge
 * and the loopback IdP as a tenant's provider.
 *
 * Healthy stack: every finding ok, exit 0. Then one fault each — a stopped throwaway PostgreSQL
 * (test/helpers/pg-cluster.ts, never the shared server), an unreachable judge, a tenant whose
 * discovery fails, a weak JWT secret, SVC_FETCH_ALLOW_PRIVATE in production, the outbound guard on
 * a loopback IdP — is an error (or warning) naming the fix, exit 1 on an error. Bad input: an
 * unreadable config (--env file, the embedded secrets file), a URL that is not a URL, a data
 * folder held by a running server: a clear message, never a stack trace.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Finding } from '../../src/admin/doctor/index.ts';
import { backend, useFixture, useServer } from '../helpers/harness.ts';
import { clusterUnavailable, createCluster, createSvcDb, freePort } from '../helpers/pg-cluster.ts';
import { killAll, startServerProcess, type ServerProcess } from '../helpers/server-process.ts';
import { cliStore, runSvc } from '../helpers/svc-cli.ts';
import { startTestIdp } from '../helpers/test-idp.ts';
import { startTestModel } from '../helpers/test-model.ts';

/** Strong secrets a PostgreSQL-backed service needs (embedded stores make their own). */
const SECRETS = {
  SVC_JWT_SECRET: 'dQ7v-Kx2mPz9LrW4tYc8NbH3sFj6GaE1uVo5iZq0XwRkTn_BeLp7UsMh2JdCy4Af',
  SVC_ANON_KEY: 'sb_publishable_Hn3kLq8zVx2Rm5tPw9Yc',
  SVC_SERVICE_ROLE_KEY: 'sb_secret_Jf7Qm2Xz9Kp4Lw8Rt3Vn6Yb1Hc5Gd0S',
};

const idp = useServer(() => startTestIdp());
const model = useServer(() => startTestModel());
const store = useFixture(() => cliStore('doctor'), { release: (s) => s.cleanup() });
/** The healthy stack's environment: the store, the judge, the loopback IdP allowed through the outbound guard. */
let healthy: Record<string, string>;

beforeAll(async () => {
  healthy = {
    ...store.env,
    ...(backend === 'postgres' ? SECRETS : {}),
    SVC_JUDGE_BASE_URL: model.baseUrl,
    SVC_JUDGE_MODEL: 'judge-model',
    SVC_JUDGE_API_KEY: 'test-key',
    SVC_FETCH_ALLOW_PRIVATE: '1',
  };
  expect((await runSvc(store.env, 'tenant', 'create', 'acme')).code).toBe(0);
  expect((await runSvc(store.env, 'idp', 'set', 'acme', '--issuer', idp.issuer, '--discovery')).code).toBe(0);
}, 120_000);

/** `svc doctor --json` with `env`: exit code, findings, stderr. */
async function doctor(env: Record<string, string>, ...args: string[]) {
  const run = await runSvc(env, 'doctor', '--json', '--timeout', '3', ...args);
  expect(run.stderr).not.toMatch(/\n\s+at /); // never a stack trace
  const body = JSON.parse(run.stdout) as { ok: boolean; findings: Finding[] };
  return { code: run.code, ok: body.ok, findings: body.findings, stderr: run.stderr };
}
const finding = (findings: Finding[], check: string) => findings.find((f) => f.check === check);

describe('a healthy stack', () => {
  it("is all ok: config, secrets, outbound, database, migrations, roles, judge, the tenant's IdP; exit 0", async () => {
    const { code, ok, findings } = await doctor(healthy);
    expect(findings.filter((f) => f.status !== 'ok')).toEqual([]);
    expect(ok).toBe(true);
    expect(code).toBe(0);
    expect(findings.map((f) => f.check)).toEqual(expect.arrayContaining(['config', 'outbound', 'database', 'migrations', 'roles', 'judge', 'idp acme']));
    expect(finding(findings, 'judge')!.message).toMatch(/knows the model judge-model/);
    expect(finding(findings, 'idp acme')!.message).toMatch(/discovery and JWKS answer \(1 key\(s\)\)/);
    expect(idp.discoveryRequests).toBeGreaterThan(0);
  }, 60_000);

  it('prints one line per finding without --json', async () => {
    const run = await runSvc(healthy, 'doctor');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^ok +database +reachable: /m);
    expect(run.stdout).toMatch(/0 error\(s\), 0 warning\(s\)\s*$/);
  }, 60_000);
});

describe('faults, each with its fix', () => {
  it('an unreachable judge endpoint: error naming SVC_JUDGE_BASE_URL, exit 1', async () => {
    const { code, findings } = await doctor({ ...healthy, SVC_JUDGE_BASE_URL: `http://127.0.0.1:${await freePort()}/v1` });
    expect(code).toBe(1);
    expect(finding(findings, 'judge')).toMatchObject({
      status: 'error',
      message: expect.stringMatching(/cannot reach the judge at .* \(ECONNREFUSED\)/),
      fix: expect.stringMatching(/SVC_JUDGE_BASE_URL/),
    });
  }, 60_000);

  it('a tenant whose IdP discovery fails: error for that tenant only, naming `svc idp set`', async () => {
    const gone = `http://127.0.0.1:${await freePort()}`;
    expect((await runSvc(store.env, 'tenant', 'create', 'broken')).code).toBe(0);
    expect((await runSvc(store.env, 'idp', 'set', 'broken', '--issuer', gone, '--discovery')).code).toBe(0);
    try {
      const { code, findings } = await doctor(healthy);
      expect(code).toBe(1);
      expect(finding(findings, 'idp broken')).toMatchObject({
        status: 'error',
        message: expect.stringMatching(
          new RegExp(`^discovery ${gone}/.well-known/openid-configuration failed: the page could not be reached \\(ECONNREFUSED\\)`),
        ),
        fix: expect.stringMatching(/svc idp set broken --issuer/),
      });
      expect(finding(findings, 'idp acme')!.status).toBe('ok');
    } finally {
      await runSvc(store.env, 'idp', 'set', 'broken', '--issuer', idp.issuer, '--jwks-url', idp.jwksUrl);
    }
  }, 90_000);

  it('fetches the IdP through the outbound guard: a loopback IdP is refused without SVC_FETCH_ALLOW_PRIVATE', async () => {
    const { SVC_FETCH_ALLOW_PRIVATE: _allowed, ...guarded } = healthy;
    const { code, findings } = await doctor(guarded);
    expect(code).toBe(1);
    expect(finding(findings, 'idp acme')).toMatchObject({ status: 'error', message: expect.stringMatching(/^discovery .* failed: the URL /) });
  }, 60_000);

  it('SVC_FETCH_ALLOW_PRIVATE with NODE_ENV=production: a warning to unset it', async () => {
    const { findings } = await doctor({ ...healthy, NODE_ENV: 'production' });
    expect(finding(findings, 'outbound')).toMatchObject({ status: 'warning', fix: expect.stringMatching(/unset SVC_FETCH_ALLOW_PRIVATE/) });
  }, 60_000);

  it('a weak JWT secret: error with how to make a strong one; a merely short-of-256-bit one: a warning', async () => {
    const weak = await doctor({ ...healthy, SVC_JWT_SECRET: 'abababababababababababababababababab' });
    expect(weak.code).toBe(1);
    expect(finding(weak.findings, 'secret SVC_JWT_SECRET')).toMatchObject({
      status: 'error',
      message: 'SVC_JWT_SECRET is not random enough (about 36 bits)',
      fix: expect.stringMatching(/openssl rand -base64 48/),
    });
    const known = await doctor({ ...healthy, SVC_JWT_SECRET: 'super-secret-jwt-token-with-at-least-32-characters-long' });
    expect(finding(known.findings, 'secret SVC_JWT_SECRET')).toMatchObject({ status: 'error', message: expect.stringMatching(/well-known example value/) });
    const short = await doctor({ ...healthy, SVC_JWT_SECRET: 'Kx2mPz9LrW4tYc8NbH3sFj6GaE1uVo5i' });
    expect(finding(short.findings, 'secret SVC_JWT_SECRET')).toMatchObject({ status: 'warning', message: expect.stringMatching(/256 or more are advised/) });
  }, 90_000);

  describe.skipIf(clusterUnavailable)('a stopped PostgreSQL', () => {
    it('is an error naming the server and the fix; the checks needing it say so', async () => {
      const cluster = await createCluster();
      try {
        const db = await createSvcDb(cluster);
        await db.close();
        const url = cluster.url('svc');
        expect((await doctor({ DATABASE_URL: url, ...SECRETS })).findings.filter((f) => f.status !== 'ok')).toEqual([]);
        await cluster.stop();
        const { code, findings } = await doctor({ DATABASE_URL: url, ...SECRETS });
        expect(code).toBe(1);
        expect(finding(findings, 'database')).toEqual({
          check: 'database',
          status: 'error',
          message: `cannot reach PostgreSQL ${url} (ECONNREFUSED)`,
          fix: 'start the database server, or correct DATABASE_URL (host, port, user, password, database name)',
        });
        expect(finding(findings, 'idp')).toMatchObject({ status: 'warning', message: /not checked: the database cannot be reached/ });
      } finally {
        cluster.drop();
      }
    }, 180_000);
  });
});

describe('bad input: a clear message, never a stack trace', () => {
  it('an unreadable config file (--env): one error naming the file, exit 1', async () => {
    const { code, findings } = await doctor(healthy, '--env', '/nonexistent/svc.env');
    expect(code).toBe(1);
    expect(findings).toEqual([
      { check: 'config', status: 'error', message: 'cannot read /nonexistent/svc.env (ENOENT)', fix: 'check the path given to --env' },
    ]);
  }, 60_000);

  it('a URL that is not a URL: one error naming the variable', async () => {
    const { code, findings } = await doctor({ ...healthy, SVC_JUDGE_BASE_URL: 'not a url' });
    expect(code).toBe(1);
    expect(findings).toEqual([
      { check: 'config', status: 'error', message: 'SVC_JUDGE_BASE_URL: Invalid URL', fix: expect.stringMatching(/correct that variable/) },
    ]);
    const viaFile = join(tmpdir(), `svc-doctor-${process.pid}.env`);
    writeFileSync(viaFile, 'BASE_URL=http//missing-colon\n');
    try {
      expect((await doctor(healthy, '--env', viaFile)).findings).toEqual([
        expect.objectContaining({ check: 'config', status: 'error', message: 'BASE_URL: Invalid URL' }),
      ]);
    } finally {
      rmSync(viaFile, { force: true });
    }
  }, 60_000);

  describe.runIf(backend === 'pglite')('the embedded data folder', () => {
    let server: ServerProcess | undefined;
    afterAll(() => killAll(server ? [server] : []));

    it('an unreadable secrets file: an error with the fix, not a crash', async () => {
      const file = join(store.env.SVC_DATA_DIR!, 'secrets.json');
      const kept = readFileSync(file, 'utf8');
      writeFileSync(file, '{ not json');
      try {
        const { code, findings } = await doctor(healthy);
        expect(code).toBe(1);
        expect(finding(findings, 'secrets')).toMatchObject({
          status: 'error',
          message: `${file} cannot be read: not JSON`,
          fix: expect.stringMatching(/restore it from a backup/),
        });
      } finally {
        writeFileSync(file, kept);
      }
    }, 60_000);

    it('held by a running server: checked through its /readyz, and the IdP check says why it was skipped', async () => {
      server = await startServerProcess({ SVC_DATA_DIR: store.env.SVC_DATA_DIR! });
      const { code, findings } = await doctor(healthy);
      expect(code).toBe(0);
      expect(finding(findings, 'database')).toMatchObject({
        status: 'ok',
        message: expect.stringMatching(
          new RegExp(`^the data folder .* is held by the running server at ${server.url} \\(pid \\d+\\); its /readyz says it is ready`),
        ),
      });
      expect(finding(findings, 'idp')).toMatchObject({
        status: 'warning',
        fix: expect.stringMatching(/stop the server, or run `svc doctor` with DATABASE_URL/),
      });
    }, 120_000);
  });
});
