/**
 * Judge calibration benchmark (issue #21):
 *
 *   npm run bench:calibration
 *   BENCH_BACKENDS=postgres BENCH_SAMPLES=200 npm run bench:calibration
 *
 * For each backend (BENCH_BACKENDS, default `postgres,pglite`), the real app in this process
 * (bench/common.ts `startBenchApp`) with the loopback test model as its judge (instant answers,
 * SVC_JUDGE_CONCURRENCY 4, budgets not reached):
 * 1. A calibration run of BENCH_EXAMPLES (default 50) examples, added through MCP: the wall time
 *    of `run_calibration` (enqueue → report) and the model calls of the report's cost.
 * 2. The gate's added latency per submission: BENCH_SAMPLES (default 100) learner submissions per
 *    case, interleaved (off, on, off, on …) so that load drifts hit both alike, to an activity
 *    without examples (gate off: today's path plus one indexed count) and to one with examples and
 *    a passing report (gate on: the gate's statement, the activity's lock, the gate read again).
 *    The figure is the difference of the p50s (target ≤ 1 ms).
 * 3. Prints a table and rewrites the "calibration" section of bench/README.md.
 */
import { runOp } from '../src/admin/ops.ts';
import type { Db } from '../src/db/index.ts';
import { startTestIdp } from '../test/helpers/test-idp.ts';
import { startTestModel } from '../test/helpers/test-model.ts';
import { DESIGN_NOTE, eachBackend, lastRun, markdownTable, one, startBenchApp, stats, timed, writeReadmeSection } from './common.ts';

const EXAMPLES = Number(process.env.BENCH_EXAMPLES ?? 50);
const SAMPLES = Number(process.env.BENCH_SAMPLES ?? 100);

interface Row {
  backend: string;
  runSeconds: number;
  calls: number;
  off: ReturnType<typeof stats>;
  on: ReturnType<typeof stats>;
}

async function activity(db: Db, title: string): Promise<string> {
  const [row] = await db.query<{ id: string }>(
    `with p as (insert into programs (tenant_id, title) select id, $1 from tenants where slug = 'bench' returning id),
          u as (insert into units (program_id, title) select id, 'Unit' from p returning id),
          l as (insert into lessons (unit_id, title) select id, 'Lesson' from u returning id)
     insert into activities (lesson_id, title, kind, spec, rubric, pass_threshold)
     select id, $1, 'document', 'Write a one-page design note.', $2::text::jsonb, 70 from l returning id`,
    [title, JSON.stringify([{ criterion: 'States the problem' }, { criterion: 'Discusses trade-offs', weight: 2 }, { criterion: 'Names the data model' }])],
  );
  return row!.id;
}

async function measure(backend: 'postgres' | 'pglite'): Promise<Row> {
  const [idp, model] = await Promise.all([startTestIdp(), startTestModel()]);
  const app = await startBenchApp(
    'calibration',
    backend,
    { email: 'author@bench.test', password: 'correct horse battery' },
    {
      SVC_JUDGE_BASE_URL: model.baseUrl,
      SVC_JUDGE_MODEL: 'bench-model',
      SVC_JUDGE_CONCURRENCY: '4',
      SVC_JUDGE_POLL: '1',
      SVC_FETCH_ALLOW_PRIVATE: '1',
      SVC_JUDGE_LEARNER_RATE: '100000',
      SVC_JUDGE_TENANT_CALLS_PER_HOUR: '1000000000',
      SVC_JUDGE_TENANT_CALLS_PER_DAY: '1000000000',
      SVC_JUDGE_TENANT_TOKENS_PER_HOUR: '1000000000000',
      SVC_JUDGE_TENANT_TOKENS_PER_DAY: '1000000000000',
    },
  );
  try {
    await runOp(app.db, 'idp.set', { tenant: 'bench', issuer: idp.issuer, jwks_url: idp.jwksUrl });
    const mcp = await app.connect('bench-calibration');
    /** A tool's structured answer, of the shape the caller names (`T`). */
    const call = async <T = unknown>(name: string, args: Record<string, unknown>): Promise<T> => {
      const r = await mcp.callTool({ name, arguments: args });
      if (r.isError) throw new Error(`${name}: ${JSON.stringify(r.content)}`);
      return r.structuredContent as T;
    };

    // 1. A run of EXAMPLES examples (half good, half with TODO: the loopback model fails those).
    const calibrated = await activity(app.db, 'Calibrated');
    for (let i = 0; i < EXAMPLES; i++) {
      const good = i % 2 === 0;
      await call('add_calibration_example', {
        activity_id: calibrated,
        artifact: { kind: 'document', content: `${good ? '' : 'TODO '}${DESIGN_NOTE} #${i}` },
        expected: { passed: good, score: good ? 95 : 10 },
      });
    }
    const [ms, report] = await timed(() =>
      call<{ status: string; gate: { passes: boolean }; cost: { calls: number } }>('run_calibration', { activity_id: calibrated, wait_seconds: 120 }),
    );
    if (report.status !== 'done' || !report.gate.passes) throw new Error(`the run did not pass: ${JSON.stringify(report).slice(0, 300)}`);

    // 2. Submissions to an uncalibrated activity (gate off) and to the calibrated one (gate on), interleaved.
    const plain = await activity(app.db, 'Plain');
    const s = await fetch(`${app.url}/v1/embed/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ tenant: 'bench', idp_token: await idp.sign({ sub: 'bench-learner' }) }),
    });
    const { access_token: token } = (await s.json()) as { access_token: string };
    const submit = async (activityId: string) => {
      const res = await fetch(`${app.url}/v1/embed/judge`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
        body: JSON.stringify({ tenant: 'bench', activity_id: activityId, artifact: { kind: 'document', content: DESIGN_NOTE } }),
      });
      const body = (await res.json()) as { status: string };
      if (body.status !== 'passed') throw new Error(`a timed submission answered ${JSON.stringify(body)}`);
    };
    for (let i = 0; i < 10; i++) await Promise.all([submit(plain), submit(calibrated)]); // warm-up
    const off: number[] = [];
    const on: number[] = [];
    for (let i = 0; i < SAMPLES; i++) {
      off.push((await timed(() => submit(plain)))[0]);
      on.push((await timed(() => submit(calibrated)))[0]);
    }
    return { backend, runSeconds: ms / 1000, calls: report.cost.calls, off: stats(off), on: stats(on) };
  } finally {
    await app.close();
    await Promise.all([idp.close(), model.close()]);
  }
}

async function main() {
  const rows = await eachBackend(measure);
  const table = markdownTable(
    ['backend', `run of ${EXAMPLES} examples (wall)`, 'model calls', 'submission p50 / p99, gate off', 'gate on (passing report)', '**added by the gate p50**'],
    rows.map((r) => [
      r.backend,
      `${r.runSeconds.toFixed(2)} s`,
      String(r.calls),
      `${one(r.off.p50)} / ${one(r.off.p99)} ms`,
      `${one(r.on.p50)} / ${one(r.on.p99)} ms`,
      `**${(r.on.p50 - r.off.p50).toFixed(2)} ms**`,
    ]),
  );
  console.log(table);
  writeReadmeSection(
    'calibration',
    '## Judge calibration — `npm run bench:calibration`',
    `${lastRun(`the app in the benchmark's process, the loopback model answering at once, 4 grading workers; ${SAMPLES} timed submissions per case, interleaved, each a ${Buffer.byteLength(DESIGN_NOTE)}-byte document graded against a 3-criterion rubric.`)}\n\n${table}`,
  );
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
