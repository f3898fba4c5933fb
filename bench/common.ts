/**
 * Pieces the benchmarks share: latency percentiles, a timer, and a fresh database per backend
 * (PostgreSQL: a new database on BENCH_PG, default postgres://postgres@127.0.0.1:5432, dropped
 * afterwards; PGlite: a temporary data folder, as `npm start` uses), the real server as a child
 * process, and the bench/README.md section writer.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { openDb, type Db } from '../src/db/index.ts';

export const BENCH_PG = process.env.BENCH_PG ?? 'postgres://postgres@127.0.0.1:5432';

/** p50 / p99 (nearest rank) of latencies in milliseconds, and their count. */
export type Stats = { p50: number; p99: number; n: number };
export const stats = (ms: number[]): Stats => {
  const s = [...ms].sort((a, b) => a - b);
  const at = (p: number) => s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? 0;
  return { p50: at(50), p99: at(99), n: s.length };
};

/** Runs `fn`; returns [milliseconds, its value]. */
export async function timed<T>(fn: () => Promise<T>): Promise<[number, T]> {
  const started = performance.now();
  const value = await fn();
  return [performance.now() - started, value];
}

/** A fresh, unmigrated database of `backend` named after `prefix`; `env` is what the app's config needs to open it. */
export async function benchDatabase(prefix: string, backend: 'postgres' | 'pglite'): Promise<{ db: Db; env: Record<string, string>; drop: () => Promise<void> }> {
  if (backend === 'pglite') {
    const dir = mkdtempSync(join(tmpdir(), `svc-bench-${prefix}-`));
    const db = await openDb({ dataDir: dir });
    return { db, env: { SVC_DATA_DIR: dir }, drop: async () => { await db.close(); rmSync(dir, { recursive: true, force: true }); } };
  }
  const name = `svc_bench_${prefix}_${Date.now().toString(36)}`;
  const admin = postgres(`${BENCH_PG}/postgres`, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${name}`);
  const url = `${BENCH_PG}/${name}`;
  const db = await openDb({ databaseUrl: url });
  return {
    db,
    env: { DATABASE_URL: url },
    drop: async () => {
      await db.close();
      await admin.unsafe(`drop database if exists ${name} with (force)`);
      await admin.end();
    },
  };
}

/** The backends of BENCH_BACKENDS (default both), each benchmarked in turn by `bench`. */
export async function eachBackend<T>(bench: (backend: 'postgres' | 'pglite') => Promise<T>): Promise<T[]> {
  const results: T[] = [];
  for (const backend of (process.env.BENCH_BACKENDS ?? 'postgres,pglite').split(',') as ('postgres' | 'pglite')[]) {
    console.log(`benchmarking ${backend} …`);
    results.push(await bench(backend));
  }
  return results;
}

/**
 * Put `body` between the `<!-- name:start -->` and `<!-- name:end -->` markers of
 * bench/README.md; the first time, append it under `heading` (a markdown section of its own).
 */
export function writeReadmeSection(name: string, heading: string, body: string): void {
  const path = new URL('./README.md', import.meta.url);
  const readme = readFileSync(path, 'utf8');
  const section = `<!-- ${name}:start -->\n${body}\n<!-- ${name}:end -->`;
  const marked = new RegExp(`<!-- ${name}:start -->[\\s\\S]*<!-- ${name}:end -->`);
  writeFileSync(path, marked.test(readme) ? readme.replace(marked, section) : `${readme.trimEnd()}\n\n${heading}\n\n${section}\n`);
}

/** The 1-minute load average when the benchmark started (this module loads first). */
const loadAtStart = loadavg()[0]!.toFixed(1);

/** The "Last run" line of a README section: when, cores, load at the start, then `detail`. */
export const lastRun = (detail: string) =>
  `Last run: ${new Date().toISOString().slice(0, 16)}Z, ${cpus().length} cores, load average ${loadAtStart} at the start (a shared machine: figures are noisy), ${detail}`;

/** A figure with one decimal. */
export const one = (n: number) => n.toFixed(1);

/** Secrets a server on PostgreSQL requires (benchmarks only). */
export const BENCH_SECRETS = {
  SVC_JWT_SECRET: 'bench-jwt-secret-0123456789-abcdefghijklmnop',
  SVC_ANON_KEY: 'sb_publishable_bench_0123456789',
  SVC_SERVICE_ROLE_KEY: 'sb_secret_bench_0123456789abcdef',
};

export interface BenchServer {
  url: string;
  pid: number;
  /** Milliseconds from spawn to the "service listening" log line. */
  startMs: number;
  /** Resident set size now (VmRSS) and its peak so far (VmHWM), in MiB (Linux /proc). */
  rss(): { now: number; peak: number };
  stop(): Promise<void>;
}

/**
 * Start the real server as a child process on `port` with `env` (plus PATH, loopback, warn logs),
 * either as `npm start` runs it (`compiled`: node dist/main.js — run `npm run build` first) or as
 * `npm run dev` does (node --import tsx src/main.ts), with the same V8 flags as package.json.
 */
export async function startBenchServer(env: Record<string, string>, port: number, compiled = true): Promise<BenchServer> {
  const flags = ['--max-semi-space-size=4', '--max-old-space-size=1024'];
  const args = compiled ? [...flags, 'dist/main.js'] : [...flags, '--import', 'tsx', 'src/main.ts'];
  const started = performance.now();
  const child = spawn(process.execPath, args, {
    env: { PATH: process.env.PATH, HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: 'info', SVC_ACCESS_LOG: 'off', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const startMs = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('service listening')) resolve(performance.now() - started);
    });
    child.once('exit', (code) => reject(new Error(`the server exited (${code}) before listening:\n${out}`)));
  });
  child.stdout!.resume();
  const status = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))![1]) / 1024;
  return {
    url: `http://127.0.0.1:${port}`,
    pid: child.pid!,
    startMs,
    rss: () => ({ now: status('VmRSS'), peak: status('VmHWM') }),
    stop: async () => {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    },
  };
}
