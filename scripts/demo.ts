/**
 * `npm run demo` — the service's main job, narrated, against a running service
 * (`npm start`, or BASE_URL=… for another address). Uses the real clients: the `svc` CLI,
 * @supabase/supabase-js, the MCP SDK client and plain HTTP. Brings a loopback identity
 * provider and, on 127.0.0.1:8788, a loopback OpenAI-compatible model; the service grades
 * only if it was started with SVC_JUDGE_BASE_URL=http://127.0.0.1:8788/v1 SVC_JUDGE_MODEL=demo.
 * Each run makes new tenants (demo-<time>), so it can be run again and again.
 *
 * At the end, a partner's page on http://127.0.0.1:8790 (another origin than the service) embeds
 * the player (`SvcEmbed.mount`, docs/embed.md) with the loopback IdP: open it in a browser to work
 * on an activity as a learner. The demo then keeps serving until Ctrl-C (when run in a terminal).
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { createClient } from '@supabase/supabase-js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { callTool, importOdin, loadOdin, ODIN_MISSING, odinAvailable } from '../test/helpers/odin.ts';
import { startTestIdp } from '../test/helpers/test-idp.ts';
import { startTestModel } from '../test/helpers/test-model.ts';
import { startPartner } from '../test/player/fixtures.ts';

const BASE_URL = (process.env.BASE_URL ?? `http://127.0.0.1:${process.env.PORT ?? 8787}`).replace(/\/$/, '');
const MODEL_PORT = 8788;
const PARTNER_PORT = 8790;
const run = promisify(execFile);
const say = (text: string) => console.log(`\n▸ ${text}`);
const show = (text: string) => console.log(`  ${text}`);

async function svc(...args: string[]) {
  const bin = new URL('../bin/svc.js', import.meta.url).pathname;
  try {
    const { stdout } = await run(process.execPath, [bin, ...args, '--json'], { env: process.env });
    return JSON.parse(stdout);
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string };
    throw new Error(`svc ${args.join(' ')} failed: ${e.stderr || e.stdout}`);
  }
}

async function main() {
  const health = await fetch(`${BASE_URL}/v1/health`).catch(() => undefined);
  if (!health?.ok) {
    console.error(`No service answers at ${BASE_URL}. Start it first, in another terminal:\n  npm start`);
    process.exit(2);
  }
  if (!odinAvailable()) {
    console.error(ODIN_MISSING);
    process.exit(2);
  }
  const stamp = Date.now().toString(36);
  const tenant = `demo-${stamp}`;
  const rivalTenant = `rival-${stamp}`;
  const email = `instructor@${tenant}.test`;
  const password = 'demo password 1';

  say(`Admin (svc CLI): tenant "${tenant}", an instructor who authors it, and an API key for a dashboard`);
  await svc('tenant', 'create', tenant, '--name', 'Odin demo school');
  await svc('user', 'create', '--email', email, '--password', password);
  await svc('author', 'grant', tenant, email);
  const { key } = await svc('key', 'create', tenant, '--name', 'dashboard');
  show(`API key ${key.slice(0, 17)}… (shown once)`);
  const { anon_key } = await svc('secrets');

  say('Instructor signs in with @supabase/supabase-js (signInWithPassword)');
  const supabase = createClient(BASE_URL, anon_key, { auth: { persistSession: false, autoRefreshToken: false } });
  const signIn = await supabase.auth.signInWithPassword({ email, password });
  if (signIn.error) throw signIn.error;
  show(`signed in as ${signIn.data.user!.email}; access token expires in ${signIn.data.session!.expires_in} s`);

  say('Instructor imports The Odin Project "Foundations" over MCP, one tool call per record');
  const mcp = new Client({ name: 'svc-demo', version: '1.0.0' });
  await mcp.connect(
    new StreamableHTTPClientTransport(new URL(`${BASE_URL}/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${signIn.data.session!.access_token}` } },
    }),
  );
  const source = loadOdin('odin-foundations.json');
  const started = Date.now();
  const imported = await importOdin(mcp, tenant, source, (done, total) => {
    if (done % 20 === 0 || done === total) process.stdout.write(`\r  ${done}/${total} records`);
  });
  console.log();
  show(`${imported.units} units, ${imported.lessons} lessons, ${imported.activities} activities in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  const tree = await callTool(mcp, 'get_program', { id: imported.programId });
  show(`get_program: "${tree.title}" — first unit "${tree.units[0].title}", first lesson "${tree.units[0].lessons[0].title}"`);

  say(`An author of another tenant ("${rivalTenant}") tries to add a unit to this program`);
  await svc('tenant', 'create', rivalTenant);
  await svc('user', 'create', '--email', `instructor@${rivalTenant}.test`, '--password', password);
  await svc('author', 'grant', rivalTenant, `instructor@${rivalTenant}.test`);
  const rivalSignIn = await createClient(BASE_URL, anon_key, { auth: { persistSession: false } }).auth.signInWithPassword({
    email: `instructor@${rivalTenant}.test`,
    password,
  });
  const rival = new Client({ name: 'svc-demo-rival', version: '1.0.0' });
  await rival.connect(
    new StreamableHTTPClientTransport(new URL(`${BASE_URL}/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${rivalSignIn.data.session!.access_token}` } },
    }),
  );
  const refused = await rival.callTool({ name: 'create_unit', arguments: { program_id: imported.programId, title: 'Injected' } });
  show(`refused: ${(refused.content as { text: string }[])[0]!.text}`);

  say('A learner arrives from the partner\'s identity provider and exchanges its token for a session');
  const idp = await startTestIdp();
  const model = await startTestModel({ port: MODEL_PORT }).catch(() => undefined);
  await svc('idp', 'set', tenant, '--issuer', idp.issuer, '--jwks-url', idp.jwksUrl);
  const idpToken = await idp.sign({ sub: `learner-${stamp}` });
  const session = await (
    await fetch(`${BASE_URL}/v1/embed/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ idp_token: idpToken, tenant }),
    })
  ).json();
  show(`svc_user_id ${session.svc_user_id}`);

  say('The learner submits three documents to /v1/embed/judge');
  const documents = source.units.flatMap((u) => u.lessons.flatMap((l) => l.activities)).filter((a) => a.kind === 'document');
  const answers = [
    'The Odin Project is a free curriculum; follow it in order and ask the community for help.',
    'TODO: I will answer these questions later.',
    'Variables hold values; functions take arguments and return values.',
  ];
  for (const [i, answer] of answers.entries()) {
    const activity = documents[i]!;
    const verdict = await (
      await fetch(`${BASE_URL}/v1/embed/judge`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${session.access_token}` },
        body: JSON.stringify({ tenant, activity_id: imported.activityIds.get(activity.id), artifact: { kind: 'document', content: answer } }),
      })
    ).json();
    show(`"${activity.title}": ${verdict.status}${verdict.score === undefined ? '' : ` (score ${verdict.score})`}`);
  }
  if (!model || model.requests.length === 0) {
    show('(no model graded these: start the service with SVC_JUDGE_BASE_URL=http://127.0.0.1:8788/v1 SVC_JUDGE_MODEL=demo to see verdicts)');
  }

  say('The partner\'s dashboard pulls results with the API key, one row per page (limit=1)');
  for (const path of ['/v1/activity-results', '/v1/artifacts', '/v1/progress']) {
    let cursor: string | null = null;
    let pages = 0;
    const rows: Record<string, unknown>[] = [];
    do {
      const page: { data: Record<string, unknown>[]; next_cursor: string | null } = await (
        await fetch(`${BASE_URL}${path}?limit=1${cursor ? `&cursor=${cursor}` : ''}`, { headers: { authorization: `Bearer ${key}` } })
      ).json();
      rows.push(...page.data);
      cursor = page.next_cursor;
      pages++;
    } while (cursor);
    show(`${path}: ${rows.length} row(s) in ${pages} page(s)`);
    for (const row of rows) {
      if (path === '/v1/activity-results') show(`  ${row.status}${row.score === null ? '' : `, score ${row.score}`}`);
      if (path === '/v1/progress') show(`  ${row.completed_count}/${row.total_count} activities passed (${row.percent} %)`);
    }
  }

  say('A partner\'s page on another origin embeds the player for a learner (two lines: docs/embed.md)');
  const partner = await startPartner(BASE_URL, idp, PARTNER_PORT).catch(() => undefined);
  if (partner) {
    await svc('embed', 'origins', 'add', tenant, partner.origin);
    show(`svc embed origins add ${tenant} ${partner.origin}  (the player's frame-ancestors)`);
    show(`open in a browser: ${partner.url({ activity: imported.activityIds.get(documents[3]!.id)!, tenant, sub: `learner-${stamp}` })}`);
  } else {
    show(`(port ${PARTNER_PORT} is busy: no partner page this time)`);
  }

  await Promise.all([mcp.close(), rival.close()]);
  if (partner && process.stdin.isTTY) {
    console.log('\nThe partner page is served until Ctrl-C.');
    await new Promise((resolve) => process.once('SIGINT', resolve));
  }
  await Promise.all([partner?.close(), idp.close(), model?.close()]);
  console.log('\nDone.');
}

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
