/**
 * Pieces the benchmarks share: latency percentiles, a timer, and a fresh database per backend
 * (PostgreSQL: a new database on BENCH_PG, default postgres://postgres@127.0.0.1:5432, dropped
 * afterwards; PGlite: a temporary data folder, as `npm start` uses).
 */
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
