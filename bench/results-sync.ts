/**
 * Full sync through the typed client vs `psql \copy` of the same rows, in one run (issue #14).
 *
 *   npm run bench:results-sync                       # 1,000,000 results in one tenant
 *   BENCH_ROWS=200000 npm run bench:results-sync     # smaller, on a busy machine
 *
 * 1. Creates a fresh database on BENCH_PG (default postgres://postgres@127.0.0.1:5432), migrates it
 *    and loads BENCH_ROWS activity results in one tenant (test/helpers/results-load.ts: one
 *    artifact each, progress, memberships, and a tombstone beside a tenth of the results).
 * 2. Starts the real server (a child process, as `npm start` runs it, DATABASE_URL mode, rate limit
 *    out of the way) and runs `client.sync('activity-results', {limit: 200})` of
 *    clients/js from the beginning: since issue #24 its first pull is the NDJSON export (every
 *    result, no tombstones: nothing was synced before), then the feed from the export's
 *    watermark (an empty page). bench/exports.ts measures the same beside the exports.
 * 3. Runs `psql -c "\copy (select … the tenant's results in (updated_at, id) order) to stdout"` into
 *    /dev/null: the physical limit of reading those rows out of PostgreSQL.
 * 4. Prints the figures and rewrites the "results-sync" section of bench/README.md: rows per
 *    second of each, the ratio, and the machine's load average (`uptime`) before and after.
 */
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { promisify } from 'node:util';
import postgres from 'postgres';
import { createResultsClient } from '../clients/js/src/index.ts';
import { migrate, openDb } from '../src/db/index.ts';
import { createApiKey } from '../src/results/index.ts';
import { loadResults } from '../test/helpers/results-load.ts';
import { BENCH_PG, BENCH_SECRETS, startBenchServer, type BenchServer } from './common.ts';

const ROWS = Number(process.env.BENCH_ROWS ?? 1_000_000);
const PORT = Number(process.env.BENCH_PORT ?? 8798);
const LIMIT = 200;
const run = promisify(execFile);
const dbName = `svc_bench_sync_${Date.now().toString(36)}`;
const dbUrl = `${BENCH_PG}/${dbName}`;

const uptime = async () => (await run('uptime')).stdout.trim().replace(/^.*load average:\s*/, '');

async function main() {
  const before = await uptime();
  const admin = postgres(`${BENCH_PG}/postgres`, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${dbName}`);
  let server: BenchServer | undefined;
  try {
    const db = await openDb({ databaseUrl: dbUrl, dbStatementTimeoutMs: 0 }); // loading a million rows is one long statement
    await migrate(db);
    const loadStart = performance.now();
    await loadResults(db, { rows: ROWS, tenants: 1, bigShare: 1 });
    const loadSeconds = (performance.now() - loadStart) / 1000;
    const [tenant] = await db.query<{ id: string }>(`select id from tenants where slug = 'bench-1'`);
    const { key } = await createApiKey(db, tenant!.id, 'bench');
    const [{ results, tombstones }] = (await db.query<{ results: number; tombstones: number }>(
      `select (select count(*)::int from activity_results where tenant_id = $1) as results,
              (select count(*)::int from deletions where tenant_id = $1 and resource = 'activity_result') as tombstones`,
      [tenant!.id],
    )) as [{ results: number; tombstones: number }];
    await db.close();

    server = await startBenchServer({ DATABASE_URL: dbUrl, SVC_RATE_LIMIT: '1000000000', ...BENCH_SECRETS }, { port: PORT });
    const baseUrl = server.url;

    // 2. The client's full sync.
    const client = createResultsClient({ baseUrl, apiKey: key });
    let upserts = 0;
    let deletes = 0;
    let pages = 0;
    let watermark: string | null = null;
    const syncStart = performance.now();
    for await (const event of client.sync('activity-results', { limit: LIMIT })) {
      if (event.type === 'upsert') upserts += 1;
      else if (event.type === 'delete') deletes += 1;
      else {
        pages += 1;
        watermark = event.checkpoint.rows.since;
      }
    }
    const syncSeconds = (performance.now() - syncStart) / 1000;
    // A first pull replays no tombstones (issue #24): there is nothing synced before to delete.
    if (upserts !== results || deletes !== 0) throw new Error(`sync saw ${upserts} results and ${deletes} tombstones, the database has ${results} results`);

    // 3. psql \copy of the same rows, in the same order.
    const copyStart = performance.now();
    await run(
      'sh',
      [
        '-c',
        `psql -q -X "${dbUrl}" -c "\\copy (select * from activity_results where tenant_id = '${tenant!.id}' order by updated_at, id) to stdout" > /dev/null`,
      ],
      { maxBuffer: 1 << 20 },
    );
    const copySeconds = (performance.now() - copyStart) / 1000;
    const after = await uptime();

    const syncRate = upserts / syncSeconds;
    const copyRate = results / copySeconds;
    const when = new Date().toISOString().slice(0, 16);
    const table = [
      '| what | rows | seconds | rows / s |',
      '|---|---:|---:|---:|',
      `| client \`sync()\` from scratch: the NDJSON export, then ${pages.toLocaleString('en')} checkpoint(s) of the feed (limit ${LIMIT}) | ${upserts.toLocaleString('en')} results (the ${tombstones.toLocaleString('en')} tombstones are not replayed on a first pull) | ${syncSeconds.toFixed(1)} | ${Math.round(syncRate).toLocaleString('en')} |`,
      `| \`psql \\copy\` of the same results (text format, to /dev/null) | ${results.toLocaleString('en')} | ${copySeconds.toFixed(1)} | ${Math.round(copyRate).toLocaleString('en')} |`,
    ].join('\n');
    const summary =
      `Client ÷ \`psql \\copy\`: **${((syncRate / copyRate) * 100).toFixed(1)} %** of the physical limit ` +
      `(${(copyRate / syncRate).toFixed(1)}× slower). The sync ended at watermark ${watermark}. Load (${ROWS.toLocaleString('en')} rows with artifacts, progress, memberships, tombstones): ${loadSeconds.toFixed(0)} s.`;
    const section = `<!-- results-sync:start -->\nLast run: ${when}Z, ${ROWS.toLocaleString('en')} results in one tenant, server run as \`npm start\` (pg, DATABASE_URL), client and server on the same ${cpus().length} shared cores as PostgreSQL; load average (\`uptime\`) before: ${before}; after: ${after}.\n\n${table}\n\n${summary}\n<!-- results-sync:end -->`;
    console.log(`\n${table}\n\n${summary}`);
    const readmePath = new URL('./README.md', import.meta.url);
    const readme = readFileSync(readmePath, 'utf8');
    writeFileSync(
      readmePath,
      /<!-- results-sync:start -->/.test(readme)
        ? readme.replace(/<!-- results-sync:start -->[\s\S]*<!-- results-sync:end -->/, section)
        : `${readme.trimEnd()}\n\n## Results sync through the client (\`bench/results-sync.ts\`, issue #14)\n\n${section}\n`,
    );
  } finally {
    await server?.stop();
    await admin.unsafe(`drop database if exists ${dbName} with (force)`);
    await admin.end();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
