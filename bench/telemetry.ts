/**
 * What metrics and tracing cost the results API (issue #15), in one run, on both backends:
 * the compiled server (`npm start`'s dist/main.js) serving `GET /v1/activity-results?limit=50`
 * with a tenant key, under autocannon (BENCH_CONNECTIONS=10, BENCH_SECONDS=10), in three
 * configurations started in turn on the same database, the three in a row BENCH_ROUNDS times
 * (default 3; each configuration's best round is reported, the usual guard against a shared
 * machine's noise, with every round's figure beside it) —
 *
 *   off             no SVC_METRICS_PORT, no OTEL_*
 *   metrics         SVC_METRICS_PORT set, scraped once a second during the run
 *   metrics+traces  plus OTEL_TRACES_EXPORTER=otlp to a loopback OTLP/HTTP sink (every request sampled,
 *                   spans batched and sent, as a collector would receive them)
 *
 *   npm run bench:telemetry                 # BENCH_ROWS=20000, BENCH_BACKENDS=postgres,pglite
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import autocannon from 'autocannon';
import { migrate } from '../src/db/index.ts';
import { createApiKey } from '../src/results/index.ts';
import { loadResults } from '../test/helpers/results-load.ts';
import { BENCH_SECRETS, benchDatabase, eachBackend, lastRun, one, startBenchServer, writeReadmeSection } from './common.ts';

const ROWS = Number(process.env.BENCH_ROWS ?? 20_000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);
const PORT = Number(process.env.BENCH_PORT ?? 8796);
const METRICS_PORT = PORT + 100;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

/** A loopback OTLP/HTTP receiver: answers every export 200 and counts the bytes. */
async function otlpSink() {
  let bytes = 0;
  const server = createServer((req, res) => {
    req.on('data', (c: Buffer) => (bytes += c.length));
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, bytes: () => bytes, close: () => new Promise((r) => server.close(r)) };
}

type Row = { backend: string; config: string; rps: number; p50: number; p99: number; rounds: number[] };

const sink = await otlpSink();
const rows = (
  await eachBackend(async (backend) => {
    const database = await benchDatabase('telemetry', backend);
    await migrate(database.db);
    await loadResults(database.db, { rows: ROWS, tenants: 1, bigShare: 1 });
    const [tenant] = await database.db.query<{ id: string }>(`select id from tenants where slug = 'bench-1'`);
    const { key } = await createApiKey(database.db, tenant!.id, 'bench');
    await database.db.close().catch(() => {});
    const base = { ...database.env, ...(backend === 'postgres' && BENCH_SECRETS), SVC_RATE_LIMIT: '1000000000' };
    const configs: [string, Record<string, string>][] = [
      ['off', {}],
      ['metrics', { SVC_METRICS_PORT: String(METRICS_PORT) }],
      [
        'metrics+traces',
        {
          SVC_METRICS_PORT: String(METRICS_PORT),
          OTEL_TRACES_EXPORTER: 'otlp',
          OTEL_EXPORTER_OTLP_ENDPOINT: sink.url,
          OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
          OTEL_METRICS_EXPORTER: 'none',
          OTEL_LOGS_EXPORTER: 'none',
        },
      ],
    ];
    const out: Row[] = [];
    for (let round = 0; round < ROUNDS; round++)
      for (const [config, env] of configs) {
        const server = await startBenchServer({ ...base, ...env }, { port: PORT, compiled: true });
        const url = `${server.url}/v1/activity-results?limit=50`;
        const headers = { authorization: `Bearer ${key}` };
        for (let i = 0; i < 50; i++) await (await fetch(url, { headers })).arrayBuffer(); // warm-up
        const scraper = env.SVC_METRICS_PORT
          ? setInterval(
              () =>
                void fetch(`http://127.0.0.1:${METRICS_PORT}/metrics`).then(
                  (r) => r.arrayBuffer(),
                  () => {},
                ),
              1000,
            )
          : undefined;
        const result = await autocannon({ url, headers, connections: CONNECTIONS, duration: SECONDS });
        clearInterval(scraper);
        await server.stop();
        if (result.non2xx) throw new Error(`${config}: ${result.non2xx} answers were not 2xx`);
        const row = { backend, config, rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, rounds: [result.requests.average] };
        console.log(row);
        const best = out.find((r) => r.config === config);
        if (!best) out.push(row);
        else if (row.rps > best.rps) Object.assign(best, row, { rounds: [...best.rounds, row.rps] });
        else best.rounds.push(row.rps);
      }
    await database.drop().catch(() => {});
    return out;
  })
).flat();
await sink.close();

const table = [
  '| backend | configuration | requests / s (best round) | vs off | p50 | p99 | every round, requests / s |',
  '|---|---|---:|---:|---:|---:|---|',
  ...rows.map((r) => {
    const off = rows.find((x) => x.backend === r.backend && x.config === 'off')!;
    return `| ${r.backend} | ${r.config} | ${Math.round(r.rps)} | ${one((r.rps / off.rps) * 100)} % | ${r.p50} ms | ${r.p99} ms | ${r.rounds.map((x) => Math.round(x)).join(', ')} |`;
  }),
].join('\n');
writeReadmeSection(
  'telemetry',
  '## What metrics and traces cost (`bench/telemetry.ts`, issue #15)',
  `${lastRun(`${ROWS.toLocaleString('en')} results in one tenant, \`GET /v1/activity-results?limit=50\`, autocannon ${CONNECTIONS} connections × ${SECONDS} s per row, compiled server; the OTLP sink received ${(sink.bytes() / 1024 / 1024).toFixed(1)} MiB of spans.`)}\n\n${table}`,
);
console.log(table);
