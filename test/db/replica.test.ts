/**
 * The results API on a real streaming read replica (issue #15, DATABASE_READ_URL): a throwaway
 * primary cluster on a free port, a hot standby made from it with `pg_basebackup -R` on another,
 * replay paused and resumed with pg_wal_replay_pause()/resume(). Never the shared server on 5432.
 *
 * Two apps on the same primary, as two processes of one deployment (same secret): `replicaApp`
 * reads on the replica, `primaryApp` has none.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.ts';
import { openDb, type Db } from '../../src/db/index.ts';
import { startApp, type TestApp } from '../helpers/harness.ts';
import { replicaFallbacks } from '../../src/telemetry/metrics.ts';
import { createCluster, createReplica, createSvcDb, replicaUnavailable, type Cluster } from '../helpers/pg-cluster.ts';
import { getJson, newResult, newUser, seedTenant, type SeededTenant } from '../results/fixtures.ts';
import { post, seedActivity } from '../embed/fixtures.ts';
import { startTestIdp, type TestIdp } from '../helpers/test-idp.ts';
import { eventually } from '../helpers/wait.ts';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** A little more than the horizon's publishing interval (src/results/replica-horizon.ts). */
const PUBLISHED = 1500;
const EPOCH = '2000-01-01T00:00:00Z';

describe('DATABASE_READ_URL on the embedded database', () => {
  it('is refused with a clear message (PGlite has no replicas)', () => {
    expect(() => loadConfig({ DATABASE_READ_URL: 'postgres://postgres@127.0.0.1:5433/svc', SVC_DATA_DIR: '/tmp/svc-replica-config' })).toThrow(ConfigError);
    expect(() => loadConfig({ DATABASE_READ_URL: 'postgres://postgres@127.0.0.1:5433/svc', SVC_DATA_DIR: '/tmp/svc-replica-config' })).toThrow(
      /DATABASE_READ_URL needs DATABASE_URL/,
    );
  });
});

describe.skipIf(replicaUnavailable !== undefined)(`read replica on a streaming standby${replicaUnavailable ? ` (skipped: ${replicaUnavailable})` : ''}`, () => {
  let primary: Cluster;
  let replica: Cluster;
  let db: Db;
  let readDb: Db;
  let replicaApp: TestApp;
  let primaryApp: TestApp;
  let acme: SeededTenant;
  let idp: TestIdp;

  /**
   * Wait until the replica has replayed everything the primary has written so far (its insert
   * position: the throwaway primary commits with synchronous_commit off, so its write position lags).
   */
  async function caughtUp() {
    const [{ lsn }] = (await db.query<{ lsn: string }>('select pg_current_wal_insert_lsn()::text as lsn')) as [{ lsn: string }];
    const replayed = async () => (await readDb.query<{ done: boolean }>('select pg_last_wal_replay_lsn() >= $1::pg_lsn as done', [lsn]))[0]?.done;
    await eventually(replayed, 30_000, `the replica to replay ${lsn}`, 50);
  }
  async function pauseReplay() {
    await readDb.query('select pg_wal_replay_pause()');
    const state = async () => (await readDb.query<{ state: string }>('select pg_get_wal_replay_pause_state() as state'))[0]?.state;
    await eventually(async () => (await state()) === 'paused', 10_000, 'replay to pause', 20);
  }
  const resumeReplay = () => readDb.query('select pg_wal_replay_resume()');

  /** A new result of a new learner on the primary; returns its id and updated_at (RFC 3339, µs). */
  async function writeResult(): Promise<{ id: string; updatedAt: string }> {
    const userId = await newUser(db);
    await db.query(`insert into memberships (tenant_id, user_id, role) values ($1, $2, 'learner')`, [acme.id, userId]);
    const id = await newResult(db, { activityId: acme.activityIds[2]!, userId, status: 'in_progress' });
    const [row] = await db.query<{ at: string }>(
      `select to_char(updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as at from activity_results where id = $1`,
      [id],
    );
    return { id, updatedAt: row!.at };
  }

  const ids = (page: { data: { id: string }[] }) => page.data.map((r) => r.id);
  /** This process's `svc_db_replica_fallbacks_total{reason}` (both apps share the registry). */
  const fallbacks = async (reason: string) => (await replicaFallbacks.get()).values.find((v) => v.labels.reason === reason)?.value ?? 0;
  const feed = (t: TestApp, query: string) => getJson(t, `/v1/activity-results?updated_since=${EPOCH}${query}`, acme.key);

  beforeAll(async () => {
    primary = await createCluster();
    db = await createSvcDb(primary);
    replica = await createReplica(primary);
    readDb = await openDb({ databaseUrl: replica.url('svc') });
    replicaApp = await startApp({}, { db, readDb });
    primaryApp = await startApp({ jwtSecret: replicaApp.deps.config.jwtSecret }, { db });
    acme = await seedTenant(primaryApp, 'acme');
    idp = await startTestIdp();
    await primaryApp.op('idp.set', { tenant: 'acme', issuer: idp.issuer, jwks_url: idp.jwksUrl });
    await caughtUp();
    await sleep(PUBLISHED);
  }, 180_000);

  afterAll(async () => {
    await replicaApp?.close().catch(() => {});
    await primaryApp?.close().catch(() => {});
    await readDb?.close().catch(() => {});
    await db?.close().catch(() => {});
    await idp?.close();
    replica?.drop();
    primary?.drop();
  }, 60_000);

  it('is a hot standby of the primary', async () => {
    const [standby] = await readDb.query<{ recovery: boolean }>('select pg_is_in_recovery() as recovery');
    expect(standby?.recovery).toBe(true);
    const [main] = await db.query<{ recovery: boolean }>('select pg_is_in_recovery() as recovery');
    expect(main?.recovery).toBe(false);
  });

  it('serves lists from the replica; an object it has not replayed yet comes from the primary', async () => {
    await pauseReplay();
    try {
      const written = await writeResult();
      // The list is the replica's: the new result is not there yet (the primary's list has it).
      expect(ids(await getJson(replicaApp, '/v1/activity-results?limit=200', acme.key))).not.toContain(written.id);
      expect(ids(await getJson(primaryApp, '/v1/activity-results?limit=200', acme.key))).toContain(written.id);
      // Asked for by id (it just came back from the judge, say), it is found on the primary.
      const stale = await fallbacks('stale');
      expect((await getJson(replicaApp, `/v1/activity-results/${written.id}`, acme.key)).id).toBe(written.id);
      expect(await fallbacks('stale')).toBe(stale + 1);
    } finally {
      await resumeReplay();
    }
    await caughtUp();
    const all = ids(await getJson(replicaApp, '/v1/activity-results?limit=200', acme.key));
    expect(all).toEqual(ids(await getJson(primaryApp, '/v1/activity-results?limit=200', acme.key)));
  });

  it('keeps the watermark below what the replica has not replayed, and cursors valid both ways, while replay is paused', async () => {
    await caughtUp();
    await sleep(PUBLISHED);
    const before = await feed(replicaApp, '&limit=200');
    await pauseReplay();
    let d: { id: string; updatedAt: string };
    let e: { id: string; updatedAt: string };
    try {
      await sleep(PUBLISHED); // the primary goes on publishing its horizon; the replica replays none of it
      d = await writeResult();
      e = await writeResult();
      await sleep(PUBLISHED);

      // The replica's feed: neither new row, and a watermark that does not pass them.
      const res = await fetch(`${replicaApp.url}/v1/activity-results?updated_since=${EPOCH}&limit=200`, { headers: { authorization: `Bearer ${acme.key}` } });
      const onReplica = (await res.json()) as { data: { id: string; updated_at: string }[]; consistent_through: string };
      expect(ids(onReplica)).toEqual(ids(before));
      expect(onReplica.consistent_through <= d.updatedAt, `${onReplica.consistent_through} ≤ ${d.updatedAt}`).toBe(true);
      expect(res.headers.get('svc-consistent-through')).toBe(onReplica.consistent_through);
      for (const row of onReplica.data) expect(row.updated_at < onReplica.consistent_through).toBe(true);

      // The primary's feed has both, under a later watermark.
      const onPrimary = await feed(primaryApp, '&limit=200');
      expect(ids(onPrimary)).toEqual([...ids(before), d.id, e.id]);
      expect(onPrimary.consistent_through > e.updatedAt).toBe(true);

      // A cursor of the primary (its page ends at d), continued on the replica: the replica has not
      // replayed that far, so the primary serves the page — e, nothing skipped, nothing repeated.
      const toD = await feed(primaryApp, `&limit=${before.data.length + 1}`);
      expect(ids(toD).at(-1)).toBe(d.id);
      const afterD = await feed(replicaApp, `&limit=200&cursor=${toD.next_cursor}`);
      expect(ids(afterD)).toEqual([e.id]);
      expect(afterD.consistent_through > e.updatedAt).toBe(true);

      // A cursor of the replica, continued on the primary: the rest, in order, once each.
      const first = await feed(replicaApp, '&limit=1');
      const rest = await feed(primaryApp, `&limit=200&cursor=${first.next_cursor}`);
      expect([...ids(first), ...ids(rest)]).toEqual(ids(onPrimary));

      // A created-order cursor of the primary is accepted by the replica too (a position, not a
      // snapshot): it lists what the replica has after it — nothing, until replay goes on.
      const created = await getJson(primaryApp, `/v1/activity-results?limit=${before.data.length + 1}`, acme.key);
      expect(ids(created).at(-1)).toBe(d.id);
      const createdRest = await getJson(replicaApp, `/v1/activity-results?limit=200&cursor=${created.next_cursor}`, acme.key);
      expect(ids(createdRest)).toEqual([]);
    } finally {
      await resumeReplay();
    }

    // Replay goes on: the replica's feed catches up, and so does its watermark.
    await caughtUp();
    await sleep(PUBLISHED);
    const later = await feed(replicaApp, '&limit=200');
    expect(ids(later)).toEqual([...ids(before), d!.id, e!.id]);
    expect(later.consistent_through > e!.updatedAt).toBe(true);
  });

  it('serves the learner reads from the replica; a result just submitted is read on the primary', async () => {
    const { activityId } = await seedActivity(primaryApp, 'acme'); // a document to write
    const token = (await post(replicaApp, '/v1/embed/session', { tenant: 'acme', idp_token: await idp.sign({ sub: 'replica-learner' }) })).body
      .access_token as string;
    const read = async (path: string) => {
      const res = await fetch(`${replicaApp.url}/v1/embed${path}`, { headers: { authorization: `Bearer ${token}` } });
      return { status: res.status, body: (await res.json()) as any };
    };
    await caughtUp();
    await pauseReplay();
    try {
      // No model configured: the submission is stored (on the primary) and pending.
      const judged = await post(
        replicaApp,
        '/v1/embed/judge',
        { tenant: 'acme', activity_id: activityId, artifact: { kind: 'document', content: 'my work' } },
        {
          authorization: `Bearer ${token}`,
        },
      );
      expect(judged.body.status).toBe('pending');
      // The activity view is the replica's: it has not replayed the result yet.
      expect((await read(`/activities/${activityId}`)).body.result).toBeNull();
      // The result by id (the player polls it) is not there yet either: the primary answers.
      const result = await read(`/results/${judged.body.result_id}`);
      expect(result.status).toBe(200);
      expect(result.body).toMatchObject({ id: judged.body.result_id, activity_id: activityId, status: 'in_progress' });
    } finally {
      await resumeReplay();
    }
    await caughtUp();
    expect((await read(`/activities/${activityId}`)).body.result).toMatchObject({ status: 'in_progress' });
  });

  it('checks API keys on the primary: a key revoked while replay is paused is refused at once', async () => {
    const { key, prefix } = await primaryApp.op('key.create', { tenant: 'acme', name: 'revoked-on-primary' });
    expect((await fetch(`${replicaApp.url}/v1/progress`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(200);
    await caughtUp();
    await pauseReplay();
    try {
      await primaryApp.op('key.revoke', { prefix });
      await sleep(1100); // the longest a checked key is trusted from memory
      expect((await fetch(`${replicaApp.url}/v1/progress`, { headers: { authorization: `Bearer ${key}` } })).status).toBe(401);
    } finally {
      await resumeReplay();
    }
  });

  it('reads on the primary while the replica is down, and counts it for the operator', async () => {
    await replica.stop();
    try {
      const before = await fallbacks('unavailable');
      const page = await getJson(replicaApp, '/v1/activity-results?limit=200', acme.key);
      expect(ids(page)).toEqual(ids(await getJson(primaryApp, '/v1/activity-results?limit=200', acme.key)));
      expect(await fallbacks('unavailable')).toBe(before + 1);
    } finally {
      await replica.start();
    }
  });
});
