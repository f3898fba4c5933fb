/**
 * Pieces the benchmarks share: latency percentiles, a timer, and a fresh database per backend
 * (PostgreSQL: a new database on BENCH_PG, default postgres://postgres@127.0.0.1:5432, dropped
 * afterwards; PGlite: a temporary data folder, as `npm start` uses), the app in this process
 * with a signed-in author (`startBenchApp`), the real server as a child process
 * (`startBenchServer`), and the bench/README.md table and section writers.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import postgres from 'postgres';
import { runOp } from '../src/admin/ops.ts';
import { buildApp } from '../src/app.ts';
import { loadConfig } from '../src/config.ts';
import { migrate, openDb, type Db } from '../src/db/index.ts';

export const BENCH_PG = process.env.BENCH_PG ?? 'postgres://postgres@127.0.0.1:5432';

/** p50 / p99 (nearest rank) of latencies in milliseconds, and their count. */
export type Stats = { p50: number; p99: number; n: number };
export const stats = (ms: number[]): Stats => {
  const s = [...ms].sort((a, b) => a - b);
  const at = (p: number) => s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? 0;
  return { p50: at(50), p99: at(99), n: s.length };
};

/** The median of `xs` (the mean of the middle two for an even count). */
export const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

/** Runs `fn`; returns [milliseconds, its value]. */
export async function timed<T>(fn: () => Promise<T>): Promise<[number, T]> {
  const started = performance.now();
  const value = await fn();
  return [performance.now() - started, value];
}

/** A fresh, unmigrated database of `backend` named after `prefix`; `env` is what the app's config needs to open it. */
export async function benchDatabase(
  prefix: string,
  backend: 'postgres' | 'pglite',
): Promise<{ db: Db; env: Record<string, string>; drop: () => Promise<void> }> {
  if (backend === 'pglite') {
    const dir = mkdtempSync(join(tmpdir(), `svc-bench-${prefix}-`));
    const db = await openDb({ dataDir: dir });
    return {
      db,
      env: { SVC_DATA_DIR: dir },
      drop: async () => {
        await db.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  const name = `svc_bench_${prefix}_${Date.now().toString(36)}`;
  await adminSql(`create database ${name}`);
  const url = `${BENCH_PG}/${name}`;
  const db = await openDb({ databaseUrl: url });
  return {
    db,
    env: { DATABASE_URL: url },
    drop: async () => {
      await db.close();
      await adminSql(`drop database if exists ${name} with (force)`);
    },
  };
}

/** Run `sql` (create or drop a database) on the bench server's `postgres` database, on a connection of its own. */
async function adminSql(sql: string): Promise<void> {
  const conn = postgres(`${BENCH_PG}/postgres`, { max: 1, onnotice: () => {} });
  try {
    await conn.unsafe(sql);
  } finally {
    await conn.end();
  }
}

/**
 * The PostgreSQL database of a benchmark whose load is worth keeping: the one named by BENCH_DB
 * (kept by an earlier run: `reused`, not created or loaded again), else a new `<prefix>_<time>`.
 * `create()` makes a new one (nothing when reused); `release()` drops it at the end unless it was
 * reused or BENCH_KEEP=1, and then says how to reuse it.
 */
export function keptDatabase(prefix: string) {
  const reused = process.env.BENCH_DB !== undefined;
  const name = process.env.BENCH_DB ?? `${prefix}_${Date.now().toString(36)}`;
  const keep = reused || process.env.BENCH_KEEP === '1';
  return {
    name,
    url: `${BENCH_PG}/${name}`,
    reused,
    create: async () => {
      if (!reused) await adminSql(`create database ${name}`);
    },
    release: async () => {
      if (keep) console.log(`kept database ${name} (BENCH_DB=${name} reuses it)`);
      else await adminSql(`drop database if exists ${name} with (force)`);
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

/** The submitted work of the judge's benches: an ~900-byte design note (bench/embed.ts, bench/calibration.ts). */
export const DESIGN_NOTE = 'Problem: long URLs are hard to share. Design: a counter encoded in base62, a table (code, url), a 301 redirect. '.repeat(8);

/** Secrets a server on PostgreSQL requires (benchmarks only). */
export const BENCH_SECRETS = {
  SVC_JWT_SECRET: 'bench-jwt-secret-0123456789-abcdefghijklmnop',
  SVC_ANON_KEY: 'sb_publishable_bench_0123456789',
  SVC_SERVICE_ROLE_KEY: 'sb_secret_bench_0123456789abcdef',
};

/** The Node.js flags of `npm start` (package.json's start script), which benchmarked servers run with by default. */
export const START_FLAGS: string[] = /^(?:exec )?node (.*?)\s*dist\/main\.js$/
  .exec((JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { scripts: { start: string } }).scripts.start)![1]!
  .split(' ')
  .filter(Boolean);

/** A markdown table of `rows` under `head`: the first column left-aligned, the others (figures) right-aligned. */
export function markdownTable(head: string[], rows: string[][]): string {
  const line = (cells: string[]) => `| ${cells.join(' | ')} |`;
  return [line(head), `|---|${'---:|'.repeat(head.length - 1)}`, ...rows.map(line)].join('\n');
}

export interface BenchApp {
  db: Db;
  /** Where the app listens (loopback, a port the system picked). */
  url: string;
  /** The author's access token from the password grant. */
  token: string;
  /** An MCP SDK client over Streamable HTTP to `/mcp`, authorised by `token` (default: the author's); `close` closes it. */
  connect(name: string, token?: string): Promise<Client>;
  /** Close the MCP clients, the app and the database (dropped). */
  close(): Promise<void>;
}

/**
 * The real app in this process (client time counts in every figure) on a fresh, migrated
 * database of `backend` (`benchDatabase(prefix, …)`), listening on loopback, with BENCH_SECRETS
 * and `env` over them, warn logs; then the tenant "bench" with one author (`author.email`,
 * `author.password`, created with the default argon2id cost) signed in by the password grant.
 */
export async function startBenchApp(
  prefix: string,
  backend: 'postgres' | 'pglite',
  author: { email: string; password: string },
  env: Record<string, string> = {},
): Promise<BenchApp> {
  const { db, env: dbEnv, drop } = await benchDatabase(prefix, backend);
  await migrate(db);
  const config = loadConfig({ ...dbEnv, ...BENCH_SECRETS, ...env, PORT: '0', LOG_LEVEL: 'warn' });
  const app = await buildApp({ config, db, now: () => new Date() });
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  config.baseUrl = url;
  const clients: Client[] = [];
  const close = async () => {
    for (const c of clients) await c.close().catch(() => {});
    await app.close();
    await drop();
  };
  try {
    await runOp(db, 'tenant.create', { slug: 'bench', name: 'Bench' });
    await runOp(db, 'user.create', author);
    await runOp(db, 'author.grant', { tenant: 'bench', email: author.email });
    const signIn = await fetch(`${url}/auth/v1/token?grant_type=password`, {
      method: 'POST',
      headers: { apikey: config.anonKey, 'content-type': 'application/json' },
      body: JSON.stringify(author),
    });
    const { access_token: token } = (await signIn.json()) as { access_token: string };
    const connect = async (name: string, as = token) => {
      const client = new Client({ name, version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${as}` } } }));
      clients.push(client);
      return client;
    };
    return { db, url, token, connect, close };
  } catch (err) {
    await close();
    throw err;
  }
}

export interface BenchServer {
  /** `http://127.0.0.1:<port>`, as the server's "service listening on …" log line names it. */
  url: string;
  pid: number;
  /** Milliseconds from spawn to the "service listening" log line. */
  startMs: number;
  /** Resident set size now (VmRSS) and its peak so far (VmHWM), in MiB (Linux /proc). */
  rss(): { now: number; peak: number };
  /** SIGTERM, then wait for the exit (at once when it has exited already). */
  stop(): Promise<void>;
}

export interface BenchServerOptions {
  /** The port to listen on; 0 (the default): one the system picks. */
  port?: number;
  /** `node dist/main.js` as `npm start` runs it (run `npm run build` first); default: `node --import tsx src/main.ts` as `npm run dev`. */
  compiled?: boolean;
  /** Node.js flags before the script; default: those of `npm start` (START_FLAGS). */
  nodeFlags?: string[];
}

const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** How long a server may take to listen before the bench gives up (PGlite opens in seconds). */
const START_TIMEOUT_MS = 60_000;

/**
 * Start the real server as a child process of the repository's root, with `env` over PATH,
 * loopback and no access log, and resolve once it logs "service listening on <url>" (so the log
 * level is always `info`; with the access log off nothing is logged per request). Its stderr
 * goes to this process's. Rejects with the server's output when it exits before listening or
 * does not listen within a minute (it is killed then).
 */
export async function startBenchServer(
  env: Record<string, string>,
  { port = 0, compiled = false, nodeFlags = START_FLAGS }: BenchServerOptions = {},
): Promise<BenchServer> {
  const args = [...nodeFlags, ...(compiled ? ['dist/main.js'] : ['--import', 'tsx', 'src/main.ts'])];
  const started = performance.now();
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { PATH: process.env.PATH, HOST: '127.0.0.1', PORT: String(port), SVC_ACCESS_LOG: 'off', ...env, LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  let timer: NodeJS.Timeout | undefined;
  const listening = await new Promise<{ url: string; ms: number }>((resolve, reject) => {
    const read = (chunk: Buffer) => {
      output += chunk.toString();
      const url = /service listening on (http:\/\/[^"\s]+)/.exec(output)?.[1];
      if (url) resolve({ url, ms: performance.now() - started });
    };
    child.stdout!.on('data', read);
    child.stderr!.on('data', read);
    child.once('exit', (code, signal) => reject(new Error(`the server exited (${code ?? signal}) before listening:\n${output}`)));
    timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`the server did not listen within ${START_TIMEOUT_MS / 1000} s:\n${output}`));
    }, START_TIMEOUT_MS);
  }).finally(() => clearTimeout(timer));
  child.stdout!.removeAllListeners('data').resume();
  child.stderr!.removeAllListeners('data').pipe(process.stderr);
  const status = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))![1]) / 1024;
  return {
    url: listening.url,
    pid: child.pid!,
    startMs: listening.ms,
    rss: () => ({ now: status('VmRSS'), peak: status('VmHWM') }),
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    },
  };
}
