/**
 * OAuth for MCP hosts (issue #12): does a token from the OAuth flow cost a `/mcp` call anything
 * more than a password-grant token? And how long does connecting take?
 *
 *   npm run bench:oauth
 *   BENCH_BACKENDS=postgres BENCH_CALLS=500 npm run bench:oauth
 *
 * For each backend (a fresh database, the real app on loopback, default argon2id cost): one author;
 * a password-grant token; an OAuth token from the whole flow done over HTTP as a host and a
 * browser would (register → authorize → sign-in → Allow → code → token; BENCH_FLOWS times, the
 * median is "connect"); then `create_activity` through two MCP SDK clients, one per token,
 * alternating call by call (so load drifts hit both alike), BENCH_CALLS each after a warm-up.
 * Both tokens are checked the same way (`verifySession`: signature, then one query), so the
 * expected difference is zero within noise. Rewrites the "oauth" section of bench/README.md.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { TestApp } from '../test/helpers/harness.ts';
import { rawFlow } from '../test/identity/oauth/helpers.ts';
import { eachBackend, lastRun, markdownTable, one, startBenchApp, stats, timed, writeReadmeSection } from './common.ts';

const CALLS = Number(process.env.BENCH_CALLS ?? 300);
const FLOWS = Number(process.env.BENCH_FLOWS ?? 10);
const EMAIL = 'author@oauth-bench.test';
const PASSWORD = 'bench password 0123456789';

async function benchBackend(backend: 'postgres' | 'pglite') {
  const bench = await startBenchApp(
    'oauth',
    backend,
    { email: EMAIL, password: PASSWORD },
    {
      SVC_AUTH_SIGNIN_PER_EMAIL: '100000',
      SVC_AUTH_SIGNIN_PER_IP: '100000',
      SVC_OAUTH_REGISTER_PER_IP: '100000',
    },
  );
  try {
    const target = { url: bench.url } as TestApp;
    const flows: number[] = [];
    let oauthToken = '';
    for (let i = 0; i < FLOWS; i++) {
      const [ms, flow] = await timed(() => rawFlow(target, EMAIL, PASSWORD));
      if (flow.status !== 200) throw new Error(`OAuth flow: ${flow.status} ${JSON.stringify(flow.body)}`);
      flows.push(ms);
      oauthToken = String(flow.body.access_token);
    }

    const byPassword = await bench.connect('bench-oauth');
    const byOAuth = await bench.connect('bench-oauth', oauthToken);
    const program = (await byPassword.callTool({ name: 'create_program', arguments: { tenant: 'bench', title: 'Bench program' } })).structuredContent as {
      id: string;
    };
    const unit = (await byPassword.callTool({ name: 'create_unit', arguments: { program_id: program.id, title: 'Unit' } })).structuredContent as { id: string };
    const lesson = (await byPassword.callTool({ name: 'create_lesson', arguments: { unit_id: unit.id, title: 'Lesson' } })).structuredContent as { id: string };
    const create = async (client: Client, i: number) => {
      const result = await client.callTool({
        name: 'create_activity',
        arguments: {
          lesson_id: lesson.id,
          title: `Activity ${i}`,
          kind: 'document',
          spec: 'One paragraph.',
          rubric: [{ criterion: 'Names one concept', weight: 1 }],
        },
      });
      if (result.isError) throw new Error(JSON.stringify(result.content));
    };
    for (let i = 0; i < 20; i++) await create(i % 2 ? byOAuth : byPassword, -i);
    const password: number[] = [];
    const oauth: number[] = [];
    for (let i = 0; i < CALLS; i++) {
      password.push((await timed(() => create(byPassword, 2 * i)))[0]);
      oauth.push((await timed(() => create(byOAuth, 2 * i + 1)))[0]);
    }
    const median = stats(flows).p50;
    return { backend, password: stats(password), oauth: stats(oauth), connect: median };
  } finally {
    await bench.close();
  }
}

async function main() {
  const results = await eachBackend(benchBackend);
  const table = markdownTable(
    [
      'backend',
      'create_activity p50 / p99, password-grant token',
      'same, OAuth token',
      'OAuth ÷ password (p50)',
      `connecting: register → authorize → sign-in → Allow → token (median of ${FLOWS})`,
    ],
    results.map((r) => [
      r.backend,
      `${one(r.password.p50)} / ${one(r.password.p99)}`,
      `${one(r.oauth.p50)} / ${one(r.oauth.p99)}`,
      (r.oauth.p50 / r.password.p50).toFixed(2),
      one(r.connect),
    ]),
  );
  const body = [
    lastRun(
      `${CALLS} calls per token, alternating; client and server in one process; milliseconds. Connecting includes one argon2id password check at the default cost.`,
    ),
    '',
    table,
  ].join('\n');
  console.log(`\n${table}`);
  writeReadmeSection(
    'oauth',
    '## OAuth for MCP hosts — `npm run bench:oauth`\n\nDoes a token from the OAuth flow cost a `/mcp` call more than a password-grant token (issue #12)? Same run, same lesson, calls alternating.',
    body,
  );
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
