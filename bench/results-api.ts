/**
 * Results-API benchmark against raw PostgreSQL, in one run (DESIGN §7).
 *
 *   npm run bench:results                       # 100,000 results over 10 tenants
 *   BENCH_ROWS=1000000 BENCH_TENANTS=100 npm run bench:results
 *
 * 1. Creates a fresh database on BENCH_PG (default postgres://postgres@127.0.0.1:5432),
 *    migrates it and loads BENCH_ROWS activity results (one artifact each) across
 *    BENCH_TENANTS tenants with generate_series.
 * 2. Starts the real server (a child process, DATABASE_URL mode) and measures with autocannon
 *    at 8 connections: the first 50-row page, a page 90 % deep, a filtered page, /v1/progress.
 * 3. Runs pgbench (-c 8) on the exact SQL statement the API runs for the first and deep pages.
 * 4. Prints a table and rewrites the "results-api" section of bench/README.md.
 *
 * Figures: requests per second, p50 and p99 latency in milliseconds, server RSS in MiB.
 */
import { execFile, spawn } from 'node:child_process';
import { readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir, cpus } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import autocannon from 'autocannon';
import postgres from 'postgres';
import { migrate, openDb } from '../src/db/index.ts';
import { cursorCodec } from '../src/results/cursor.ts';
import { listStatement } from '../src/results/queries.ts';
import { createApiKey } from '../src/results/api-keys.ts';

const ROWS = Number(process.env.BENCH_ROWS ?? 100_000);
const TENANTS = Number(process.env.BENCH_TENANTS ?? 10);
const SERVER = process.env.BENCH_PG ?? 'postgres://postgres@127.0.0.1:5432';
const DURATION = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = 8;
const PORT = 8799;
const ACTIVITIES_PER_TENANT = 20;
const run = promisify(execFile);
const dbName = `svc_bench_${Date.now().toString(36)}`;
const dbUrl = `${SERVER}/${dbName}`;
const secrets = {
  SVC_JWT_SECRET: 'bench-jwt-secret-0123456789-abcdefghijklmnop',
  SVC_ANON_KEY: 'sb_publishable_bench_0123456789',
  SVC_SERVICE_ROLE_KEY: 'sb_secret_bench_0123456789abcdef',
};

async function load() {
  const admin = postgres(`${SERVER}/postgres`, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${dbName}`);
  await admin.end();
  const db = await openDb({ databaseUrl: dbUrl });
  await migrate(db);
  const perTenant = Math.ceil(ROWS / TENANTS);
  const usersPerTenant = Math.ceil(perTenant / ACTIVITIES_PER_TENANT);
  const started = Date.now();
  await db.exec(`
    insert into tenants (slug, name) select 'bench-' || t, 'Bench ' || t from generate_series(1, ${TENANTS}) t;
    insert into programs (tenant_id, title) select id, 'Program' from tenants;
    insert into units (program_id, title) select id, 'Unit' from programs;
    insert into lessons (unit_id, title) select id, 'Lesson' from units;
    insert into activities (lesson_id, title, kind, spec, rubric, position)
      select l.id, 'Activity ' || n, 'document', 'spec', '[{"criterion":"c","weight":1}]', n
      from lessons l, generate_series(1, ${ACTIVITIES_PER_TENANT}) n;
    insert into auth.users (id, email) select gen_random_uuid(), 'u' || n || '@bench.test' from generate_series(1, ${usersPerTenant * TENANTS}) n;
    insert into users (auth_user_id) select id from auth.users;
    create temp table bench_users as
      select id, (row_number() over (order by id) - 1) % ${TENANTS} as slot from users;
    create temp table bench_tenants as select id, row_number() over (order by slug) - 1 as slot from tenants;
    insert into activity_results (tenant_id, activity_id, lesson_id, program_id, user_id, status, score, completed_at, created_at, updated_at)
      select a.tenant_id, a.id, a.lesson_id, a.program_id, u.id,
             case when random() < 0.7 then 'completed' else 'failed' end, round((random() * 100)::numeric, 2), now(),
             ts, ts
      from bench_tenants bt
      join activities a on a.tenant_id = bt.id
      join bench_users u on u.slot = bt.slot,
      lateral (select timestamptz '2026-01-01' + (random() * interval '300 days') as ts) r;
    insert into artifacts (tenant_id, result_id, activity_id, user_id, kind, content, verification, created_at, updated_at)
      select tenant_id, id, activity_id, user_id, 'document', 'answer', '{"status":"passed","score":80}', created_at + interval '1 microsecond', updated_at
      from activity_results;
    insert into progress (tenant_id, user_id, program_id, completed_count, last_activity_at)
      select tenant_id, user_id, program_id, count(*) filter (where status = 'completed'), max(created_at)
      from activity_results group by 1, 2, 3;
    analyze;
  `);
  const [{ n }] = await db.query<{ n: number }>('select count(*)::int as n from activity_results');
  const [tenant] = await db.query<{ id: string; rows: number }>(
    `select tenant_id as id, count(*)::int as rows from activity_results group by 1 order by 1 limit 1`,
  );
  const [deep] = await db.query<{ ts: string; id: string }>(
    `select to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as ts, id::text from activity_results
      where tenant_id = $1 order by created_at, id offset $2 limit 1`,
    [tenant!.id, Math.floor(tenant!.rows * 0.9)],
  );
  const [activity] = await db.query<{ id: string }>('select id from activities where tenant_id = $1 limit 1', [tenant!.id]);
  const key = (await createApiKey(db, tenant!.id, 'bench')).key;
  await db.close();
  console.log(`loaded ${n} results (+ artifacts, progress) over ${TENANTS} tenants in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return { tenantId: tenant!.id, tenantRows: tenant!.rows, deep: { createdAt: deep!.ts, id: deep!.id }, activityId: activity!.id, key };
}

function percentile(sorted: number[], p: number) {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

async function http(path: string, key: string) {
  const result = await autocannon({
    url: `http://127.0.0.1:${PORT}${path}`,
    connections: CONNECTIONS,
    duration: DURATION,
    headers: { authorization: `Bearer ${key}` },
  });
  if (result.non2xx) throw new Error(`${path}: ${result.non2xx} non-2xx answers`);
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99 };
}

async function pgbench(sql: string) {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-'));
  const file = join(dir, 'page.sql');
  writeFileSync(file, sql.replace(/\s+/g, ' ').trim() + ';\n');
  const { stdout } = await run('pgbench', ['-n', '-c', String(CONNECTIONS), '-j', String(Math.min(CONNECTIONS, cpus().length)), '-T', String(DURATION), '-f', file, '--log', '--log-prefix', join(dir, 'log'), dbUrl], { cwd: dir, maxBuffer: 64 << 20 });
  const tps = Number(/tps = ([\d.]+)/.exec(stdout)![1]);
  const { stdout: files } = await run('sh', ['-c', `cat ${join(dir, 'log')}*`], { maxBuffer: 512 << 20 });
  const latencies = files.trim().split('\n').map((l) => Number(l.split(' ')[2]) / 1000).sort((a, b) => a - b);
  return { rps: tps, p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
}

/** The SQL of one page with its parameters inlined as literals, for pgbench. */
function inline(statement: { text: string; params: unknown[] }) {
  return statement.text.replace(/\$(\d+)/g, (_m, i) => {
    const v = statement.params[Number(i) - 1];
    return typeof v === 'number' ? String(v) : `'${String(v).replace(/'/g, "''")}'`;
  });
}

async function main() {
  const seed = await load();
  const server = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    env: { PATH: process.env.PATH, DATABASE_URL: dbUrl, PORT: String(PORT), LOG_LEVEL: 'warn', ...secrets },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  try {
    for (let i = 0; i < 100; i++) {
      if (await fetch(`http://127.0.0.1:${PORT}/v1/health`).then((r) => r.ok, () => false)) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    const scope = { tenantId: seed.tenantId, endpoint: 'activity-results' as const, filters: {} };
    const deepCursor = cursorCodec(secrets.SVC_JWT_SECRET).encode(scope, seed.deep);
    await http('/v1/activity-results?limit=50', seed.key); // warm up
    const rows: [string, { rps: number; p50: number; p99: number }][] = [];
    rows.push(['API first page (50 rows)', await http('/v1/activity-results?limit=50', seed.key)]);
    rows.push([`API page ${Math.round(seed.tenantRows * 0.9)} rows deep`, await http(`/v1/activity-results?limit=50&cursor=${deepCursor}`, seed.key)]);
    rows.push(['API filtered page (activity_id)', await http(`/v1/activity-results?limit=50&activity_id=${seed.activityId}`, seed.key)]);
    rows.push(['API /v1/progress (50 rows)', await http('/v1/progress?limit=50', seed.key)]);
    const rss = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${server.pid}/status`, 'utf8'))![1]) / 1024;
    const first = inline(listStatement('activity-results', seed.tenantId, { limit: 50, filters: {} }));
    const deep = inline(listStatement('activity-results', seed.tenantId, { limit: 50, filters: {}, after: seed.deep }));
    rows.push(['pgbench, same SQL, first page', await pgbench(first)]);
    rows.push(['pgbench, same SQL, deep page', await pgbench(deep)]);

    const apiFirst = rows[0]![1].rps;
    const pgFirst = rows[4]![1].rps;
    const table = [
      '| what | req/s | p50 ms | p99 ms |',
      '|---|---:|---:|---:|',
      ...rows.map(([name, r]) => `| ${name} | ${Math.round(r.rps)} | ${r.p50.toFixed(2)} | ${r.p99.toFixed(2)} |`),
    ].join('\n');
    const summary = [
      `API ÷ pgbench (first page): **${((apiFirst / pgFirst) * 100).toFixed(0)} %**; deep ÷ first page cost (API): **${(rows[0]![1].rps / rows[1]![1].rps).toFixed(2)}×**; server RSS after the run: **${rss.toFixed(0)} MiB**.`,
    ].join('\n');
    const section = `<!-- results-api:start -->\nLast run: ${new Date().toISOString().slice(0, 16)}Z, ${ROWS.toLocaleString('en')} results over ${TENANTS} tenants, ${CONNECTIONS} connections, ${DURATION} s each, ${cpus().length} cores.\n\n${table}\n\n${summary}\n<!-- results-api:end -->`;
    console.log(`\n${table}\n\n${summary}`);
    const readmePath = new URL('./README.md', import.meta.url);
    const readme = readFileSync(readmePath, 'utf8');
    writeFileSync(readmePath, readme.replace(/<!-- results-api:start -->[\s\S]*<!-- results-api:end -->/, section));
  } finally {
    server.kill('SIGTERM');
    await new Promise((r) => server.once('exit', r));
    const admin = postgres(`${SERVER}/postgres`, { max: 1, onnotice: () => {} });
    await admin.unsafe(`drop database if exists ${dbName} with (force)`);
    await admin.end();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
