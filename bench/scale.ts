/**
 * Scale-out of the results API on one machine (issue #15): the same requests, the same data, the
 * same load, served by
 *
 *   1. one process on the primary,
 *   2. two processes on the primary,
 *   3. two processes reading on a streaming replica (DATABASE_READ_URL),
 *
 *   npm run bench:scale          # BENCH_ROWS (default 100,000) results over BENCH_TENANTS (10)
 *
 * The primary and its replica are throwaway clusters made for the run on free ports (as the tests
 * make them: test/helpers/pg-cluster.ts, needs root and postgresql-common), dropped at the end. The
 * load is two autocannon instances of BENCH_CONNECTIONS / 2 connections each (default 4 + 4) for
 * BENCH_SECONDS (default 10), one per process (both on the one process in case 1), on the first
 * 50-row page and on the updated_since feed. Figures: requests per second (sum), p50 (mean of the
 * two) and p99 (the worse of the two) in milliseconds, for BENCH_ROUNDS (default 2) rounds of the
 * three setups in turn, each row with the 1-minute load average when it started. Writes the
 * "scale" section of bench/README.md.
 *
 * On a 2-core machine the servers, both PostgreSQL clusters and the load generator share the same
 * cores: this measures what scale-out costs and whether anything is lost, not what it gains on
 * separate machines (docs/scaling.md).
 */
import { cpus, loadavg } from 'node:os';
import autocannon from 'autocannon';
import pg from 'pg';
import { migrate, openDb } from '../src/db/index.ts';
import { createApiKey } from '../src/results/index.ts';
import { createCluster, createReplica, type Cluster } from '../test/helpers/pg-cluster.ts';
import { loadResults } from '../test/helpers/results-load.ts';
import { BENCH_SECRETS, lastRun, startBenchServer, writeReadmeSection, type BenchServer } from './common.ts';

const ROWS = Number(process.env.BENCH_ROWS ?? 100_000);
const TENANTS = Number(process.env.BENCH_TENANTS ?? 10);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 8);
/** The setups are measured in turn this many times (the machine's load drifts during a run). */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);

interface Figures {
  rps: number;
  p50: number;
  p99: number;
}

/** CONNECTIONS / 2 connections on each of `urls` (two URLs; the same one twice for one process). */
async function measure(urls: [string, string], path: string, key: string): Promise<Figures> {
  const runs = await Promise.all(
    urls.map((url) => autocannon({ url: `${url}${path}`, connections: CONNECTIONS / 2, duration: SECONDS, headers: { authorization: `Bearer ${key}` } })),
  );
  for (const r of runs) if (r.non2xx) throw new Error(`${path}: ${r.non2xx} non-2xx answers`);
  return {
    rps: runs.reduce((sum, r) => sum + r.requests.average, 0),
    p50: runs.reduce((sum, r) => sum + r.latency.p50, 0) / runs.length,
    p99: Math.max(...runs.map((r) => r.latency.p99)),
  };
}

async function main() {
  let primary: Cluster | undefined;
  let replica: Cluster | undefined;
  const servers: BenchServer[] = [];
  try {
    primary = await createCluster();
    const admin = new pg.Client({ connectionString: primary.url() });
    await admin.connect();
    await admin.query('create database svc');
    await admin.end();
    const db = await openDb({ databaseUrl: primary.url('svc'), dbStatementTimeoutMs: 0 });
    await migrate(db);
    await loadResults(db, { rows: ROWS, tenants: TENANTS });
    await db.exec('vacuum analyze');
    const [tenant] = await db.query<{ id: string }>('select tenant_id as id from activity_results group by 1 order by count(*) desc, 1 limit 1');
    const key = (await createApiKey(db, tenant!.id, 'bench')).key;
    await db.close();
    replica = await createReplica(primary);
    console.log(`loaded ${ROWS.toLocaleString('en')} results over ${TENANTS} tenants; primary on ${primary.port}, replica on ${replica.port}`);

    const onPrimary = { DATABASE_URL: primary.url('svc') };
    const withReplica = { ...onPrimary, DATABASE_READ_URL: replica.url('svc') };
    const setups: { label: string; envs: Record<string, string>[] }[] = [
      { label: '1 process, primary', envs: [onPrimary] },
      { label: '2 processes, primary', envs: [onPrimary, onPrimary] },
      { label: '2 processes, reads on the replica', envs: [withReplica, withReplica] },
    ];
    const requests = [
      { name: 'first page (50 rows)', path: '/v1/activity-results?limit=50' },
      { name: 'feed page (updated_since, 50 rows)', path: '/v1/activity-results?limit=50&updated_since=2000-01-01T00:00:00Z' },
    ];
    const rows: string[] = [];
    /** Figures of each setup, per round. */
    const figures: Figures[][][] = setups.map(() => []);
    for (let round = 1; round <= ROUNDS; round++) {
      for (const [i, setup] of setups.entries()) {
        // Node.js's default heap limits, as bench/README.md's figures were measured
        const started = await Promise.all(
          setup.envs.map((env) => startBenchServer({ SVC_RATE_LIMIT: '1000000000', ...BENCH_SECRETS, ...env }, { nodeFlags: [] })),
        );
        servers.push(...started);
        const urls: [string, string] = [started[0]!.url, (started[1] ?? started[0]!).url];
        await measure(urls, requests[0]!.path, key); // warm up: connections, statement caches
        const load = loadavg()[0]!.toFixed(1);
        const measured: Figures[] = [];
        for (const r of requests) measured.push(await measure(urls, r.path, key));
        figures[i]!.push(measured);
        rows.push(
          `| ${round} | ${setup.label} | ${load} | ${measured.map((f) => `${Math.round(f.rps)} | ${f.p50.toFixed(1)} | ${f.p99.toFixed(1)}`).join(' | ')} |`,
        );
        console.log(rows.at(-1));
        for (const s of started) await s.stop();
      }
    }
    /** Setup i ÷ setup 0 on request r, summed over the rounds. */
    const total = (i: number, r: number) => figures[i]!.reduce((sum, round) => sum + round[r]!.rps, 0);
    const ratio = (i: number, r: number) => `${((total(i, r) / total(0, r)) * 100).toFixed(0)} %`;
    const body = [
      lastRun(
        `${ROWS.toLocaleString('en')} results over ${TENANTS} tenants, ${CONNECTIONS} connections in all (${CONNECTIONS / 2} per load generator), ${SECONDS} s per figure; servers, primary, replica and load generators on the same ${cpus().length} cores.`,
      ),
      '',
      `| round | setup | load | ${requests.map((r) => `${r.name}: req/s | p50 ms | p99 ms`).join(' | ')} |`,
      `|---:|---|---:|${requests.map(() => '---:|---:|---:').join('|')}|`,
      ...rows,
      '',
      `Over the ${ROUNDS} rounds, two processes ÷ one: ${requests.map((r, i) => `${r.name} ${ratio(1, i)}`).join(', ')}; ` +
        `two processes on the replica ÷ one on the primary: ${requests.map((r, i) => `${r.name} ${ratio(2, i)}`).join(', ')}.`,
    ].join('\n');
    console.log(`\n${body}`);
    writeReadmeSection('scale', '## Scale-out on one machine — `npm run bench:scale`', body);
  } finally {
    for (const s of servers) await s.stop();
    replica?.drop();
    primary?.drop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
