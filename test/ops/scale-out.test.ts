/**
 * Scale-out on one machine (issue #15): two real server processes (`node --import tsx
 * src/main.ts`, what `npm start` runs) on one PostgreSQL database and one Redis share what must be
 * shared — a key's rate budget (Redis), a key's revocation (LISTEN/NOTIFY) and the grading queue
 * (a submission taken by a process without a model is graded by the other).
 *
 * PostgreSQL only (an embedded PGlite folder is open in one process at a time), and the rate part
 * needs Redis on 127.0.0.1:6379 (TEST_REDIS_URL); each is skipped with its reason otherwise.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDb } from '../../src/db/index.ts';
import { backend, startApp, useServer, type TestApp } from '../helpers/harness.ts';
import { killAll, serverDatabase, spawnServer, type ServerDatabase, type SpawnedServer } from '../helpers/server-process.ts';
import { startTestIdp } from '../helpers/test-idp.ts';
import { startTestModel } from '../helpers/test-model.ts';
import { seedActivity, type SeededActivity } from '../embed/fixtures.ts';
import { eventually } from '../helpers/wait.ts';
import { REDIS_URL, redisReachable } from '../helpers/redis.ts';

const redisUp = await redisReachable();
const skip = backend !== 'postgres' ? 'PostgreSQL only (TEST_DATABASE_URL)' : !redisUp ? `Redis is not reachable at ${REDIS_URL}` : undefined;

/** The default rate budget of each key in this suite, per minute. */
const LIMIT = 10;

describe.skipIf(skip !== undefined)(`two server processes on one database${skip ? ` (skipped: ${skip})` : ''}`, () => {
  const idp = useServer(() => startTestIdp());
  const model = useServer(() => startTestModel());
  let database: ServerDatabase;
  let admin: TestApp;
  let activity: SeededActivity;
  let spawned: SpawnedServer[] = [];
  /** The two processes' base URLs. */
  let urls: string[] = [];

  beforeAll(async () => {
    database = await serverDatabase();
    // The operator's side (the CLI's operations) in this process, on the same database.
    admin = await startApp({}, { db: await openDb({ databaseUrl: database.env.DATABASE_URL }) });
    await admin.op('tenant.create', { slug: 'acme' });
    await admin.op('idp.set', { tenant: 'acme', issuer: idp.issuer, jwks_url: idp.jwksUrl });
    activity = await seedActivity(admin, 'acme');
    const shared = { ...database.env, REDIS_URL, SVC_RATE_LIMIT: String(LIMIT), SVC_FETCH_ALLOW_PRIVATE: '1' };
    // One process without a model (it stores submissions as pending, for any process to grade), one with.
    spawned = [
      spawnServer(shared),
      spawnServer({ ...shared, SVC_JUDGE_BASE_URL: model.baseUrl, SVC_JUDGE_MODEL: 'test-model', SVC_JUDGE_API_KEY: 'test', SVC_JUDGE_POLL: '0.5' }),
    ];
    urls = await Promise.all(spawned.map((s) => s.listening));
  }, 120_000);

  afterAll(async () => {
    killAll(spawned);
    await admin?.close();
    await admin?.db.close();
    await database?.drop();
  }, 60_000);

  const get = (url: string, key: string) => fetch(`${url}/v1/progress`, { headers: { authorization: `Bearer ${key}` } });

  it(`spends one rate budget per key across processes (Redis): ${LIMIT} answers in all, then 429 on both`, async () => {
    const { key } = await admin.op('key.create', { tenant: 'acme', name: 'rate' });
    const statuses: number[] = [];
    for (let i = 0; i < LIMIT + 2; i++) statuses.push((await get(urls[i % 2]!, key)).status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(LIMIT);
    expect(statuses.slice(LIMIT)).toEqual([429, 429]);
  });

  it('refuses a revoked key in every process within a second', async () => {
    const { key, prefix } = await admin.op('key.create', { tenant: 'acme', name: 'revoked' });
    for (const url of urls) expect((await get(url, key)).status).toBe(200); // cached in both
    await admin.op('key.revoke', { prefix });
    await new Promise((r) => setTimeout(r, 1000));
    for (const url of urls) expect((await get(url, key)).status).toBe(401);
  });

  it('grades in one process what another took: the grading queue is the database', async () => {
    const res = await fetch(`${urls[0]}/v1/embed/judge`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${await idp.sign({ sub: 'learner-1' })}` },
      body: JSON.stringify({ tenant: 'acme', activity_id: activity.activityId, artifact: { kind: 'document', content: 'complete work' } }),
    });
    const body = (await res.json()) as { status: string; artifact_id: string };
    expect(res.status).toBe(200);
    expect(body.status).toBe('pending');
    const verification = await eventually(
      async () => {
        const [row] = await admin.db.query<{ verification: { status?: string } | null }>('select verification from artifacts where id = $1', [
          body.artifact_id,
        ]);
        return row?.verification?.status === 'passed' ? row.verification : undefined;
      },
      30_000,
      'the other process to grade the submission',
    );
    expect(verification).toMatchObject({ status: 'passed' });
    expect(model.requests.length).toBe(1);
  });
});
