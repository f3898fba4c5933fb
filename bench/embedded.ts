/**
 * Memory and readiness of the embedded service (issue #24): `npm start` on PGlite, driven end to
 * end by `npm run demo -- --url` (the demo's tour: admin commands through the server's door,
 * sign-ins, an MCP import of the sample course, judged submissions, the results API, the player's
 * partner page), the judge being the loopback model (test/helpers/test-model.ts).
 *
 *   npm run bench:embedded                      # builds dist/ first; BENCH_RUNS=3
 *   BENCH_COMPARE=/path/to/other/checkout BENCH_COMPARE_LABEL='before (abc1234)' npm run bench:embedded
 *                                               # the same steps on that checkout's dist/ too (build it there first)
 *   BENCH_TIER_UP=1 npm run bench:embedded      # and on this checkout started with --wasm-dynamic-tiering
 *                                               # (V8's optimising tier for PGlite's WASM, src/db/pglite.ts)
 *
 * Per column (setup), in a temporary data folder of its own:
 *   1. first start on the empty folder (initdb + every migration): spawn → `/readyz` 200, peak RSS;
 *   2. BENCH_RUNS times: a normal start on the existing folder (spawn → `/readyz` 200), idle RSS 5 s
 *      after ready, the demo's tour against it (the server's RSS sampled every 50 ms from
 *      /proc/<pid>/status VmRSS), idle RSS 5 s after the demo ended, the peak (VmHWM: the highest
 *      resident set since spawn, start-up included), then `kill -9` and a restart (spawn →
 *      `/readyz` 200: the lock taken over, PGlite's crash recovery), stopped with SIGTERM.
 * The setups take turns run by run. Medians go to bench/README.md with the load average at the
 * start and at the end, and the server's CPU time (user + system, /proc/<pid>/stat) until ready and
 * during the tour, which the machine's load does not inflate as it does wall-clock times.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startTestModel } from '../test/helpers/test-model.ts';
import { lastRun, markdownTable, median, one, START_FLAGS, writeReadmeSection } from './common.ts';

const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const PORT = Number(process.env.BENCH_PORT ?? 8798);
const HERE = fileURLToPath(new URL('..', import.meta.url));
const SAMPLE_MS = 50;
const READY_TIMEOUT_MS = 120_000;
const DEMO_TIMEOUT_MS = 300_000;

/** VmRSS / VmHWM of `pid` in MiB (Linux /proc), NaN once it has exited. */
function status(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  try {
    return Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;
  } catch {
    return Number.NaN;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const exited = (child: ChildProcess) => new Promise<void>((r) => (child.exitCode !== null || child.signalCode !== null ? r() : child.once('exit', () => r())));

interface Server {
  /** Milliseconds from spawn to the first `/readyz` 200, and the CPU time (user + system) it had used then. */
  readyMs: number;
  readyCpuMs: number;
  /** CPU time used since spawn (user + system), milliseconds. */
  cpuMs(): number;
  rss(): number;
  hwm(): number;
  /** The highest VmRSS sampled since `resetSampled()` (or spawn). */
  sampled(): number;
  resetSampled(): void;
  stop(signal: 'SIGTERM' | 'SIGKILL'): Promise<void>;
}

/** CPU time (user + system) `pid` has used, in milliseconds (/proc/<pid>/stat, in clock ticks of 10 ms). */
function cpuMs(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return Number.NaN;
  }
}

/** Spawn `node <flags> dist/main.js` of the setup's checkout on `dataDir`, and wait for `/readyz` 200. */
async function startServer({ root, flags }: Setup, dataDir: string, env: Record<string, string>): Promise<Server> {
  const started = performance.now();
  const child = spawn(process.execPath, [...flags, 'dist/main.js'], {
    cwd: root,
    env: { PATH: process.env.PATH, HOST: '127.0.0.1', PORT: String(PORT), SVC_DATA_DIR: dataDir, SVC_ACCESS_LOG: 'off', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  let sampled = 0;
  const sampler = setInterval(() => {
    sampled = Math.max(sampled, status(child.pid!, 'VmRSS') || 0);
  }, SAMPLE_MS);
  const stop = async (signal: 'SIGTERM' | 'SIGKILL') => {
    clearInterval(sampler);
    const done = exited(child);
    child.kill(signal);
    await done;
  };
  for (;;) {
    const ok = await fetch(`http://127.0.0.1:${PORT}/readyz`, { signal: AbortSignal.timeout(1000) }).then(
      (res) => res.status === 200,
      () => false,
    );
    if (ok) break;
    if (child.exitCode !== null || performance.now() - started > READY_TIMEOUT_MS) {
      await stop('SIGKILL');
      throw new Error(`the server in ${root} was not ready (exit ${child.exitCode}):\n${stderr}`);
    }
    await sleep(20);
  }
  return {
    readyMs: performance.now() - started,
    readyCpuMs: cpuMs(child.pid!),
    cpuMs: () => cpuMs(child.pid!),
    rss: () => status(child.pid!, 'VmRSS'),
    hwm: () => status(child.pid!, 'VmHWM'),
    sampled: () => sampled,
    resetSampled: () => {
      sampled = 0;
    },
    stop,
  };
}

/** `npm run demo -- --url <url>` (this checkout's demo) until its tour is done; then SIGINT, as Ctrl-C. */
async function runDemo(url: string, dataDir: string): Promise<number> {
  const started = performance.now();
  const demo = spawn(process.execPath, ['--import', 'tsx', 'scripts/demo.ts', '--url', url], {
    cwd: HERE,
    env: { ...process.env, SVC_DATA_DIR: dataDir },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const collect = (chunk: Buffer) => {
    output += chunk.toString();
  };
  demo.stdout!.on('data', collect);
  demo.stderr!.on('data', collect);
  const done = await new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), DEMO_TIMEOUT_MS);
    demo.stdout!.on('data', () => {
      if (output.includes('Serving until Ctrl-C')) {
        clearTimeout(timer);
        resolve(true);
      }
    });
    demo.once('exit', () => {
      clearTimeout(timer);
      resolve(false);
    });
  });
  const ms = performance.now() - started;
  const gone = exited(demo);
  demo.kill('SIGINT');
  await gone;
  if (!done) throw new Error(`the demo's tour did not finish:\n${output}`);
  if (/verdict on .*: pending/.test(output)) console.warn("bench: a verdict of the demo's tour stayed pending (the judge did not answer in time)");
  return ms;
}

interface Run {
  readyMs: number;
  readyCpuMs: number;
  idle: number;
  demoMs: number;
  demoCpuMs: number;
  demoPeak: number;
  afterDemo: number;
  hwm: number;
  kill9ReadyMs: number;
}

/** A server to measure: the dist/ of `root`, started with `flags`. */
interface Setup {
  label: string;
  root: string;
  flags: string[];
}

const setups: Setup[] = [
  { label: 'this checkout', root: HERE, flags: START_FLAGS },
  ...(process.env.BENCH_TIER_UP === '1'
    ? [{ label: 'this checkout, `--wasm-dynamic-tiering` (TurboFan back)', root: HERE, flags: [...START_FLAGS, '--wasm-dynamic-tiering'] }]
    : []),
  ...(process.env.BENCH_COMPARE
    ? [{ label: process.env.BENCH_COMPARE_LABEL ?? process.env.BENCH_COMPARE, root: process.env.BENCH_COMPARE, flags: START_FLAGS }]
    : []),
];

const model = await startTestModel();
const env = { SVC_JUDGE_BASE_URL: model.baseUrl, SVC_JUDGE_MODEL: 'bench', SVC_JUDGE_API_KEY: 'bench', SVC_SHUTDOWN_DELAY: '0' };
const state = setups.map((setup) => ({
  setup,
  dataDir: mkdtempSync(join(tmpdir(), 'svc-bench-embedded-')),
  runs: [] as Run[],
  fresh: { readyMs: 0, readyCpuMs: 0, idle: 0, hwm: 0 },
}));
try {
  for (const entry of state) {
    const first = await startServer(entry.setup, entry.dataDir, env);
    await sleep(5000);
    entry.fresh = { readyMs: first.readyMs, readyCpuMs: first.readyCpuMs, idle: first.rss(), hwm: first.hwm() };
    await first.stop('SIGTERM');
  }
  // The setups take turns run by run, so that the machine's load changes weigh on each alike.
  for (let i = 0; i < RUNS; i++) {
    for (const entry of state) {
      const server = await startServer(entry.setup, entry.dataDir, env);
      await sleep(5000);
      const idle = server.rss();
      server.resetSampled();
      const cpuBefore = server.cpuMs();
      const demoMs = await runDemo(`http://127.0.0.1:${PORT}`, entry.dataDir);
      const demoCpuMs = server.cpuMs() - cpuBefore;
      const demoPeak = server.sampled();
      await sleep(5000);
      const afterDemo = server.rss();
      const hwm = server.hwm();
      await server.stop('SIGKILL');
      const restarted = await startServer(entry.setup, entry.dataDir, env);
      await restarted.stop('SIGTERM');
      const run = {
        readyMs: server.readyMs,
        readyCpuMs: server.readyCpuMs,
        idle,
        demoMs,
        demoCpuMs,
        demoPeak,
        afterDemo,
        hwm,
        kill9ReadyMs: restarted.readyMs,
      };
      console.log(entry.setup.label, run);
      entry.runs.push(run);
    }
  }
} finally {
  await model.close();
  for (const entry of state) rmSync(entry.dataDir, { recursive: true, force: true });
}
const results = state.map(({ fresh, runs }) => ({
  fresh,
  m: (key: keyof Run) => median(runs.map((r) => r[key])),
  range: (key: keyof Run, unit: (x: number) => string) => `${unit(Math.min(...runs.map((r) => r[key])))}–${unit(Math.max(...runs.map((r) => r[key])))}`,
}));
const loadAtEnd = loadavg()[0]!.toFixed(1);

const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const mib = (x: number) => `${one(x)} MiB`;
const head = ['', ...setups.map((setup) => setup.label), 'target'];
const row = (label: string, target: string, cell: (r: (typeof results)[number]) => string) => [label, ...results.map(cell), target];
const table = markdownTable(head, [
  row('first start on an empty folder (initdb + migrations): spawn → `/readyz` 200 / CPU time', '—', (r) => `${s(r.fresh.readyMs)} / ${s(r.fresh.readyCpuMs)}`),
  row('… its peak RSS (VmHWM) / RSS 5 s after ready', '—', (r) => `${mib(r.fresh.hwm)} / ${mib(r.fresh.idle)}`),
  row('normal start on the existing folder: spawn → `/readyz` 200 (range)', '≤ 3 s', (r) => `${s(r.m('readyMs'))} (${r.range('readyMs', s)})`),
  row('… CPU time of the server until then (user + system)', '—', (r) => s(r.m('readyCpuMs'))),
  row('idle RSS, 5 s after ready', '≤ 250 MiB', (r) => mib(r.m('idle'))),
  row("highest RSS sampled during the demo's tour (range)", '≤ 450 MiB', (r) => `${mib(r.m('demoPeak'))} (${r.range('demoPeak', one)})`),
  row('peak RSS since spawn (VmHWM: start-up and tour)', '≤ 450 MiB', (r) => mib(r.m('hwm'))),
  row('idle RSS, 5 s after the demo', '≤ 250 MiB', (r) => mib(r.m('afterDemo'))),
  row('restart after `kill -9`: spawn → `/readyz` 200 (range)', '≤ 5 s', (r) => `${s(r.m('kill9ReadyMs'))} (${r.range('kill9ReadyMs', s)})`),
  row("the demo's tour (client time included) / the server's CPU time during it", '—', (r) => `${s(r.m('demoMs'))} / ${s(r.m('demoCpuMs'))}`),
]);
writeReadmeSection(
  'embedded',
  '## The embedded service: memory and readiness (`bench/embedded.ts`, issue #24)',
  `${lastRun(`load average ${loadAtEnd} at the end; Node.js ${process.versions.node}, \`npm start\`'s flags (${START_FLAGS.join(' ')}) unless the column says; medians of ${RUNS} runs per column, the columns taking turns.`)}\n\n${table}`,
);
console.log(table);
