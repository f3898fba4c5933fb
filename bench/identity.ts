/**
 * Identity benchmark (issue: sign-ins per second and p99 at the chosen argon2id cost; the CPU
 * cost of 1,000 wrong-password attempts against a rate-limited account).
 *
 *   npm run bench:identity
 *   BENCH_ATTEMPTS=1000 BENCH_SECONDS=10 BENCH_PG=postgres://postgres@127.0.0.1:5432 npm run bench:identity
 *
 * 1. A fresh PostgreSQL database with BENCH_USERS users whose passwords are hashed at the
 *    production argon2id cost (the config default, OWASP m=19456 KiB, t=2, p=1).
 * 2. Server A (a child process, DATABASE_URL mode) with the sign-in limits lifted:
 *    - autocannon, 8 connections, BENCH_SECONDS: password sign-ins cycling over the users →
 *      sign-ins/s, p50, p99;
 *    - the floor: raw argon2id verifications/s at the same cost, in this process, 4 at a time
 *      (libuv's thread pool size, the server's parallelism for hashing);
 *    - BENCH_ATTEMPTS wrong-password attempts on one account, no limit → server CPU time.
 * 3. Server B with the production per-email limit (10 per 5 min; the per-IP limit lifted, as for
 *    a distributed guesser): the same BENCH_ATTEMPTS wrong-password attempts → server CPU time
 *    and how many were 429.
 * Server CPU time is utime + stime of the server process from /proc/<pid>/stat.
 * 4. Prints a table and rewrites the "identity" section of bench/README.md.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import autocannon from 'autocannon';
import postgres from 'postgres';
import { migrate, openDb } from '../src/db/index.ts';
import { OWASP_ARGON2ID, hashPassword, setArgon2Cost, verifyPassword } from '../src/identity/passwords.ts';
import { createUser } from '../src/identity/users.ts';
import { BENCH_PG, BENCH_SECRETS, startBenchServer, type BenchServer } from './common.ts';

const DURATION = Number(process.env.BENCH_SECONDS ?? 10);
const ATTEMPTS = Number(process.env.BENCH_ATTEMPTS ?? 1000);
const USERS = Number(process.env.BENCH_USERS ?? 20);
const CONNECTIONS = 8;
const PORT = 8798;
const dbName = `svc_bench_identity_${Date.now().toString(36)}`;
const dbUrl = `${BENCH_PG}/${dbName}`;
const CLK_TCK = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
const base = `http://127.0.0.1:${PORT}/auth/v1`;
const headers = { apikey: BENCH_SECRETS.SVC_ANON_KEY, 'content-type': 'application/json', 'x-supabase-api-version': '2024-01-01' };

async function load() {
  const admin = postgres(`${BENCH_PG}/postgres`, { max: 1, onnotice: () => {} });
  await admin.unsafe(`create database ${dbName}`);
  await admin.end();
  const db = await openDb({ databaseUrl: dbUrl });
  await migrate(db);
  setArgon2Cost(OWASP_ARGON2ID);
  for (let i = 0; i < USERS; i++) {
    await db.transaction((tx) => createUser(tx, { email: `u${i}@bench.test`, password: `bench password ${i}`, emailConfirm: true }));
  }
  await db.transaction((tx) => createUser(tx, { email: 'victim@bench.test', password: 'the victim password', emailConfirm: true }));
  await db.close();
}

function cpuMs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(fields[11]) + Number(fields[12])) / CLK_TCK) * 1000; // utime, stime (fields 14, 15)
}

/** The server on the benchmark's database and PORT (Node.js's default heap limits, as bench/README.md's figures were measured). */
const startServer = (env: Record<string, string>) => startBenchServer({ DATABASE_URL: dbUrl, ...BENCH_SECRETS, ...env }, { port: PORT, nodeFlags: [] });

async function signIns() {
  const requests = Array.from({ length: USERS }, (_, i) => ({
    method: 'POST' as const,
    path: '/auth/v1/token?grant_type=password',
    headers,
    body: JSON.stringify({ email: `u${i}@bench.test`, password: `bench password ${i}` }),
  }));
  const result = await autocannon({ url: `http://127.0.0.1:${PORT}`, connections: CONNECTIONS, duration: DURATION, requests });
  if (result.non2xx) throw new Error(`sign-in: ${result.non2xx} non-2xx answers`);
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99 };
}

/** Raw argon2id verifications per second at the production cost, `parallel` at a time. */
async function rawArgon2(parallel: number, seconds: number) {
  setArgon2Cost(OWASP_ARGON2ID);
  const stored = await hashPassword('raw verify password');
  let done = 0;
  const until = Date.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (Date.now() < until) {
        await verifyPassword(stored, 'raw verify password');
        done++;
      }
    }),
  );
  return done / seconds;
}

/**
 * Mean latency (ms) of `n` sequential failed sign-ins with an unknown email and `n` with a wrong
 * password, interleaved: the two failures should cost the same.
 */
async function failureTiming(n: number) {
  const sums = { unknown: 0, wrong: 0 };
  for (let i = 0; i < n; i++) {
    for (const kind of ['unknown', 'wrong'] as const) {
      const email = kind === 'unknown' ? `nobody${i}@bench.test` : `u${i % USERS}@bench.test`;
      const started = performance.now();
      const res = await fetch(`${base}/token?grant_type=password`, { method: 'POST', headers, body: JSON.stringify({ email, password: 'not the password' }) });
      await res.arrayBuffer();
      if (res.status !== 400) throw new Error(`${kind}: ${res.status}`);
      sums[kind] += performance.now() - started;
    }
  }
  return { unknown: sums.unknown / n, wrong: sums.wrong / n };
}

/** `n` wrong-password attempts on the victim, 8 at a time; server CPU ms spent and the answers. */
async function wrongPasswords(server: BenchServer, n: number) {
  const before = cpuMs(server.pid);
  const started = Date.now();
  const statuses: Record<number, number> = {};
  let next = 0;
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (next < n) {
        const i = next++;
        const res = await fetch(`${base}/token?grant_type=password`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ email: 'victim@bench.test', password: `guess number ${i}` }),
        });
        await res.arrayBuffer();
        statuses[res.status] = (statuses[res.status] ?? 0) + 1;
      }
    }),
  );
  return { cpuMs: cpuMs(server.pid) - before, wallMs: Date.now() - started, statuses };
}

async function main() {
  await load();
  const lifted = { SVC_AUTH_SIGNIN_PER_IP: '1000000', SVC_AUTH_SIGNIN_PER_EMAIL: '1000000' };
  let server = await startServer(lifted);
  let signIn: Awaited<ReturnType<typeof signIns>>;
  let unlimited: Awaited<ReturnType<typeof wrongPasswords>>;
  let timing: Awaited<ReturnType<typeof failureTiming>>;
  let limited: Awaited<ReturnType<typeof wrongPasswords>>;
  const load1 = loadavg()[0]!;
  try {
    await signIns(); // warm up (JIT, pool, page cache)
    signIn = await signIns();
    timing = await failureTiming(40);
    unlimited = await wrongPasswords(server, ATTEMPTS);
  } finally {
    await server.stop();
  }
  const raw = await rawArgon2(4, Math.min(DURATION, 5));
  server = await startServer({ SVC_AUTH_SIGNIN_PER_IP: '1000000' }); // per-email limit at its default
  try {
    limited = await wrongPasswords(server, ATTEMPTS);
  } finally {
    await server.stop();
    const admin = postgres(`${BENCH_PG}/postgres`, { max: 1, onnotice: () => {} });
    await admin.unsafe(`drop database if exists ${dbName} with (force)`);
    await admin.end();
  }

  const cost = `argon2id m=${OWASP_ARGON2ID.memoryKib} KiB, t=${OWASP_ARGON2ID.timeCost}, p=${OWASP_ARGON2ID.parallelism}`;
  const statusText = (s: Record<number, number>) =>
    Object.entries(s)
      .map(([k, v]) => `${v}× ${k}`)
      .join(', ');
  const table = [
    '| what | figure |',
    '|---|---:|',
    `| password sign-ins / s (${CONNECTIONS} connections, ${USERS} users) | ${signIn.rps.toFixed(1)} |`,
    `| sign-in latency p50 / p99 | ${signIn.p50.toFixed(0)} ms / ${signIn.p99.toFixed(0)} ms |`,
    `| raw argon2id verifications / s, 4 at a time, same cost (the floor) | ${raw.toFixed(1)} |`,
    `| failed sign-in, mean of 40 sequential: unknown email / wrong password | ${timing.unknown.toFixed(1)} ms / ${timing.wrong.toFixed(1)} ms |`,
    `| ${ATTEMPTS.toLocaleString('en')} wrong passwords, no limit: server CPU | ${(unlimited.cpuMs / 1000).toFixed(1)} s (${statusText(unlimited.statuses)}) |`,
    `| ${ATTEMPTS.toLocaleString('en')} wrong passwords, per-email limit 10 / 5 min: server CPU | ${(limited.cpuMs / 1000).toFixed(2)} s (${statusText(limited.statuses)}) |`,
  ].join('\n');
  const summary =
    `Sign-ins ÷ raw argon2id: **${((signIn.rps / raw) * 100).toFixed(0)} %**; server CPU per wrong-password attempt: ` +
    `**${((limited.cpuMs / ATTEMPTS) * 1000).toFixed(0)} µs** with the limit (the first 10 hashed, the rest refused before hashing) ` +
    `vs **${(unlimited.cpuMs / ATTEMPTS).toFixed(1)} ms** without (**${(unlimited.cpuMs / Math.max(limited.cpuMs, 1)).toFixed(0)}×** less).`;
  const section = `<!-- identity:start -->\nLast run: ${new Date().toISOString().slice(0, 16)}Z, ${cost}, ${cpus().length} cores, load average ${load1.toFixed(1)} at the start (the machine is shared: figures are noisy).\n\n${table}\n\n${summary}\n<!-- identity:end -->`;
  console.log(`\n${table}\n\n${summary}`);
  const readmePath = new URL('./README.md', import.meta.url);
  const readme = readFileSync(readmePath, 'utf8');
  const intro = `## Identity — \`npm run bench:identity\`

Password sign-ins through the real server (a child process on PostgreSQL) at the production
argon2id cost, against the floor of raw argon2id verifications at that cost; then the server's
CPU time for ${'`BENCH_ATTEMPTS`'} wrong-password attempts on one account, without and with the
per-email sign-in limit. The limit is checked before any hashing, so a refused attempt costs
parsing and a counter increment, not an argon2id run.

`;
  writeFileSync(
    readmePath,
    readme.includes('<!-- identity:start -->')
      ? readme.replace(/<!-- identity:start -->[\s\S]*<!-- identity:end -->/, section)
      : `${readme.trimEnd()}\n\n${intro}${section}\n`,
  );
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
