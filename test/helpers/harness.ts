/**
 * Test harness: the real app on a real database, listening on loopback.
 *
 * Backend: PostgreSQL when `TEST_DATABASE_URL` is set (a fresh database is created per
 * `startApp` and dropped on close), otherwise embedded PGlite in memory. `.ci/run` runs the
 * whole suite once per backend.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll } from 'vitest';
import postgres from 'postgres';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.ts';
import type { Config, JudgeConfig } from '../../src/config.ts';
import { defaultSections } from '../../src/config/sections.ts';
import { migrate, openDb, type Db } from '../../src/db/index.ts';
import type { Deps } from '../../src/deps.ts';
import { runOp, type OpName } from '../../src/admin/ops.ts';
import { openPglite } from '../../src/db/pglite.ts';
import { migratedSnapshot } from './pglite-snapshot.ts';

export const backend = process.env.TEST_DATABASE_URL ? 'postgres' : 'pglite';

/**
 * The config of the test apps: the service's own defaults (`defaultSections()`, what an empty
 * environment gives, src/config/sections.ts), fresh random secrets, and only what tests need
 * otherwise — said here, field by field.
 */
export function testConfig(overrides: Partial<Config> = {}): Config {
  const d = defaultSections();
  return {
    ...d,
    port: 0,
    baseUrl: 'http://127.0.0.1:0',
    dataDir: undefined, // the harness opens the database itself (freshDb)
    jwtSecret: randomBytes(32).toString('base64url'),
    anonKey: `sb_publishable_${randomBytes(16).toString('base64url')}`,
    serviceRoleKey: `sb_secret_${randomBytes(24).toString('base64url')}`,
    fetchAllowPrivate: true, // loopback sites and models
    logLevel: 'silent',
    // Embed judge: short waits and retries; idle workers look at the queue only every minute, so a
    // suite that shares a database between apps sees no background grading unless it asks for it
    // (test/embed lowers judgePollSeconds where it tests the queue).
    embed: {
      ...d.embed,
      judgeWaitMs: 10_000,
      judgeAttempts: 2,
      judgeRetryDelaySeconds: 1,
      judgeRetryMaxDelaySeconds: 2,
      // Per-learner rate and tenant budget: out of reach unless a suite lowers them (test/embed/judge.costs.test.ts).
      learnerRate: 100_000,
      tenantBudget: { callsPerHour: 1e9, callsPerDay: 1e9, tokensPerHour: 1e12, tokensPerDay: 1e12 },
      judgePollSeconds: 60,
      fetchTimeoutMs: 5_000,
      fetchMaxBytes: 5 * 1024 * 1024,
    },
    // Identity: limits high enough that no other suite meets them (test/identity lowers them),
    // and a cheap argon2id cost so sign-ins are fast (the bench measures the real cost).
    identity: {
      ...d.identity,
      rateLimit: {
        ...d.identity.rateLimit,
        signInPerIp: 100_000,
        signInPerEmail: 100_000,
        refreshPerIp: 100_000,
        registerPerIp: 100_000,
        authorizePerIpPerMinute: 100_000,
      },
      argon2: { memoryKib: 1024, timeCost: 1, parallelism: 1 },
    },
    // Results API: no suite meets the rate limit unless it lowers it (test/results does).
    results: { ...d.results, rateLimit: { ...d.results.rateLimit, max: 1_000_000 } },
    shutdown: { delayMs: 0, timeoutMs: 5000 },
    ...overrides,
  };
}

/** Judge settings for the test model at `baseUrl` (test/helpers/test-model.ts). */
export const testJudge = (baseUrl: string, overrides: Partial<JudgeConfig> = {}): JudgeConfig => ({
  baseUrl,
  apiKey: 'test',
  model: 'test-model',
  timeoutMs: 5000,
  maxTokens: 2048,
  tokenParam: 'max_completion_tokens',
  temperature: 0,
  seed: 7,
  ...overrides,
});

/** A fresh, migrated database on the suite's backend; `drop()` removes it. */
export async function freshDb(): Promise<{ db: Db; url?: string; drop: () => Promise<void> }> {
  const server = process.env.TEST_DATABASE_URL;
  if (!server) {
    const db = await openPglite(undefined, await migratedSnapshot());
    await migrate(db); // nothing to do on the snapshot: it checks that
    return { db, drop: () => db.close() };
  }
  const name = `svc_test_${randomBytes(6).toString('hex')}`;
  const admin = postgres(server, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${name}`);
  const url = new URL(server);
  url.pathname = `/${name}`;
  const db = await openDb({ databaseUrl: url.toString() });
  await migrate(db);
  return {
    db,
    url: url.toString(),
    drop: async () => {
      await db.close();
      await admin.unsafe(`drop database if exists ${name} with (force)`);
      await admin.end();
    },
  };
}

export interface TestApp {
  app: FastifyInstance;
  url: string;
  deps: Deps;
  db: Db;
  /** The database's URL on the PostgreSQL backend (undefined on PGlite, or when `db` was passed in). */
  dbUrl?: string;
  /** Run an admin operation (the CLI's code path) directly. */
  op: (name: OpName, args: Record<string, unknown>) => Promise<any>;
  close: () => Promise<void>;
}

/**
 * Start the real app. Pass `db` to share a database with another app (then closing this app
 * leaves the database open), `readDb` for its read replica (left open too). `now` replaces the clock.
 */
export async function startApp(overrides: Partial<Config> = {}, options: { db?: Db; readDb?: Db; now?: () => Date } = {}): Promise<TestApp> {
  const owned = options.db ? undefined : await freshDb();
  const db = options.db ?? owned!.db;
  const config = testConfig(overrides);
  const deps: Deps = { config, db, readDb: options.readDb, now: options.now ?? (() => new Date()) };
  const app = await buildApp(deps);
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  config.baseUrl = url;
  return {
    app,
    url,
    deps,
    db,
    dbUrl: owned?.url,
    op: (name, args) => runOp(db, name, args),
    close: async () => {
      await app.close();
      await owned?.drop();
    },
  };
}

/**
 * The app fixture of a test file or `describe` block, instead of a `beforeAll`/`afterAll` pair:
 * starts the app with `start` before the block's tests (and before the hooks registered after
 * this call) and closes it after them. The handle it returns forwards to the started app, so
 * tests and later hooks use it as a `TestApp` (`t.url`, `t.db`, `t.op(…)`). `start` runs in the
 * hook, so it may use what earlier hooks set up (a loopback model's URL).
 */
export function useApp(start: () => Promise<TestApp> = () => startApp()): TestApp {
  return useServer(start);
}

/**
 * A server of a test file or `describe` block — an app, a test IdP, a test model, an `EmbedWorld`,
 * a partner site, a browser — instead of a `beforeAll`/`afterAll` pair: `start` runs before the
 * block's tests (`useFixture`, whose handle forwards to the server) and `close` after them.
 * `timeout` (ms) bounds the start, when it may take longer than the suite's hook timeout.
 */
export function useServer<T extends { close(): Promise<unknown> }>(start: () => Promise<T>, timeout?: number): T {
  return useFixture(start, { release: (server) => server.close(), timeout });
}

/**
 * A value made once for a test file or `describe` block by `make` (in a `beforeAll`, after the
 * hooks registered before this call): the returned handle forwards to it, so
 * `const a = useFixture(() => seedTenant(t, 'alpha'))` reads as the seeded tenant in tests.
 * `release` (in an `afterAll`) frees what `make` made — a database to drop, a folder to remove —
 * when `make` got that far; `timeout` (ms) bounds `make`, when it may take longer than the suite's
 * hook timeout.
 */
export function useFixture<T extends object>(make: () => Promise<T>, options: { release?: (value: T) => Promise<unknown>; timeout?: number } = {}): T {
  let value: T | undefined;
  beforeAll(async () => {
    value = await make();
  }, options.timeout);
  const { release } = options;
  if (release) {
    afterAll(async () => {
      if (value !== undefined) await release(value);
    });
  }
  const target = () => {
    if (!value) throw new Error('the fixture is used before its beforeAll hook ran');
    return value;
  };
  return new Proxy({} as T, {
    get: (_, key) => {
      if (value === undefined && key === 'close') return undefined;
      const got = Reflect.get(target(), key);
      return typeof got === 'function' ? got.bind(value) : got; // methods run on the value itself
    },
    has: (_, key) => Reflect.has(target(), key),
    ownKeys: () => Reflect.ownKeys(target()),
    getOwnPropertyDescriptor: (_, key) => ({ ...Reflect.getOwnPropertyDescriptor(target(), key), configurable: true }),
  });
}

/**
 * A fresh, migrated database (`freshDb`) of a test file or `describe` block, instead of a
 * `beforeAll`/`afterAll` pair: made before the block's tests, dropped after them. The handle
 * forwards to `{ db, url, drop }`.
 */
export function useFreshDb(): Awaited<ReturnType<typeof freshDb>> {
  return useFixture(freshDb, { release: (store) => store.drop() });
}

/** Create a tenant, a user with a password, and make the user an author of the tenant. */
export async function seedAuthor(t: TestApp, slug: string, email = `author@${slug}.test`, password = 'correct horse battery') {
  const tenant = await t.op('tenant.create', { slug, name: `Tenant ${slug}` });
  const user = await t.op('user.create', { email, password });
  await t.op('author.grant', { tenant: slug, email });
  return { tenant, user, email, password };
}
