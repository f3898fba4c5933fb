/**
 * Authoring-surface benchmark (issue #5), on PostgreSQL and on embedded PGlite, in one run.
 *
 *   npm run bench:authoring
 *   BENCH_BACKENDS=postgres BENCH_CALLS=500 npm run bench:authoring
 *
 * For each backend: a fresh database (PostgreSQL: a new database on BENCH_PG, default
 * postgres://postgres@127.0.0.1:5432; PGlite: a temporary data folder, as `npm start` uses),
 * the real app listening on loopback, an author signed in through /auth/v1, and the MCP SDK's
 * client over Streamable HTTP — in this one process, so client time counts in every figure.
 * Measured, sequentially (one call at a time):
 *
 * 1. `import_program` of The Odin Project full-stack path (34 units, 151 lessons, 146 activities,
 *    666 rubric criteria; ../shared/data/odin) — BENCH_IMPORTS runs, each a new program;
 * 2. `create_activity` — BENCH_CALLS calls appending to one lesson of that program;
 * 3. `get_program` of the full-stack tree (its default outline, issue #16) — BENCH_READS calls;
 * 4. the same insert and the same tree read as SQL in an `asUser` transaction, without HTTP and
 *    MCP (the floor the tools stand on).
 *
 * Figures: milliseconds (p50 / p99 of per-call latency; median and min of the imports). Targets
 * (issue #5): bulk import ≤ 1 s on PostgreSQL; create_activity p50 ≤ 5 ms. Prints a table and
 * rewrites the "authoring" section of bench/README.md.
 */
import { asUser } from '../src/db/index.ts';
import { eachBackend, lastRun, markdownTable, one, startBenchApp, stats, timed, writeReadmeSection } from './common.ts';
import { loadOdin, odinImportArgs } from '../test/helpers/odin.ts';

const CALLS = Number(process.env.BENCH_CALLS ?? 300);
const READS = Number(process.env.BENCH_READS ?? 40);
const IMPORTS = Number(process.env.BENCH_IMPORTS ?? 5);
const PASSWORD = 'bench password 0123456789';

async function benchBackend(backend: 'postgres' | 'pglite') {
  const bench = await startBenchApp('authoring', backend, { email: 'author@bench.test', password: PASSWORD });
  const { db } = bench;
  try {
    const client = await bench.connect('bench-authoring');
    /** A tool's structured answer, of the shape the caller names (`T`; records have an `id`). */
    const call = async <T = { id: string }>(name: string, args: Record<string, unknown>): Promise<T> => {
      const result = await client.callTool({ name, arguments: args });
      if (result.isError) throw new Error(`${name}: ${JSON.stringify(result.content)}`);
      return result.structuredContent as T;
    };

    // 1. bulk import
    const source = loadOdin('odin-full-stack-javascript.json');
    const imports: number[] = [];
    let programId = '';
    for (let i = 0; i < IMPORTS; i++) {
      const args = { ...odinImportArgs('bench', source), external_id: `${source.id}#${i}` };
      const [ms, imported] = await timed(() => call('import_program', args));
      imports.push(ms);
      programId = imported.id;
    }

    // 2. create_activity, appending to one lesson of the imported program
    const tree = await call<{ units: { lessons: { id: string }[] }[] }>('get_program', { id: programId });
    const lessonId = tree.units[0].lessons[0].id;
    const activity = (i: number) => ({
      lesson_id: lessonId,
      title: `Bench activity ${i}`,
      kind: 'document',
      spec: 'Write one paragraph about what you learned.',
      rubric: [
        { criterion: 'Names one concept', weight: 1 },
        { criterion: 'Gives an example', weight: 2 },
      ],
    });
    for (let i = 0; i < 20; i++) await call('create_activity', activity(-i)); // warm-up
    const creates: number[] = [];
    const cpuBefore = process.cpuUsage();
    for (let i = 0; i < CALLS; i++) creates.push((await timed(() => call('create_activity', activity(i))))[0]);
    const cpu = process.cpuUsage(cpuBefore);
    const createCpu = (cpu.user + cpu.system) / 1000 / CALLS;

    // 3. get_program of the full-stack tree (another imported copy: without the extra activities)
    const fullStack = (await call<{ programs: { id: string }[] }>('list_programs', { tenant: 'bench', limit: 1 })).programs[0].id;
    const reads: number[] = [];
    // (get_program answers an outline by default since issue #16; the whole tree exceeds one answer)
    for (let i = 0; i < READS; i++) reads.push((await timed(() => call('get_program', { id: fullStack })))[0]);

    // 4. the floor: the same SQL in an asUser transaction, no HTTP, no MCP
    const [claims] = await db.query<{ sub: string }>(`select id as sub from auth.users where email = 'author@bench.test'`);
    const asAuthor = { sub: claims!.sub, role: 'authenticated', aud: 'authenticated' };
    const rawInserts: number[] = [];
    for (let i = 0; i < CALLS; i++) {
      rawInserts.push(
        (
          await timed(() =>
            asUser(db, asAuthor, (tx) =>
              tx.query(
                `insert into activities (lesson_id, title, kind, spec, rubric) values ($1, $2, 'document', 's', $3::text::jsonb) returning to_jsonb(activities)`,
                [lessonId, `raw ${i}`, JSON.stringify(activity(i).rubric)],
              ),
            ),
          )
        )[0],
      );
    }
    const { readTree } = await import('../src/authoring/tree.ts');
    const rawReads: number[] = [];
    for (let i = 0; i < READS; i++) rawReads.push((await timed(() => asUser(db, asAuthor, (tx) => readTree(tx, 'program', fullStack, 'outline'))))[0]);

    // per-record import of the same program, for scale (332 calls)
    const [perRecordMs] = await timed(async () => {
      const p = await call('create_program', { tenant: 'bench', title: source.title });
      for (const unit of source.units) {
        const u = await call('create_unit', { program_id: p.id, title: unit.title, description: unit.description });
        for (const lesson of unit.lessons) {
          const l = await call('create_lesson', { unit_id: u.id, title: lesson.title, body: lesson.body });
          for (const a of lesson.activities) {
            await call('create_activity', {
              lesson_id: l.id,
              title: a.title,
              kind: a.kind,
              spec: a.spec,
              rubric: a.rubric.map((c) => ({ criterion: c.criterion, weight: c.weight })),
            });
          }
        }
      }
    });

    const sortedImports = [...imports].sort((a, b) => a - b);
    return {
      backend,
      importMedian: sortedImports[Math.floor(sortedImports.length / 2)]!,
      importMin: sortedImports[0]!,
      create: stats(creates),
      createCpu,
      read: stats(reads),
      rawInsert: stats(rawInserts),
      rawRead: stats(rawReads),
      perRecordMs,
    };
  } finally {
    await bench.close();
  }
}

async function main() {
  const results = await eachBackend(benchBackend);
  const f = one;
  const pair = (s: { p50: number; p99: number }) => `${f(s.p50)} / ${f(s.p99)}`;
  const table = markdownTable(
    [
      'backend',
      `import_program, full stack (median / min of ${IMPORTS})`,
      'create_activity p50 / p99',
      'its CPU in this process',
      'same insert as SQL p50 / p99',
      'get_program (full stack) p50 / p99',
      'same tree read as SQL p50 / p99',
      'per-record import, 332 calls',
    ],
    results.map((r) => [
      r.backend,
      `${f(r.importMedian)} / ${f(r.importMin)}`,
      pair(r.create),
      f(r.createCpu),
      pair(r.rawInsert),
      pair(r.read),
      pair(r.rawRead),
      `${(r.perRecordMs / 1000).toFixed(2)} s`,
    ]),
  );
  const pg = results.find((r) => r.backend === 'postgres');
  const targets = pg
    ? `Targets on PostgreSQL: bulk import ≤ 1000 ms → **${f(pg.importMedian)} ms**; create_activity p50 ≤ 5 ms → **${f(pg.create.p50)} ms**.`
    : '';
  const body = [lastRun(`${CALLS} create calls, ${READS} reads, client and server in one process. Milliseconds unless marked.`), '', table, '', targets].join(
    '\n',
  );
  console.log(`\n${table}\n\n${targets}`);
  writeReadmeSection('authoring', '## Authoring — `npm run bench:authoring`', body);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
