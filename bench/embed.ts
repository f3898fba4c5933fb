/**
 * Embed judge benchmark (issues #6, #10): verdicts per second with an instant model, and the
 * latency the judge adds around the model call — with the cost bounds on: every submission is
 * counted against the learner's rate and every model call reserved in the tenant's budget (the
 * ledger), with limits set high enough not to be reached (BENCH_LEARNER_RATE, default 100,000 per minute).
 *
 *   npm run bench:embed
 *   BENCH_BACKENDS=postgres BENCH_SECONDS=20 npm run bench:embed
 *
 * For each backend (BENCH_BACKENDS, default `postgres,pglite`):
 * 1. A fresh database (PostgreSQL on BENCH_PG, or an embedded data folder) is migrated and
 *    seeded with a tenant, its IdP (the loopback test IdP) and a `document` activity.
 * 2. The real server (`src/main.ts`, a child process) starts with the loopback test model as its
 *    judge (SVC_JUDGE_CONCURRENCY=BENCH_WORKERS, default 8); a learner gets a session token.
 * 3. Throughput: autocannon posts submissions to /v1/embed/judge for BENCH_SECONDS with
 *    BENCH_CONNECTIONS (default 8) connections, the model answering at once. Every answer is a
 *    verdict unless it says `pending`; the figure is verdicts per second (and pending answers).
 * 4. Added latency: with the model answering after BENCH_MODEL_DELAY ms (default 100),
 *    BENCH_SAMPLES (default 60) sequential submissions are timed end to end, and so are as many
 *    direct calls to the model with a grading request of the same size. The judge's added
 *    latency is the difference of the medians (and of the 99th percentiles): authentication,
 *    storing the submission and its job, waking a worker, reading the artifact, the verdict's
 *    transaction, and the answer.
 * 5. Prints a table and rewrites the "embed" section of bench/README.md.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import postgres from 'postgres';
import { runOp } from '../src/admin/ops.ts';
import { migrate, openDb, type Db } from '../src/db/index.ts';
import { startTestIdp } from '../test/helpers/test-idp.ts';
import { startTestModel } from '../test/helpers/test-model.ts';
import { DESIGN_NOTE, startBenchServer } from './common.ts';

const SERVER = process.env.BENCH_PG ?? 'postgres://postgres@127.0.0.1:5432';
const BACKENDS = (process.env.BENCH_BACKENDS ?? 'postgres,pglite')
  .split(',')
  .map((b) => b.trim())
  .filter(Boolean);
const DURATION = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 8);
const WORKERS = Number(process.env.BENCH_WORKERS ?? 8);
const MODEL_DELAY = Number(process.env.BENCH_MODEL_DELAY ?? 100);
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 60);

interface Row {
  backend: string;
  verdictsPerSecond: number;
  pendingShare: number;
  non2xx: number;
  p50: number;
  p99: number;
  e2eP50: number;
  e2eP99: number;
  modelP50: number;
  modelP99: number;
}

const quantile = (values: number[], q: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
};

async function seed(db: Db, idp: { issuer: string; jwksUrl: string }): Promise<string> {
  await runOp(db, 'tenant.create', { slug: 'bench' });
  await runOp(db, 'idp.set', { tenant: 'bench', issuer: idp.issuer, jwks_url: idp.jwksUrl });
  const [tenant] = await db.query<{ id: string }>(`select id from tenants where slug = 'bench'`);
  const [program] = await db.query<{ id: string }>(`insert into programs (tenant_id, title) values ($1, 'Bench') returning id`, [tenant!.id]);
  const [unit] = await db.query<{ id: string }>(`insert into units (program_id, title) values ($1, 'Unit') returning id`, [program!.id]);
  const [lesson] = await db.query<{ id: string }>(`insert into lessons (unit_id, title) values ($1, 'Lesson') returning id`, [unit!.id]);
  const [activity] = await db.query<{ id: string }>(
    `insert into activities (lesson_id, title, kind, spec, rubric, pass_threshold)
     values ($1, 'Design a URL shortener', 'document', 'Write a one-page design note.', $2::text::jsonb, 70) returning id`,
    [
      lesson!.id,
      JSON.stringify([{ criterion: 'States the problem' }, { criterion: 'Discusses trade-offs', weight: 2 }, { criterion: 'Names the data model' }]),
    ],
  );
  return activity!.id;
}

async function measure(backend: string): Promise<Row> {
  const [idp, model] = await Promise.all([startTestIdp(), startTestModel()]);
  let db: Db;
  let target: Record<string, string>;
  let drop: () => Promise<void>;
  if (backend === 'postgres') {
    const name = `svc_bench_embed_${Date.now().toString(36)}`;
    const admin = postgres(SERVER, { max: 1, onnotice: () => {} });
    await admin.unsafe(`create database ${name}`);
    db = await openDb({ databaseUrl: `${SERVER}/${name}` });
    target = {
      DATABASE_URL: `${SERVER}/${name}`,
      SVC_JWT_SECRET: randomBytes(36).toString('base64url'),
      SVC_ANON_KEY: `anon_${randomBytes(18).toString('base64url')}`,
      SVC_SERVICE_ROLE_KEY: `service_${randomBytes(24).toString('base64url')}`,
    };
    drop = async () => {
      await admin.unsafe(`drop database if exists ${name} with (force)`);
      await admin.end();
    };
  } else {
    const dir = mkdtempSync(join(tmpdir(), 'svc-bench-embed-'));
    db = await openDb({ dataDir: dir });
    target = { SVC_DATA_DIR: dir };
    drop = async () => rmSync(dir, { recursive: true, force: true });
  }
  await migrate(db);
  const activityId = await seed(db, idp);
  await db.close();

  const server = await startBenchServer(
    {
      HOME: process.env.HOME!,
      ...target,
      SVC_ACCESS_LOG: 'on', // as in production
      SVC_JUDGE_BASE_URL: model.baseUrl,
      SVC_JUDGE_MODEL: 'bench-model',
      SVC_JUDGE_CONCURRENCY: String(WORKERS),
      SVC_JUDGE_WAIT: '30',
      SVC_FETCH_ALLOW_PRIVATE: '1',
      // The bounds are checked on every submission and call, but not reached.
      SVC_JUDGE_LEARNER_RATE: process.env.BENCH_LEARNER_RATE ?? '100000',
      SVC_JUDGE_TENANT_CALLS_PER_HOUR: '1000000000',
      SVC_JUDGE_TENANT_CALLS_PER_DAY: '1000000000',
      SVC_JUDGE_TENANT_TOKENS_PER_HOUR: '1000000000000',
      SVC_JUDGE_TENANT_TOKENS_PER_DAY: '1000000000000',
    },
    { nodeFlags: [] }, // Node.js's default heap limits, as bench/README.md's figures were measured
  );
  try {
    const s = await fetch(`${server.url}/v1/embed/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ tenant: 'bench', idp_token: await idp.sign({ sub: 'bench-learner' }) }),
    });
    const { access_token: token } = (await s.json()) as { access_token: string };
    const body = JSON.stringify({ tenant: 'bench', activity_id: activityId, artifact: { kind: 'document', content: DESIGN_NOTE } });
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${token}` };
    const submit = async () => {
      const res = await fetch(`${server.url}/v1/embed/judge`, { method: 'POST', headers, body });
      return (await res.json()) as { status: string };
    };
    for (let i = 0; i < 20; i++) await submit(); // warm-up

    // Throughput with an instant model.
    let pending = 0;
    let answered = 0;
    const result = await autocannon({
      url: `${server.url}/v1/embed/judge`,
      method: 'POST',
      headers,
      body,
      connections: CONNECTIONS,
      duration: DURATION,
      setupClient: (client) => {
        client.on('body', (b: Buffer) => {
          answered++;
          if (b.includes('"pending"')) pending++;
        });
      },
    });
    const seconds = result.duration || DURATION;
    const verdicts = (result['2xx'] - pending) / seconds;

    // Added latency around a model that takes MODEL_DELAY ms.
    model.setDelay(MODEL_DELAY);
    const e2e: number[] = [];
    for (let i = 0; i < SAMPLES; i++) {
      const started = performance.now();
      const r = await submit();
      if (r.status === 'pending') throw new Error('a timed submission answered pending');
      e2e.push(performance.now() - started);
    }
    const request = model.requests[model.requests.length - 1];
    const direct: number[] = [];
    for (let i = 0; i < SAMPLES; i++) {
      const started = performance.now();
      const res = await fetch(`${model.baseUrl}/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(request),
      });
      await res.json();
      direct.push(performance.now() - started);
    }
    return {
      backend,
      verdictsPerSecond: verdicts,
      pendingShare: answered ? pending / answered : 0,
      non2xx: result.non2xx,
      p50: result.latency.p50,
      p99: result.latency.p99,
      e2eP50: quantile(e2e, 0.5),
      e2eP99: quantile(e2e, 0.99),
      modelP50: quantile(direct, 0.5),
      modelP99: quantile(direct, 0.99),
    };
  } finally {
    await server.stop();
    await Promise.all([idp.close(), model.close()]);
    await drop();
  }
}

async function main() {
  const load1 = loadavg()[0]!;
  const rows: Row[] = [];
  for (const backend of BACKENDS) {
    console.log(`embed bench: ${backend}…`);
    rows.push(await measure(backend));
  }
  const ms = (n: number) => n.toFixed(1);
  const table = [
    `| backend | verdicts / s (instant model, ${CONNECTIONS} connections) | answered pending | non-2xx | judge p50 / p99 at load | end to end p50 / p99 (model ${MODEL_DELAY} ms) | model alone p50 / p99 | **added by the judge p50 / p99** |`,
    '|---|---:|---:|---:|---:|---:|---:|---:|',
    ...rows.map(
      (r) =>
        `| ${r.backend} | ${r.verdictsPerSecond.toFixed(1)} | ${(r.pendingShare * 100).toFixed(1)} % | ${r.non2xx} | ${ms(r.p50)} / ${ms(r.p99)} ms | ${ms(r.e2eP50)} / ${ms(r.e2eP99)} ms | ${ms(r.modelP50)} / ${ms(r.modelP99)} ms | **${ms(r.e2eP50 - r.modelP50)} / ${ms(r.e2eP99 - r.modelP99)} ms** |`,
    ),
  ].join('\n');
  console.log(table);
  const when = new Date().toISOString().slice(0, 16);
  const section = `<!-- embed:start -->\nLast run: ${when}Z, ${cpus().length} cores shared by server, database, model and load generator; 1-minute load average before the run: ${load1.toFixed(2)} (a shared machine: figures are noisy). ${DURATION} s of load, ${WORKERS} grading workers, ${SAMPLES} timed submissions, session-token authentication, a ${Buffer.byteLength(DESIGN_NOTE)}-byte document and a 3-criterion rubric; the per-learner rate and the tenant's model budget checked on every submission and call (not reached).\n\n${table}\n<!-- embed:end -->`;
  const readmePath = new URL('./README.md', import.meta.url);
  const readme = readFileSync(readmePath, 'utf8');
  if (readme.includes('<!-- embed:start -->')) {
    writeFileSync(readmePath, readme.replace(/<!-- embed:start -->[\s\S]*<!-- embed:end -->/, section));
  } else {
    console.log('bench/README.md has no embed section markers; not written');
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
