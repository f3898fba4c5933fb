/**
 * Start-up time and memory of the server as `npm start` runs it — compiled (dist/, Node.js 24) —
 * against the TypeScript sources through tsx's loader (`npm run dev`, what `npm start` ran before
 * issue #15), on both backends, in one run.
 *
 *   npm run build && npm run bench:runtime          # BENCH_RUNS=5 (default 3), BENCH_BACKENDS=pglite
 *
 * For each backend and mode, BENCH_RUNS times: spawn the server on a migrated database, time spawn →
 * "service listening" (ms), wait 2 s and read its RSS (idle), then send 2,000 requests (20 at a time:
 * health, the identity settings, the OAuth metadata, a results-API 401) and read its peak RSS
 * (VmHWM: the highest resident set since spawn, start-up included). Medians go to bench/README.md.
 * Node.js 20 is not measured: the service refuses it now (src/runtime.ts).
 */
import { BENCH_SECRETS, benchDatabase, eachBackend, lastRun, one, startBenchServer, writeReadmeSection } from './common.ts';
import { migrate } from '../src/db/index.ts';

const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const PORT = Number(process.env.BENCH_PORT ?? 8797);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const PATHS = ['/v1/health', '/auth/v1/settings', '/.well-known/oauth-authorization-server/auth/v1', '/v1/activity-results'];

async function burst(url: string) {
  let next = 0;
  await Promise.all(
    Array.from({ length: 20 }, async () => {
      while (next < 2000) {
        const path = PATHS[next++ % PATHS.length]!;
        await (await fetch(`${url}${path}`)).arrayBuffer();
      }
    }),
  );
}

type Row = { backend: string; mode: string; startMs: number; idle: number; peak: number };

const rows = (
  await eachBackend(async (backend) => {
    const out: Row[] = [];
    for (const [mode, compiled] of [
      ['tsx (src/, `npm run dev`)', false],
      ['compiled (dist/, `npm start`)', true],
    ] as const) {
      const runs: Omit<Row, 'backend' | 'mode'>[] = [];
      for (let i = 0; i < RUNS; i++) {
        const database = await benchDatabase('runtime', backend);
        await migrate(database.db);
        await database.db.close();
        const server = await startBenchServer({ ...database.env, ...(backend === 'postgres' && BENCH_SECRETS) }, { port: PORT, compiled });
        await new Promise((r) => setTimeout(r, 2000));
        const idle = server.rss().now;
        await burst(server.url);
        runs.push({ startMs: server.startMs, idle, peak: server.rss().peak });
        await server.stop();
        await database.drop().catch(() => {});
      }
      const row = { backend, mode, startMs: median(runs.map((r) => r.startMs)), idle: median(runs.map((r) => r.idle)), peak: median(runs.map((r) => r.peak)) };
      console.log(row);
      out.push(row);
    }
    return out;
  })
).flat();

const table = [
  '| backend | how it runs | start-up (spawn → listening) | idle RSS | peak RSS |',
  '|---|---|---:|---:|---:|',
  ...rows.map((r) => `| ${r.backend} | ${r.mode} | ${Math.round(r.startMs)} ms | ${one(r.idle)} MiB | ${one(r.peak)} MiB |`),
].join('\n');
writeReadmeSection(
  'runtime',
  '## Start-up and memory: compiled vs tsx (`bench/runtime.ts`, issue #15)',
  `${lastRun(`Node.js ${process.versions.node}, medians of ${RUNS} starts per row; peak = VmHWM after 2,000 requests.`)}\n\n${table}`,
);
console.log(table);
