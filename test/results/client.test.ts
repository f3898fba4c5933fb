/**
 * The typed client (clients/js, @learning-svc/results-client) against the real server: its types
 * are generated from the document the server serves; `for await` pagination; `sync()` over a
 * table under concurrent writes and deletions ends with exactly the database's rows, and resumes
 * from a saved checkpoint after being stopped mid-way; retries honour Retry-After; errors are
 * typed; `svc-results export` writes CSV that round-trips through a CSV parser and resumes after
 * being killed.
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createResultsClient, ResultsApiError, type ResultsClient, type SyncCheckpoint } from '../../clients/js/src/index.ts';
import { startApp, useApp, useFixture } from '../helpers/harness.ts';
import { resultsDocument } from '../helpers/openapi-document.ts';
import { eventually } from '../helpers/wait.ts';
import { newProgram, newResult, newUser, seedTenant, walk } from './fixtures.ts';

const CLIENT_DIR = new URL('../../clients/js/', import.meta.url);
const t = useApp();
const a = useFixture(() => seedTenant(t, 'alpha'));
const b = useFixture(() => seedTenant(t, 'beta'));
let client: ResultsClient;
let tmp: string;
/** Activities of a's extra program, and learners with a result on each. */
let activityIds: string[];

beforeAll(async () => {
  ({ activityIds } = await newProgram(t.db, a.id, 10));
  for (let i = 0; i < 12; i++) {
    const userId = await newUser(t.db);
    for (const activityId of activityIds) await newResult(t.db, { activityId, userId, status: 'failed', score: i });
  }
  client = createResultsClient({ baseUrl: t.url, apiKey: a.key });
  tmp = await mkdtemp(join(tmpdir(), 'svc-results-'));
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

/** The tenant's results as the database has them: id → updated_at. */
const dbResults = async (tenantId: string) =>
  new Map(
    (
      await t.db.query<{ id: string; at: string }>(
        `select id, to_char(updated_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as at from activity_results where tenant_id = $1`,
        [tenantId],
      )
    ).map((r) => [r.id, r.at]),
  );

describe('generated types', () => {
  it('come from the document the server serves (openapi.json is current; schema.d.ts is openapi-typescript’s output)', async () => {
    const committed = JSON.parse(await readFile(new URL('openapi.json', CLIENT_DIR), 'utf8'));
    expect(committed, 'run: npm run openapi -w @learning-svc/results-client && npm run generate -w @learning-svc/results-client').toEqual(
      await resultsDocument(),
    );
    const out = join(tmp, 'schema.d.ts');
    await promisify(execFile)('npx', ['openapi-typescript', new URL('openapi.json', CLIENT_DIR).pathname, '-o', out]);
    expect(await readFile(out, 'utf8')).toBe(await readFile(new URL('src/schema.d.ts', CLIENT_DIR), 'utf8'));
  });
});

describe('the client', () => {
  it('pages through every list with for await', async () => {
    const ids: string[] = [];
    for await (const row of client.list('activity-results', { limit: 7 })) ids.push(row.id);
    expect(ids).toEqual((await walk(t, '/v1/activity-results', a.key, 200)).ids);
    const learners: string[] = [];
    for await (const learner of client.list('learners')) learners.push(learner.svc_user_id);
    expect(learners).toEqual(a.userIds);
    const programs: string[] = [];
    for await (const program of client.list('programs', { limit: 1 })) programs.push(program.id);
    expect(programs).toHaveLength(3);
    expect((await client.get('programs', a.programId)).units[0]!.lessons[0]!.activities).toHaveLength(3);
  });

  it('raises typed errors with code and request_id, without retrying a 4xx', async () => {
    let calls = 0;
    const counting = createResultsClient({
      baseUrl: t.url,
      apiKey: a.key,
      fetch: (r) => {
        calls++;
        return fetch(r);
      },
    });
    const bad = await counting.page('activity-results', { limit: 0 }).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(ResultsApiError);
    expect(bad).toMatchObject({ code: 'invalid_request', status: 400, requestId: expect.any(String) });
    expect((bad as Error).message).toMatch(/^limit:/);
    expect(calls).toBe(1);
    const unknown = await createResultsClient({ baseUrl: t.url, apiKey: 'svc_nope' })
      .page('progress')
      .catch((e: unknown) => e);
    expect(unknown).toMatchObject({ code: 'unauthorized', status: 401 });
    expect(await client.get('artifacts', b.artifactIds[0]!).catch((e: unknown) => e)).toMatchObject({ code: 'not_found', status: 404 });
    const gone = await createResultsClient({ baseUrl: 'http://127.0.0.1:9', apiKey: a.key, maxRetries: 1, sleep: async () => {} })
      .page('progress')
      .catch((e: unknown) => e);
    expect(gone).toMatchObject({ code: 'network_error', status: 0 });
  });

  it('waits Retry-After on 429 and carries on', async () => {
    const limited = await startApp({ results: { ...t.deps.config.results, rateLimit: { max: 3, windowMs: 2000 } } }, { db: t.db }); // 4+ pages inside one window even on a slow machine
    try {
      const waits: number[] = [];
      const patient = createResultsClient({
        baseUrl: limited.url,
        apiKey: a.key,
        sleep: (ms) => {
          waits.push(ms);
          return new Promise((r) => setTimeout(r, ms));
        },
      });
      let n = 0;
      for await (const _ of patient.list('activity-results', { limit: 20 })) n += 1;
      expect(n).toBe((await dbResults(a.id)).size);
      expect(waits.length).toBeGreaterThan(0);
      for (const ms of waits) expect(ms).toBeGreaterThanOrEqual(1000);
    } finally {
      await limited.close();
    }
  });
});

describe('sync()', () => {
  /** Apply a sync to `mirror` (id → updated_at); returns the last checkpoint. */
  async function syncInto(mirror: Map<string, string>, checkpoint?: SyncCheckpoint, stopAfterPages = Infinity) {
    let last = checkpoint;
    let pages = 0;
    for await (const event of client.sync('activity-results', { checkpoint, limit: 7 })) {
      if (event.type === 'delete') mirror.delete(event.tombstone.id);
      else if (event.type === 'upsert') mirror.set(event.row.id, event.row.updated_at);
      else {
        last = JSON.parse(JSON.stringify(event.checkpoint)); // as a consumer would store it
        if (++pages >= stopAfterPages) break;
      }
    }
    return last!;
  }

  it('ends with exactly the database’s rows under concurrent writes and deletions, resuming after a stop', async () => {
    const mirror = new Map<string, string>();
    // A writer adds, changes and deletes results while the consumer syncs.
    // It deletes only results it wrote: the seeded ones (and their artifacts) are the export tests'.
    let writing = true;
    const written: string[] = [];
    const writer = (async () => {
      for (let i = 0; writing && i < 60; i++) {
        const userId = await newUser(t.db);
        written.push(await newResult(t.db, { activityId: activityIds[i % activityIds.length]!, userId, status: 'in_progress' }));
        await t.db.query(`update activity_results set score = $2 where id = (select id from activity_results where tenant_id = $1 order by random() limit 1)`, [
          a.id,
          i,
        ]);
        if (i % 3 === 0) {
          const [id] = written.splice(Math.floor(Math.random() * written.length), 1);
          await t.db.query(`delete from activity_results where id = $1`, [id]);
        }
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    // First pass stops after three pages (as if killed); the checkpoint is all that survives.
    let checkpoint = await syncInto(mirror, undefined, 3);
    expect(checkpoint.rows.cursor ?? checkpoint.deletions.cursor ?? checkpoint.rows.since).toBeTruthy();
    const afterStop = new Map(mirror);
    checkpoint = await syncInto(afterStop, checkpoint);
    writing = false;
    await writer;
    // Once writes stop, one more sync from the checkpoint catches up exactly.
    checkpoint = await syncInto(afterStop, checkpoint);
    expect(new Map([...afterStop].sort())).toEqual(new Map([...(await dbResults(a.id))].sort()));
    expect(checkpoint.rows.cursor).toBeNull();
    // Nothing changed: the next sync brings nothing, and its watermark does not go backwards.
    const quiet = new Map(afterStop);
    const again = await syncInto(quiet, checkpoint);
    expect(quiet).toEqual(afterStop);
    expect(again.rows.since! >= checkpoint.rows.since!).toBe(true);
    // Tenant b's rows and tombstones never reach a's sync.
    for (const id of b.resultIds) expect(afterStop.has(id)).toBe(false);
  });
});

describe('svc-results export', () => {
  const run = (args: string[], env: Record<string, string> = {}) =>
    promisify(execFile)('npx', ['svc-results', ...args], { env: { ...process.env, SVC_BASE_URL: t.url, SVC_API_KEY: a.key, ...env } });

  it('writes CSV that round-trips through a CSV parser, with a progress line on stderr', async () => {
    await t.db.query(`update artifacts set verification = '{"note":"a, \\"quoted\\"\\nline"}' where id = $1`, [a.artifactIds[0]]);
    const out = join(tmp, 'artifacts.csv');
    const { stderr } = await run(['export', 'artifacts', '--format', 'csv', '--out', out]);
    expect(stderr).toMatch(/artifacts: \d+ rows exported, consistent through \S+Z/);
    const rows = parse(await readFile(out, 'utf8'), { columns: true }) as Record<string, string>[];
    const api: any[] = [];
    for await (const row of client.list('artifacts', { updated_since: '1970-01-01T00:00:00Z' })) api.push(row);
    expect(rows.map((r) => r.id)).toEqual(api.map((r) => r.id));
    const first = rows.find((r) => r.id === a.artifactIds[0])!;
    expect(JSON.parse(first.verification!)).toEqual({ note: 'a, "quoted"\nline' });
    expect(first.repo_url).toBe('');
    const jsonl = (await run(['export', 'learners', '--format', 'jsonl'])).stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(jsonl.map((l) => l.svc_user_id).sort()).toEqual([...a.userIds].sort());
  });

  it('paged (--limit): a cell holding a bare CR or LF is quoted, as the service quotes it', async () => {
    const [before] = await t.db.query<{ ref_url: string | null }>('select ref_url from artifacts where id = $1', [a.artifactIds[0]]);
    await t.db.query(`update artifacts set ref_url = 'https://example.test/cr' || chr(13) || 'lf' || chr(10) || 'end' where id = $1`, [a.artifactIds[0]]);
    try {
      const out = join(tmp, 'paged.csv');
      await run(['export', 'artifacts', '--format', 'csv', '--out', out, '--limit', '50']);
      expect(await readFile(out, 'utf8')).toContain('"https://example.test/cr\rlf\nend"');
    } finally {
      await t.db.query('update artifacts set ref_url = $2 where id = $1', [a.artifactIds[0], before!.ref_url]);
    }
  });

  it('refuses bad input as typed errors, not a crash', async () => {
    const bad = await run(['export', 'activity-results', '--format', 'csv', '--updated-since', 'yesterday']).catch((e: any) => e);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^svc-results: invalid_request: updated_since: .*\(request \S+\)$/m);
    const noKey = await run(['export', 'progress', '--format', 'csv'], { SVC_API_KEY: '' }).catch((e: any) => e);
    expect(noKey.stderr).toMatch(/SVC_API_KEY/);
  });

  it('resumes an export killed mid-way without losing or repeating a row', async () => {
    const out = join(tmp, 'results.csv');
    const child = spawn('npx', ['svc-results', 'export', 'activity-results', '--format', 'csv', '--out', out, '--limit', '1'], {
      env: { ...process.env, SVC_BASE_URL: t.url, SVC_API_KEY: a.key },
      detached: true,
      stdio: 'ignore',
    });
    const state = `${out}.checkpoint.json`;
    await eventually(async () => existsSync(state) && JSON.parse(await readFile(state, 'utf8')).rows >= 5, 30_000, 'a checkpoint of 5 rows', 50);
    process.kill(-child.pid!, 'SIGKILL');
    await new Promise((r) => child.once('exit', r));
    const partial = JSON.parse(await readFile(state, 'utf8'));
    const total = (await dbResults(a.id)).size;
    expect(partial.rows).toBeGreaterThanOrEqual(5);
    expect(partial.rows).toBeLessThan(total);
    await run(['export', 'activity-results', '--format', 'csv', '--out', out, '--resume']);
    const rows = parse(await readFile(out, 'utf8'), { columns: true }) as Record<string, string>[];
    expect(rows.map((r) => r.id).sort()).toEqual([...(await dbResults(a.id)).keys()].sort());
  });
});
