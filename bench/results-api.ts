/**
 * Results-API benchmark against raw PostgreSQL, in one run (DESIGN §7, issue #4).
 *
 *   npm run bench:results                                      # 100,000 results over 10 tenants
 *   BENCH_ROWS=1000000 BENCH_TENANTS=100 npm run bench:results  # the issue's size
 *
 * 1. Creates a fresh database on BENCH_PG (default postgres://postgres@127.0.0.1:5432), migrates
 *    it and loads BENCH_ROWS activity results (one artifact each, plus progress) across
 *    BENCH_TENANTS tenants with generate_series: one tenant holds 91 % of them (BENCH_BIG_SHARE),
 *    the others share the rest; requests are measured on the big tenant. BENCH_DB=<name> reuses a database an earlier
 *    run kept (BENCH_KEEP=1) instead of loading.
 * 2. Starts the real server as `npm start` runs it (compiled dist/main.js with its Node flags, a
 *    child process, DATABASE_URL mode, rate limit out of the way; the npm script builds first) and
 *    measures with a load generator at 8 connections — wrk when installed (Debian's `wrk`),
 *    else autocannon; BENCH_LOADGEN=autocannon forces it — the first 50-row page, a page 90 %
 *    deep (900,000 rows deep in the 1M run), a filtered page, and /v1/progress. Right after each,
 *    the same request on bench/relay-floor.ts (BENCH_PORT + 1), the floor of a Node.js relay
 *    (node:http and pg, the API's query and nothing else), and then
 * 3. pgbench (-c 8) on the same request: the statement the API sends, prepared
 *    with its one text[] parameter bound (its statement function, with the role and tenant
 *    switch and RLS — "the same SQL"), and, for reference, the bare page query as the table owner
 *    with its arguments inlined (simple protocol: planned on every run).
 * 4. Measures the first page on servers run without one of `npm start`'s defaults (VARIANTS).
 *    Unless BENCH_PROFILE=0, runs the first page once more on a server under V8's CPU profiler
 *    (`--cpu-prof`, a sample every 250 µs) and keeps the steady state (start-up and warm-up cut
 *    off) in bench/flamegraphs/: results-api-first-page.cpuprofile (Chrome DevTools, speedscope)
 *    and results-api-first-page.svg (a flame graph), plus a table of where the time goes.
 * 5. Prints the tables and rewrites the "results-api" section of bench/README.md.
 *
 * Figures: requests per second, p50 and p99 latency in milliseconds, the server's CPU time (user
 * + system, /proc) per request in µs, the whole machine's busy CPU time per request and per pgbench
 * transaction (/proc/stat) and the server CPU per request the 85 % target leaves, the ratio API ÷
 * pgbench per request, the deep ÷ first page cost, the server's peak RSS sampled during the load,
 * the profile's shares by kind of work, and the machine's load average before and after the run
 * (the machine may be shared).
 */
import { execFile, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import autocannon from 'autocannon';
import { migrate, openDb } from '../src/db/index.ts';
import { DEFAULT_POOL_SIZE } from '../src/config/db-defaults.ts';
import { arrayLiteral } from '../test/helpers/plans.ts';
import { loadResults } from '../test/helpers/results-load.ts';
import {
  createApiKey,
  cursorCodec,
  listStatement,
  statementCall,
  type Endpoint,
  type ListOptions,
  type PageStatement,
  type Position,
} from '../src/results/index.ts';
import { BENCH_SECRETS, keptDatabase, markdownTable, START_FLAGS, startBenchServer, writeReadmeSection } from './common.ts';

const ROWS = Number(process.env.BENCH_ROWS ?? 100_000);
const TENANTS = Number(process.env.BENCH_TENANTS ?? 10);
const DURATION = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = 8;
/** Node flags of the measured server (BENCH_NODE_FLAGS overrides; default: those of `npm start`). */
const NODE_FLAGS = process.env.BENCH_NODE_FLAGS ?? START_FLAGS.join(' ');
/** A young generation of 3 × 4 MiB: V8 grows it to 3 × 16 MiB under a high allocation rate. */
const LEAN_YOUNG = '--max-semi-space-size=4';
/**
 * Variants measured on the first page only, to show what the defaults buy: Node's default heap
 * limits (young generation up to 3 × 16 MiB; old generation sized for the machine's memory, which
 * lets garbage pile up to ~140 MiB between full collections), the small young generation alone,
 * and a pool of 10 connections (postgres.js's default, the service's driver until issue #11)
 * instead of SVC_DB_POOL_SIZE's default (2 × cores, at least 4).
 */
const VARIANTS: { label: string; flags: string; env: Record<string, string> }[] = [
  { label: 'default Node flags', flags: '', env: {} },
  { label: `only \`${LEAN_YOUNG}\``, flags: LEAN_YOUNG, env: {} },
  { label: '`SVC_DB_POOL_SIZE=10`', flags: NODE_FLAGS, env: { SVC_DB_POOL_SIZE: '10' } },
];
const PORT = Number(process.env.BENCH_PORT ?? 8799);
const ACTIVITIES_PER_TENANT = 20;
/** Share of all rows held by the one big tenant the requests are measured on. */
const BIG_SHARE = Number(process.env.BENCH_BIG_SHARE ?? 0.91);
const run = promisify(execFile);
const database = keptDatabase('svc_bench');
const { url: dbUrl, reused: reuse } = database;
const hasWrk = spawnSync('wrk', ['--version']).error === undefined;
const loadgen = process.env.BENCH_LOADGEN ?? (hasWrk ? 'wrk' : 'autocannon');

interface Seed {
  tenantId: string;
  tenantRows: number;
  deep: Position;
  activityId: string;
  key: string;
}

async function load(): Promise<void> {
  await database.create();
  const db = await openDb({ databaseUrl: dbUrl, dbStatementTimeoutMs: 0 }); // loading a million rows is one long statement
  await migrate(db);
  const started = Date.now();
  await loadResults(db, { rows: ROWS, tenants: TENANTS, activitiesPerTenant: ACTIVITIES_PER_TENANT, bigShare: BIG_SHARE });
  await db.exec('vacuum analyze');
  await db.close();
  console.log(`loaded ${ROWS.toLocaleString('en')} results (+ artifacts, progress) over ${TENANTS} tenants in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

/** The biggest tenant, its 90 %-deep position, an activity and a fresh key. */
async function seed(): Promise<Seed> {
  const db = await openDb({ databaseUrl: dbUrl });
  const [tenant] = await db.query<{ id: string; rows: number }>(
    `select tenant_id as id, count(*)::int as rows from activity_results group by 1 order by 2 desc, 1 limit 1`,
  );
  const [deep] = await db.query<{ ts: string; id: string }>(
    `select to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as ts, id::text from activity_results
      where tenant_id = $1 order by created_at, id offset $2 limit 1`,
    [tenant!.id, tenant!.rows > 900_000 ? 900_000 : Math.floor(tenant!.rows * 0.9)],
  );
  const [activity] = await db.query<{ id: string }>('select id from activities where tenant_id = $1 order by id limit 1', [tenant!.id]);
  const key = (await createApiKey(db, tenant!.id, 'bench')).key;
  await db.close();
  return { tenantId: tenant!.id, tenantRows: tenant!.rows, deep: { at: deep!.ts, id: deep!.id }, activityId: activity!.id, key };
}

interface Figures {
  rps: number;
  p50: number;
  p99: number;
  /** Requests answered in the run (API runs only). */
  n?: number;
  /** CPU time (user + system) of the server process per request, µs (API runs only). */
  cpuUs?: number;
  /** CPU time of the whole machine (every process, both cores) per request, µs. */
  machineUs?: number;
}

function percentile(sorted: number[], p: number) {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

/** wrk's latency text (`1.23ms`, `850.00us`, `1.02s`) in milliseconds. */
function wrkMillis(text: string): number {
  const m = /^([\d.]+)(us|ms|s|m)$/.exec(text)!;
  const v = Number(m[1]);
  return m[2] === 'us' ? v / 1000 : m[2] === 'ms' ? v : m[2] === 's' ? v * 1000 : v * 60_000;
}

async function http(path: string, key: string, port = PORT): Promise<Figures> {
  const url = `http://127.0.0.1:${port}${path}`;
  if (loadgen === 'wrk') {
    const { stdout } = await run('wrk', ['-t', '2', '-c', String(CONNECTIONS), '-d', `${DURATION}s`, '--latency', '-H', `Authorization: Bearer ${key}`, url]);
    if (/Non-2xx or 3xx responses/.test(stdout)) throw new Error(`${path}: non-2xx answers\n${stdout}`);
    const p = (q: string) => wrkMillis(new RegExp(`^\\s+${q}%\\s+(\\S+)`, 'm').exec(stdout)![1]!);
    const n = Number(/(\d+) requests in/.exec(stdout)![1]);
    return { rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(stdout)![1]), p50: p('50'), p99: p('99'), n };
  }
  const result = await autocannon({ url, connections: CONNECTIONS, duration: DURATION, headers: { authorization: `Bearer ${key}` } });
  if (result.non2xx) throw new Error(`${path}: ${result.non2xx} non-2xx answers`);
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99, n: result.requests.total };
}

/** CPU time (user + system) `pid` has used so far, in µs (Linux /proc, clock ticks of 10 ms). */
function cpuMicros(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

/** Busy CPU time of the whole machine so far (all cores, everything but idle and I/O wait), in µs (/proc/stat). */
function machineMicros(): number {
  const [, ...ticks] = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).map(Number);
  const [user, nice, system, , , irq, softirq, steal] = ticks as number[];
  return (user! + nice! + system! + irq! + softirq! + steal!) * 10_000;
}

/** `http(path, key, port)` with the server's CPU time (`cpuUs`) and the machine's (`machineUs`) per request. */
async function measured(pid: number, path: string, key: string, port = PORT): Promise<Figures> {
  const before = cpuMicros(pid);
  const machine = machineMicros();
  const figures = await http(path, key, port);
  return { ...figures, cpuUs: (cpuMicros(pid) - before) / figures.n!, machineUs: (machineMicros() - machine) / figures.n! };
}

/**
 * pgbench at CONNECTIONS clients for DURATION seconds. With `args`, the statement is prepared
 * (`-M prepared`) and `:args` is bound as its one parameter, as the API sends it; without, the
 * text runs as it is (simple protocol).
 */
async function pgbench(sql: string, args?: string): Promise<Figures> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-'));
  const file = join(dir, 'page.sql');
  writeFileSync(file, `${sql.replace(/\s+/g, ' ').trim()};\n`);
  const mode = args === undefined ? [] : ['-M', 'prepared', '-D', `args=${args}`];
  const machine = machineMicros();
  const { stdout } = await run(
    'pgbench',
    [
      '-n',
      ...mode,
      '-c',
      String(CONNECTIONS),
      '-j',
      String(Math.min(CONNECTIONS, cpus().length)),
      '-T',
      String(DURATION),
      '-f',
      file,
      '--log',
      '--log-prefix',
      join(dir, 'log'),
      dbUrl,
    ],
    { cwd: dir, maxBuffer: 64 << 20 },
  );
  const machineUs = (machineMicros() - machine) / Number(/number of transactions actually processed: (\d+)/.exec(stdout)![1]);
  const tps = Number(/tps = ([\d.]+)/.exec(stdout)![1]);
  const { stdout: files } = await run('sh', ['-c', `cat ${join(dir, 'log')}*`], { maxBuffer: 512 << 20 });
  const latencies = files
    .trim()
    .split('\n')
    .map((l) => Number(l.split(' ')[2]) / 1000)
    .sort((a, b) => a - b);
  return { rps: tps, p50: percentile(latencies, 50), p99: percentile(latencies, 99), machineUs };
}

/**
 * The page statement with its arguments inlined as literals, for pgbench: `p_args[n]` → the n-th
 * argument. The statement pgbench runs is the one the API's statement function runs, without the
 * tenant/role switch around it (pgbench runs as the table owner, so RLS is not even evaluated).
 */
function inline(statement: PageStatement): string {
  return statement.text
    .replace(/p_args\[(\d+)\]/g, (_m, i) => `'${String(statement.args[Number(i) - 1]).replace(/'/g, "''")}'`)
    .replace(/\bhorizon\b/g, 'now()');
}

/**
 * Exactly what the API sends for a page: the call of its statement function, which switches to
 * the results role and the tenant (RLS) and runs the cached page query.
 */
function apiStatement(statement: PageStatement): { sql: string; args: string } {
  return { sql: statementCall(statement).text.replace('$1', ':args'), args: arrayLiteral(statement.args) };
}

/** Port of the relay (bench/relay-floor.ts), which runs beside the server. */
const RELAY_PORT = PORT + 1;

/**
 * Start bench/relay-floor.ts (the floor of a Node.js relay: node:http + pg, the API's query and
 * nothing else) on RELAY_PORT, answering each of `routes` (request target → the statement the API sends
 * for it); resolves once it listens.
 */
async function startRelay(routes: Record<string, { text: string; values: unknown[] }>): Promise<{ pid: number; stop: () => Promise<void> }> {
  const child = spawn(process.execPath, [fileURLToPath(new URL('./relay-floor.ts', import.meta.url))], {
    env: {
      PATH: process.env.PATH,
      RELAY_DB: dbUrl,
      RELAY_PORT: String(RELAY_PORT),
      RELAY_POOL: String(DEFAULT_POOL_SIZE),
      RELAY_ROUTES: JSON.stringify(routes),
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => chunk.toString().includes('relay listening') && resolve());
    child.once('exit', (code) => reject(new Error(`the relay exited (${code}) before listening`)));
  });
  const exited = new Promise((r) => child.once('exit', r));
  const stop = async () => {
    child.kill('SIGTERM');
    await exited;
  };
  return { pid: child.pid!, stop };
}

/** Peak RSS of `pid` in MiB, sampled every 100 ms until `stop()`. */
function sampleRss(pid: number) {
  let peak = 0;
  const timer = setInterval(() => {
    try {
      peak = Math.max(peak, Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024);
    } catch {
      /* the process ended */
    }
  }, 100);
  return () => {
    clearInterval(timer);
    return peak;
  };
}

/** Where the profile of the first page is kept (BENCH_PROFILE=0 skips the profiled run). */
const PROFILE = process.env.BENCH_PROFILE !== '0';
const FLAMEGRAPHS = new URL('./flamegraphs/', import.meta.url);
/** Sampling interval of the profiled run, µs (V8's default is 1000). */
const PROFILE_INTERVAL_US = 250;

/** A V8 CPU profile (`--cpu-prof`): a call tree, and which node was on top at each sample. */
interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

/**
 * Where the server's time goes, by the top frame of each sample. Socket writes are the write
 * syscalls (to the load generator and to PostgreSQL); the profiler samples wall time, so on a
 * shared machine they also hold the time the process waits to be scheduled again after waking
 * its peer. Order matters: the first rule that matches names the sample.
 */
const CATEGORIES: [label: string, test: (fn: string, url: string) => boolean][] = [
  ['idle (waiting for PostgreSQL or the client)', (fn) => fn === '(idle)'],
  ['garbage collection', (fn) => fn === '(garbage collector)'],
  ['socket writes (syscalls)', (fn) => fn === 'writeUtf8String' || fn === 'writev' || fn === 'writeBuffer' || fn === 'writeLatin1String'],
  ['node-postgres (pg, pg-protocol, pg-pool)', (_fn, url) => /node_modules\/pg(-[a-z]+)?\//.test(url)],
  [
    'Fastify (router, hooks, reply; @fastify/rate-limit)',
    (_fn, url) => /node_modules\/(fastify|find-my-way|@fastify|avvio|light-my-request|toad-cache)\//.test(url),
  ],
  ['zod (query validation)', (_fn, url) => /node_modules\/zod\//.test(url)],
  ['Node HTTP, sockets, streams', (_fn, url) => /^node:(_http|net|internal\/streams|internal\/stream_base|internal\/http|events|buffer)/.test(url)],
  ['crypto (key digest, cursor HMAC, request id)', (fn, url) => url.startsWith('node:internal/crypto') || url === 'node:crypto' || /Hash|Hmac|digest/.test(fn)],
  ['this service (src/, compiled to dist/)', (_fn, url) => url.includes('/src/') || url.includes('/dist/')],
  ['other', () => true],
];

/**
 * The profile's samples taken between `from` and `to` (µs, the profiler's monotonic clock), as a
 * profile of its own: the steady state under load, without start-up and warm-up.
 */
function window(profile: CpuProfile, from: number, to: number): CpuProfile {
  const samples: number[] = [];
  const timeDeltas: number[] = [];
  let t = profile.startTime;
  let last = from;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i]!;
    if (t < from || t > to) continue;
    samples.push(profile.samples[i]!);
    timeDeltas.push(t - last);
    last = t;
  }
  // Only the call-tree nodes the kept samples stand on (start-up's code is left out of the file).
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const keep = new Set<number>();
  for (const id of samples) for (let at: number | undefined = id; at !== undefined && !keep.has(at); at = parent.get(at)) keep.add(at);
  const nodes = profile.nodes
    .filter((node) => keep.has(node.id))
    .map(({ id, callFrame, children }) => ({ id, callFrame, children: (children ?? []).filter((c) => keep.has(c)) }));
  return { nodes, startTime: from, endTime: to, samples, timeDeltas };
}

/** Sampled time per call-tree node id, µs (each sample counts the time until the next). */
function selfTimes(profile: CpuProfile): Map<number, number> {
  const self = new Map<number, number>();
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i]!;
    self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i + 1] ?? 0));
  }
  return self;
}

/** A markdown table: the share of the sampled time (and of the busy time) each category takes. */
function profileTable(profile: CpuProfile, requests: number): string {
  const self = selfTimes(profile);
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const sums = new Map<string, number>();
  let total = 0;
  for (const [id, us] of self) {
    const { functionName, url } = byId.get(id)!.callFrame;
    const label = CATEGORIES.find(([, test]) => test(functionName, url))![0];
    sums.set(label, (sums.get(label) ?? 0) + us);
    total += us;
  }
  const idle = sums.get(CATEGORIES[0]![0]) ?? 0;
  const busy = total - idle;
  const rows = CATEGORIES.map(([label]) => {
    const us = sums.get(label) ?? 0;
    return [
      label,
      `${((us / total) * 100).toFixed(1)} %`,
      label === CATEGORIES[0]![0] ? '' : `${((us / busy) * 100).toFixed(1)} %`,
      `${(us / requests).toFixed(0)}`,
    ];
  });
  return markdownTable(['top frame of the sample', 'share of wall time', 'share of busy time', 'µs per request'], rows);
}

/** Escape text for SVG. */
const xml = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/**
 * An SVG flame graph of `profile` (idle left out): one box per call-tree node, as wide as its
 * sampled time including its callees, callers below callees; hover for name, place and share.
 */
function flameGraph(profile: CpuProfile, title: string): string {
  const self = selfTimes(profile);
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const total = new Map<number, number>();
  const sum = (id: number): number => {
    const node = byId.get(id)!;
    if (node.callFrame.functionName === '(idle)') {
      total.set(id, 0);
      return 0;
    }
    const t = (self.get(id) ?? 0) + (node.children ?? []).reduce((acc, c) => acc + sum(c), 0);
    total.set(id, t);
    return t;
  };
  const root = profile.nodes[0]!.id;
  const all = sum(root);
  const width = 1600;
  const row = 16;
  const boxes: string[] = [];
  let depthMax = 0;
  const place = (id: number, x: number, depth: number) => {
    const w = (total.get(id)! / all) * width;
    if (w < 0.3) return;
    depthMax = Math.max(depthMax, depth);
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    const name = functionName || '(anonymous)';
    const where = url ? ` ${url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*?\/(src|bench)\//, '$1/')}:${lineNumber + 1}` : '';
    const label = CATEGORIES.findIndex(([, test]) => test(functionName, url));
    const hue = [0, 0, 20, 200, 280, 50, 120, 330, 30, 90][label] ?? 90;
    boxes.push(
      `<g><title>${xml(`${name}${where}: ${((total.get(id)! / all) * 100).toFixed(2)} %`)}</title><rect x="${x.toFixed(1)}" y="${depth}" width="${w.toFixed(1)}" height="${row - 1}" fill="hsl(${hue},70%,${60 + (depth % 3) * 6}%)"/>` +
        (w > 40 ? `<text x="${(x + 3).toFixed(1)}" y="${depth}" dy="11">${xml(name.slice(0, Math.floor(w / 7)))}</text>` : '') +
        '</g>',
    );
    let cx = x;
    for (const c of byId.get(id)!.children ?? []) {
      place(c, cx, depth + 1);
      cx += (total.get(c)! / all) * width;
    }
  };
  place(root, 0, 0);
  const height = (depthMax + 3) * row;
  // Depth counts from the bottom: callers below their callees.
  const flipped = boxes.map((b) => b.replace(/ y="(\d+)"/g, (_m, d: string) => ` y="${height - (Number(d) + 2) * row}"`));
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="monospace" font-size="11">`,
    `<title>${xml(title)}</title>`,
    `<text x="4" y="12">${xml(title)}</text>`,
    ...flipped,
    '</svg>',
  ].join('\n');
}

/**
 * The first page on a server run under V8's CPU profiler (`--cpu-prof`, one sample every
 * PROFILE_INTERVAL_US): the steady state under load is kept in bench/flamegraphs/ as
 * results-api-first-page.cpuprofile (open it in Chrome DevTools' Performance panel or
 * speedscope) and .svg (a flame graph); returns the section's text on where the time goes.
 */
async function profileFirstPage(path: string, key: string): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-bench-prof-'));
  const server = await startServer(`${NODE_FLAGS} --cpu-prof --cpu-prof-dir=${dir} --cpu-prof-interval=${PROFILE_INTERVAL_US}`);
  let from = 0;
  let to = 0;
  let figures: Figures;
  try {
    await http(path, key);
    from = Number(process.hrtime.bigint() / 1000n);
    figures = await http(path, key);
    to = Number(process.hrtime.bigint() / 1000n);
  } finally {
    await server.stop();
  }
  const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'))!;
  const steady = window(JSON.parse(readFileSync(join(dir, file), 'utf8')) as CpuProfile, from, to);
  mkdirSync(FLAMEGRAPHS, { recursive: true });
  const title = `Results API, first page (50 rows), ${DURATION} s at ${CONNECTIONS} connections under the profiler, ${new Date().toISOString().slice(0, 16)}Z`;
  writeFileSync(new URL('results-api-first-page.cpuprofile', FLAMEGRAPHS), JSON.stringify(steady));
  writeFileSync(new URL('results-api-first-page.svg', FLAMEGRAPHS), flameGraph(steady, title));
  return (
    `Where the server's time goes on the first page (V8 CPU profile of a server run once more under the profiler, ` +
    `${figures.n} requests at ${Math.round(figures.rps)} req/s — the profiler slows it; steady state only; ` +
    `bench/flamegraphs/results-api-first-page.svg, and .cpuprofile for Chrome DevTools or speedscope):\n\n${profileTable(steady, figures.n!)}`
  );
}

/** Start the server (`node [flags] dist/main.js`, as `npm start`) on the benchmark's database and PORT; resolves once it listens. */
const startServer = (flags: string, env: Record<string, string> = {}) =>
  startBenchServer(
    { DATABASE_URL: dbUrl, SVC_RATE_LIMIT: '1000000000', ...BENCH_SECRETS, ...env },
    { port: PORT, nodeFlags: flags.split(' ').filter(Boolean), compiled: true },
  );

async function main() {
  const load1 = loadavg()[0]!;
  if (!reuse) await load();
  const s = await seed();
  let server = await startServer(NODE_FLAGS);
  try {
    const deepCursor = cursorCodec(BENCH_SECRETS.SVC_JWT_SECRET).encode(
      { tenantId: s.tenantId, endpoint: 'activity-results', order: 'created', filters: {} },
      s.deep,
    );
    const cases: { name: string; path: string; endpoint: Endpoint; options: ListOptions }[] = [
      {
        name: 'first page (50 rows)',
        path: '/v1/activity-results?limit=50',
        endpoint: 'activity-results',
        options: { limit: 50, filters: {}, order: 'created' },
      },
      {
        name: `page ${(s.tenantRows > 900_000 ? 900_000 : Math.floor(s.tenantRows * 0.9)).toLocaleString('en')} rows deep`,
        path: `/v1/activity-results?limit=50&cursor=${deepCursor}`,
        endpoint: 'activity-results',
        options: { limit: 50, filters: {}, order: 'created', after: s.deep },
      },
      {
        name: 'filtered page (activity_id)',
        path: `/v1/activity-results?limit=50&activity_id=${s.activityId}`,
        endpoint: 'activity-results',
        options: { limit: 50, filters: { activity_id: s.activityId }, order: 'created' },
      },
      { name: '/v1/progress (50 rows)', path: '/v1/progress?limit=50', endpoint: 'progress', options: { limit: 50, filters: {}, order: 'created' } },
    ];
    // Each request on the API, on the floor of a Node.js relay (bench/relay-floor.ts) and on
    // pgbench, back to back: the host's speed drifts by tens of percent over minutes, so what is
    // compared is measured within the same half minute. pgbench runs twice: the statement the API
    // sends (its statement function: role and tenant switch, RLS, cached plan), and the bare page
    // query as the table owner (no RLS).
    const relay = await startRelay(Object.fromEntries(cases.map((c) => [c.path, statementCall(listStatement(c.endpoint, s.tenantId, c.options))])));
    const api: Figures[] = [];
    const floor: Figures[] = [];
    const same: Figures[] = [];
    const bare: Figures[] = [];
    const stopRss = sampleRss(server.pid);
    try {
      await http(cases[0]!.path, s.key); // warm up
      await http(cases[0]!.path, s.key, RELAY_PORT);
      for (const c of cases) {
        api.push(await measured(server.pid, c.path, s.key));
        floor.push(await measured(relay.pid, c.path, s.key, RELAY_PORT));
        const statement = listStatement(c.endpoint, s.tenantId, c.options);
        const sent = apiStatement(statement);
        same.push(await pgbench(sent.sql, sent.args));
        bare.push(await pgbench(inline(statement)));
      }
    } finally {
      await relay.stop();
    }
    const rss = stopRss();
    await server.stop();
    // The first page once more on servers run without one of the defaults.
    const variants: { label: string; figures: Figures; rss: number }[] = [];
    for (const v of VARIANTS) {
      server = await startServer(v.flags, v.env);
      await http(cases[0]!.path, s.key);
      const stopVariantRss = sampleRss(server.pid);
      const figures = await http(cases[0]!.path, s.key);
      variants.push({ label: v.label, figures, rss: stopVariantRss() });
      await server.stop();
    }
    // The first page once more on a server under the V8 CPU profiler (slower: not a figure of the table).
    const profile = PROFILE ? await profileFirstPage(cases[0]!.path, s.key) : undefined;

    const f = (n: number) => n.toFixed(2);
    const pct = (a: number, b: number) => `${((a / b) * 100).toFixed(0)} %`;
    const table = [
      '| request | API req/s | API p50 ms | API p99 ms | server CPU µs/req | pgbench, same SQL: tps | p50 ms | p99 ms | **API ÷ pgbench** | pgbench, bare query (owner, no RLS): tps | API ÷ bare |',
      '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
      ...cases.map(
        (c, i) =>
          `| ${c.name} | ${Math.round(api[i]!.rps)} | ${f(api[i]!.p50)} | ${f(api[i]!.p99)} | ${Math.round(api[i]!.cpuUs!)} | ${Math.round(same[i]!.rps)} | ${f(same[i]!.p50)} | ${f(same[i]!.p99)} | **${pct(api[i]!.rps, same[i]!.rps)}** | ${Math.round(bare[i]!.rps)} | ${pct(api[i]!.rps, bare[i]!.rps)} |`,
      ),
    ].join('\n');
    const us = (n: number) => Math.round(n).toLocaleString('en');
    // What the server may spend per request for the API to reach 85 % of pgbench: the machine's
    // CPU per pgbench transaction ÷ 0.85, less what everything but the server (PostgreSQL, the load
    // generator) spent per API request.
    const budget = (i: number) => same[i]!.machineUs! / 0.85 - (api[i]!.machineUs! - api[i]!.cpuUs!);
    const floorTable = [
      '| request | machine CPU µs per pgbench transaction | machine CPU µs per API request | of it the server | server CPU the 85 % target leaves | bare relay: req/s | ÷ pgbench | its CPU µs/req | p99 ms | **API ÷ relay** |',
      '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
      ...cases.map(
        (c, i) =>
          `| ${c.name} | ${us(same[i]!.machineUs!)} | ${us(api[i]!.machineUs!)} | ${us(api[i]!.cpuUs!)} | ${us(budget(i))} | ${Math.round(floor[i]!.rps)} | ${pct(floor[i]!.rps, same[i]!.rps)} | ${us(floor[i]!.cpuUs!)} | ${f(floor[i]!.p99)} | **${pct(api[i]!.rps, floor[i]!.rps)}** |`,
      ),
    ].join('\n');
    const floorText =
      'The floor of a Node.js relay, measured on the same database between the API and pgbench, request by request: bench/relay-floor.ts — `node:http` and a `pg` pool of the same size, ' +
      'per request only the API’s own query (the same statement call and arguments) and the page sent back; no key, rate limit, validation or cursor. ' +
      'CPU columns: busy time of the whole machine (/proc/stat, both cores) per pgbench transaction and per API request, the server’s share of the latter, ' +
      'and what the server could spend per request if the API were to reach 85 % of pgbench (the machine’s time per pgbench transaction ÷ 0.85, ' +
      'less what PostgreSQL and the load generator spent per API request).';
    const summary =
      `Deep ÷ first page cost (API, time per request): **${(api[0]!.rps / api[1]!.rps).toFixed(2)}×**; ` +
      `API ÷ pgbench (same SQL), first page: **${pct(api[0]!.rps, same[0]!.rps)}**; ` +
      `worst API p99: **${f(Math.max(...api.map((a) => a.p99)))} ms**; server peak RSS under load: **${rss.toFixed(0)} MiB**` +
      ` (server run as \`npm start\`: \`node ${NODE_FLAGS}\`, pool of SVC_DB_POOL_SIZE's default, ${DEFAULT_POOL_SIZE} here). First page on a server run ` +
      variants
        .map(
          (v) =>
            `with ${v.label}: ${Math.round(v.figures.rps)} req/s, p50 ${f(v.figures.p50)} ms, p99 ${f(v.figures.p99)} ms, peak RSS ${v.rss.toFixed(0)} MiB`,
        )
        .join('; ') +
      '.';
    const when = new Date().toISOString().slice(0, 16);
    const load2 = loadavg()[0]!;
    const profiled = profile ? `\n\n${profile}` : '';
    const loaded = process.env.BENCH_DB ? 'a database kept by an earlier run (BENCH_DB)' : `${ROWS.toLocaleString('en')} results over ${TENANTS} tenants`;
    const tables = `${table}\n\n${summary}\n\n${floorText}\n\n${floorTable}${profiled}`;
    const body = `Last run: ${when}Z, ${loaded} (the measured tenant holds ${s.tenantRows.toLocaleString('en')}), ${CONNECTIONS} connections, ${DURATION} s each, load generator ${loadgen}, ${cpus().length} cores shared by server, PostgreSQL and load generator; 1-minute load average before the run: ${load1.toFixed(2)}, after: ${load2.toFixed(2)}.\n\n${tables}`;
    console.log(`\n${tables}`);
    writeReadmeSection('results-api', '## Results API — `npm run bench:results`', body);
  } finally {
    await server.stop();
    await database.release();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
