/**
 * Streaming exports vs `psql \copy` of the same rows, in one run (issue #24).
 *
 *   npm run bench:exports                       # 1,000,000 results in one tenant
 *   BENCH_ROWS=200000 npm run bench:exports     # smaller, on a busy machine
 *   BENCH_KEEP=1 npm run bench:exports          # keep the database; BENCH_DB=<name> reuses it
 *
 * 1. A fresh database on BENCH_PG, migrated, BENCH_ROWS results in one tenant
 *    (test/helpers/results-load.ts, as bench/results-sync.ts), or the kept one named by BENCH_DB.
 * 2. The real server as a child process, run as `npm start` runs it (`node <its flags>
 *    dist/main.js`, DATABASE_URL mode; the npm script builds dist/ first).
 * 3. `GET /v1/exports/activity-results` in NDJSON, CSV and Parquet, no compression: read to the
 *    end by curl to /dev/null (a C client, as psql is), then by fetch with the rows counted; each
 *    format on a freshly started server, its RSS sampled every 50 ms during the first export, curl's
 *    (growth = peak during the export − RSS before it).
 * 4. The client's full `sync('activity-results')` (the export, then the feed's empty page): as
 *    configured by default on a loopback address (uncompressed), then with `compressExports: true`.
 * 5. `psql \copy (select * … the tenant's results in (updated_at, id) order) to stdout` > /dev/null,
 *    and psql running the NDJSON and CSV exports' own `COPY` statements (src/results/exports/
 *    formats.ts `copyStatement`) to /dev/null: PostgreSQL's share, without HTTP and Node.
 * 6. Rewrites the "exports" section of bench/README.md with the figures and the load average.
 */
import { execFile } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createResultsClient } from '../clients/js/src/index.ts';
import { migrate, openDb } from '../src/db/index.ts';
import { copyStatement } from '../src/results/exports/formats.ts';
import { createApiKey } from '../src/results/index.ts';
import { loadResults } from '../test/helpers/results-load.ts';
import { BENCH_SECRETS, keptDatabase, lastRun, markdownTable, median, startBenchServer, writeReadmeSection, type BenchServer } from './common.ts';

const ROWS = Number(process.env.BENCH_ROWS ?? 1_000_000);
const run = promisify(execFile);
const database = keptDatabase('svc_bench_exports');
const { name: dbName, url: dbUrl, reused: reuse } = database;
const uptime = async () => (await run('uptime')).stdout.trim().replace(/^.*load average:\s*/, '');

/** Run `fn` while sampling the server's RSS every 50 ms: its result and the growth (peak − RSS before), MiB. */
async function withRss<T>(server: BenchServer, fn: () => Promise<T>): Promise<T & { growth: number }> {
  const base = server.rss().now;
  let peak = base;
  const sampler = setInterval(() => (peak = Math.max(peak, server.rss().now)), 50);
  try {
    const result = await fn();
    return { ...result, growth: Math.max(peak, server.rss().now) - base };
  } finally {
    clearInterval(sampler);
  }
}

/** Read one export to the end by fetch: rows (lines; CSV less its header), seconds, bytes. */
async function readExport(server: BenchServer, key: string, format: 'ndjson' | 'csv' | 'parquet') {
  const started = performance.now();
  const res = await fetch(`${server.url}/v1/exports/activity-results?format=${format}`, {
    headers: { authorization: `Bearer ${key}`, 'accept-encoding': 'identity' },
  });
  if (res.status !== 200) throw new Error(`${format}: ${res.status} ${await res.text()}`);
  let lines = 0;
  let bytes = 0;
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    bytes += chunk.length;
    if (format !== 'parquet') for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines += 1;
  }
  const seconds = (performance.now() - started) / 1000;
  return { rows: format === 'csv' ? lines - 1 : lines, seconds, bytes };
}

/** Read one export to the end with curl into /dev/null: seconds and bytes (curl's own count). */
async function curlExport(server: BenchServer, key: string, format: 'ndjson' | 'csv' | 'parquet') {
  const started = performance.now();
  const { stdout } = await run('curl', [
    '-sS',
    '-o',
    '/dev/null',
    '-w',
    '%{http_code} %{size_download}',
    '-H',
    `authorization: Bearer ${key}`,
    '-H',
    'accept-encoding: identity',
    `${server.url}/v1/exports/activity-results?format=${format}`,
  ]);
  const seconds = (performance.now() - started) / 1000;
  const [status, bytes] = stdout.split(' ');
  if (status !== '200') throw new Error(`curl ${format}: ${status}`);
  return { seconds, bytes: Number(bytes) };
}

async function main() {
  const before = await uptime();
  await database.create();
  let server: BenchServer | undefined;
  try {
    const db = await openDb({ databaseUrl: dbUrl, dbStatementTimeoutMs: 0 });
    await migrate(db);
    const loadStart = performance.now();
    if (!reuse) await loadResults(db, { rows: ROWS, tenants: 1, bigShare: 1 });
    const loadSeconds = (performance.now() - loadStart) / 1000;
    const [tenant] = await db.query<{ id: string }>(`select id from tenants where slug = 'bench-1'`);
    const { key } = await createApiKey(db, tenant!.id, 'bench');
    const [{ results }] = (await db.query<{ results: number }>(`select count(*)::int as results from activity_results where tenant_id = $1`, [tenant!.id])) as [
      { results: number },
    ];
    await db.close();
    const start = () => startBenchServer({ DATABASE_URL: dbUrl, SVC_RATE_LIMIT: '1000000000', ...BENCH_SECRETS }, { compiled: true });

    // The median of three runs: one run on a shared machine is too noisy to divide by.
    const copyRuns: number[] = [];
    for (let i = 0; i < 3; i++) {
      const copyStart = performance.now();
      await run('sh', [
        '-c',
        `psql -q -X "${dbUrl}" -c "\\copy (select * from activity_results where tenant_id = '${tenant!.id}' order by updated_at, id) to stdout" > /dev/null`,
      ]);
      copyRuns.push((performance.now() - copyStart) / 1000);
    }
    const copySeconds = median(copyRuns);
    const copyRate = results / copySeconds;

    // The export's own SQL, COPY'd by psql to /dev/null in the export's transaction (RLS as the tenant; no HTTP, no Node): what
    // PostgreSQL alone takes to write the rows — the bound of the NDJSON and CSV exports.
    const sqlSeconds: Record<'ndjson' | 'csv', number> = { ndjson: 0, csv: 0 };
    for (const format of ['ndjson', 'csv'] as const) {
      const file = join(tmpdir(), `${dbName}.${format}.sql`);
      const sql = copyStatement('activity-results', format, { tenantId: tenant!.id, horizon: '9999-12-31T00:00:00.000000Z' });
      writeFileSync(file, `begin isolation level repeatable read, read only;\nselect svc.results_enter('${tenant!.id}', false);\n${sql};\ncommit;\n`);
      const started = performance.now();
      await run('sh', ['-c', `psql -q -X -v ON_ERROR_STOP=1 "${dbUrl}" -f ${file} > /dev/null`]);
      sqlSeconds[format] = (performance.now() - started) / 1000;
      rmSync(file);
    }

    const figures: Record<string, Awaited<ReturnType<typeof readExport>>> = {};
    // Each format on a freshly started server, whose first export is curl's: the RSS growth is measured there.
    const curled: Record<string, Awaited<ReturnType<typeof curlExport>> & { growth: number }> = {};
    for (const format of ['ndjson', 'csv', 'parquet'] as const) {
      await server?.stop();
      server = await start();
      curled[format] = await withRss(server, () => curlExport(server!, key, format));
      console.log(format, 'curl', curled[format]);
      figures[format] = await readExport(server!, key, format);
      if (format !== 'parquet' && figures[format]!.rows !== results) throw new Error(`${format}: ${figures[format]!.rows} rows, the database has ${results}`);
      figures[format]!.rows = results;
      console.log(format, figures[format]);
    }

    const client = createResultsClient({ baseUrl: server!.url, apiKey: key });
    let upserts = 0;
    const syncStart = performance.now();
    for await (const e of client.sync('activity-results')) if (e.type === 'upsert') upserts += 1;
    const syncSeconds = (performance.now() - syncStart) / 1000;
    if (upserts !== results) throw new Error(`sync saw ${upserts}, the database has ${results}`);
    // The same with compression asked for (what a client on another host gets by default).
    const zipped = createResultsClient({ baseUrl: server!.url, apiKey: key, compressExports: true });
    let zippedUpserts = 0;
    const zippedStart = performance.now();
    for await (const e of zipped.sync('activity-results')) if (e.type === 'upsert') zippedUpserts += 1;
    const zippedSeconds = (performance.now() - zippedStart) / 1000;
    if (zippedUpserts !== results) throw new Error(`sync (compressed) saw ${zippedUpserts}, the database has ${results}`);
    const after = await uptime();

    const rate = (rows: number, s: number) => Math.round(rows / s);
    const ratio = (r: number) => `${((r / copyRate) * 100).toFixed(0)} %`;
    const rowsOut = [
      ...(['ndjson', 'csv', 'parquet'] as const).map((f) => {
        const x = curled[f]!;
        return [
          `\`GET /v1/exports/activity-results?format=${f}\`, curl to /dev/null`,
          results.toLocaleString('en'),
          x.seconds.toFixed(1),
          rate(results, x.seconds).toLocaleString('en'),
          ratio(results / x.seconds),
          `${(x.bytes / 2 ** 20).toFixed(0)} MiB`,
          `${x.growth.toFixed(0)} MiB`,
        ];
      }),
      ...(['ndjson', 'csv', 'parquet'] as const).map((f) => {
        const x = figures[f]!;
        return [
          `the same, ${f}, read by Node's fetch (rows counted)`,
          x.rows.toLocaleString('en'),
          x.seconds.toFixed(1),
          rate(x.rows, x.seconds).toLocaleString('en'),
          ratio(x.rows / x.seconds),
          `${(x.bytes / 2 ** 20).toFixed(0)} MiB`,
          '',
        ];
      }),
      [
        'client `sync()` from scratch (export, then the feed; loopback: uncompressed)',
        upserts.toLocaleString('en'),
        syncSeconds.toFixed(1),
        rate(upserts, syncSeconds).toLocaleString('en'),
        ratio(upserts / syncSeconds),
        '',
        '',
      ],
      [
        'client `sync()`, compression asked for (`compressExports: true`: gzip)',
        zippedUpserts.toLocaleString('en'),
        zippedSeconds.toFixed(1),
        rate(zippedUpserts, zippedSeconds).toLocaleString('en'),
        ratio(zippedUpserts / zippedSeconds),
        '',
        '',
      ],
      ...(['ndjson', 'csv'] as const).map((f) => [
        `psql: \`COPY\` of the ${f === 'ndjson' ? 'NDJSON' : 'CSV'} export's own SQL (no HTTP, no Node)`,
        results.toLocaleString('en'),
        sqlSeconds[f].toFixed(1),
        rate(results, sqlSeconds[f]).toLocaleString('en'),
        ratio(results / sqlSeconds[f]),
        '',
        '',
      ]),
      [
        `\`psql \\copy\` of the same results (text, to /dev/null; median of 3: ${copyRuns.map((x) => x.toFixed(1)).join(', ')} s)`,
        results.toLocaleString('en'),
        copySeconds.toFixed(1),
        rate(results, copySeconds).toLocaleString('en'),
        '100 %',
        '',
        '',
      ],
    ];
    const table = markdownTable(['what', 'rows', 's', 'rows / s', '÷ \\copy', 'bytes', 'server RSS growth'], rowsOut);
    const load = reuse ? `Rows loaded by an earlier run (BENCH_DB)` : `Load of the rows: ${loadSeconds.toFixed(0)} s`;
    const body = `${lastRun(`${results.toLocaleString('en')} results in one tenant, PostgreSQL, server (as \`npm start\`) and clients on the same cores; uptime before: ${before}; after: ${after}.`)}\n\n${table}\n\n${load}. Targets (issue #24): NDJSON ≥ 50 %, CSV ≥ 80 %, Parquet ≥ 20 %, sync() ≥ 30 % of \`\\copy\`, RSS growth ≤ 64 MiB.`;
    console.log(`\n${body}`);
    writeReadmeSection('exports', '## Streaming exports — `npm run bench:exports` (issue #24)', body);
  } finally {
    await server?.stop();
    await database.release();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
