/**
 * `npm run demo` — the service's main job, narrated, from a fresh clone with nothing else.
 *
 *   npm run demo                      start the service here (embedded database in a temp folder),
 *                                     run the tour, keep the partner page and the player open until Ctrl-C
 *   npm run demo -- --url <base>      run the tour against a service already running at <base>
 *   npm run demo -- --odin <dir>      import The Odin Project's "Foundations" (<dir>/odin-foundations.json)
 *                                     instead of the sample course
 *
 * The service it starts is the real one (src/serve.ts `startService`) on an embedded PGlite folder
 * in the OS temp folder — started from the migrated dump the tests share (test/helpers/
 * pglite-snapshot.ts; made once, ~10 s, then reused: the tour takes ~13 s on a busy 2-core machine) — with the loopback OpenAI-compatible model (test/helpers/test-model.ts) as
 * its judge so verdicts appear, and the loopback identity provider (test/helpers/test-idp.ts) for
 * learners. The tour uses the real clients: the `svc` CLI's own code path (src/cli/target.ts: the
 * command goes to the running server that holds the data folder, as `npx svc` does),
 * @supabase/supabase-js, the MCP SDK client and plain HTTP. The course is the sample in
 * scripts/demo/course/course.json (written for this project: three units, every activity kind,
 * weighted rubrics). Each step says what a real deployment does instead.
 *
 * At the end a partner's page on another origin embeds the player (`SvcEmbed.mount`,
 * docs/embed.md) with the loopback IdP: open it in a browser to work on an activity as a learner.
 * Everything stays up until Ctrl-C (SIGINT) or SIGTERM, which closes the servers, frees the ports
 * and removes the temp folder. `--url` pointing at nothing: one line on stderr, exit status 1.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createClient } from '@supabase/supabase-js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { loadConfig } from '../src/config.ts';
import type { OpName } from '../src/admin/ops.ts';
import { resolveTarget } from '../src/cli/target.ts';
import { openPglite } from '../src/db/pglite.ts';
import { startService, type StartedService } from '../src/serve.ts';
import { migratedSnapshot } from '../test/helpers/pglite-snapshot.ts';
import { callTool, importOdin, loadOdin, type OdinProgram } from '../test/helpers/odin.ts';
import { startTestIdp } from '../test/helpers/test-idp.ts';
import { startTestModel, type TestModel } from '../test/helpers/test-model.ts';
import { startPartner } from '../test/player/fixtures.ts';

const SAMPLE_COURSE = new URL('./demo/course/', import.meta.url).pathname;
const say = (text: string) => console.log(`\n▸ ${text}`);
const show = (text: string) => console.log(`  ${text}`);
/** What a real deployment does instead of this step. */
const real = (text: string) => console.log(`  ↳ in a real deployment: ${text}`);

/** A one-line failure the demo reports without a stack (exit 1). */
class DemoError extends Error {}

/** The command line: `--url <base>`, `--odin <dir>`, `--port <n>` (the service's port; default 8787, a free one when busy). */
function options() {
  try {
    const { values } = parseArgs({
      options: { url: { type: 'string' }, odin: { type: 'string' }, port: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
      strict: true,
    });
    return values;
  } catch (err) {
    throw new DemoError(`npm run demo: ${(err as Error).message} (usage: npm run demo [-- --url <base>] [--odin <dir>] [--port <n>])`);
  }
}

/** The service the tour runs against: started here, or the one at `--url`. */
interface Service {
  url: string;
  /** The environment the `svc` commands read (the data folder or DATABASE_URL). */
  env: NodeJS.ProcessEnv;
  model?: TestModel;
  close(): Promise<void>;
}

/** Start the real service in this process on an embedded folder in the OS temp folder, with the loopback model as its judge. */
async function startOwnService(port: number): Promise<Service> {
  const model = await startTestModel();
  const dataDir = mkdtempSync(join(tmpdir(), 'svc-demo-'));
  const env = {
    SVC_DATA_DIR: dataDir,
    HOST: '127.0.0.1',
    SVC_JUDGE_BASE_URL: model.baseUrl,
    SVC_JUDGE_MODEL: 'demo',
    SVC_JUDGE_API_KEY: 'demo',
    SVC_SHUTDOWN_DELAY: '0',
    LOG_LEVEL: 'warn',
  };
  // PGlite's initdb and the migrations cost seconds on a fresh folder: start it from the migrated
  // dump the tests share (made once in the OS temp folder, test/helpers/pglite-snapshot.ts).
  const snapshot = await migratedSnapshot();
  const start = async (p: number) => startService(loadConfig({ ...env, PORT: String(p) }), await openPglite(join(dataDir, 'pgdata'), snapshot));
  // The usual port when it is free, otherwise any free one (on a fresh folder: the failed start closed its database).
  const service: StartedService = await start(port).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'EADDRINUSE') {
      rmSync(join(dataDir, 'pgdata'), { recursive: true, force: true });
      return start(0);
    }
    throw err;
  });
  return {
    url: service.url,
    env,
    model,
    async close() {
      await service.app.close();
      await service.release();
      await model.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** The service at `base`, or a DemoError when nothing answers there. */
async function existingService(base: string): Promise<Service> {
  let url: URL;
  try {
    url = new URL(base);
  } catch {
    throw new DemoError(`npm run demo: --url ${base} is not a URL (e.g. http://127.0.0.1:8787)`);
  }
  const root = url.href.replace(/\/$/, '');
  const health = await fetch(`${root}/v1/health`, { signal: AbortSignal.timeout(5000) }).catch((err: Error) => err);
  if (health instanceof Error || !health.ok) {
    const why = health instanceof Error ? ((health.cause as { code?: string })?.code ?? health.message) : `HTTP ${health.status}`;
    throw new DemoError(`npm run demo: no service answers at ${root} (${why}); start one with \`npm start\`, or leave out --url and the demo starts its own`);
  }
  return { url: root, env: process.env, close: async () => {} };
}

/** Run one admin operation the way `npx svc` does with this environment, printing its command line. */
async function svc<T = Record<string, unknown>>(env: NodeJS.ProcessEnv, line: string, op: OpName, args: Record<string, unknown>): Promise<T> {
  show(`$ npx svc ${line}`);
  const target = await resolveTarget(loadConfig(env, { requireSecrets: false }));
  return (await target.run(op, args)) as T;
}

/** An MCP client signed in with `accessToken`. */
async function mcpClient(base: string, accessToken: string): Promise<Client> {
  const client = new Client({ name: 'svc-demo', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { requestInit: { headers: { Authorization: `Bearer ${accessToken}` } } }));
  return client;
}

async function main() {
  // Ctrl-C reaches every process of the terminal's group (npm and this one), some twice: the first
  // SIGINT or SIGTERM stops the demo, at any step; the repeats are ignored. (`npm run demo` runs
  // `node --import tsx`, not the tsx command: under load, tsx's relay SIGKILLs a child that does not
  // acknowledge a signal within 30 ms, and the ports and temp folder would be left to the OS.)
  const signalled = new Promise<NodeJS.Signals>((resolve) => {
    for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => resolve(signal));
  });
  const opts = options();
  if (opts.help) {
    console.log('usage: npm run demo [-- --url <base>] [--odin <dir>] [--port <n>]');
    return;
  }
  const begun = Date.now();
  const course: OdinProgram = opts.odin ? loadOdinFrom(opts.odin) : loadOdin('course.json', SAMPLE_COURSE);

  // 1. The service.
  let service: Service;
  if (opts.url) {
    service = await existingService(opts.url);
    say(`The service at ${service.url} (--url)`);
  } else {
    say('Starting the service here: embedded PostgreSQL (PGlite) in a temp folder, a loopback model as the judge');
    service = await startOwnService(opts.port ? Number(opts.port) : 8787);
    show(`service on ${service.url} in ${((Date.now() - begun) / 1000).toFixed(1)} s, judge: the loopback model at ${service.model!.baseUrl}`);
    real(
      '`npm start` with DATABASE_URL (PostgreSQL), the three secrets in the environment, SVC_JUDGE_BASE_URL/SVC_JUDGE_MODEL naming an OpenAI-compatible model, behind TLS (docs/operations.md)',
    );
  }
  const base = service.url;
  const idp = await startTestIdp();
  const stamp = Date.now().toString(36);
  const tenant = `demo-${stamp}`;
  const rivalTenant = `rival-${stamp}`;
  const email = `instructor@${tenant}.test`;
  const password = 'demo password 1';
  let partner: Awaited<ReturnType<typeof startPartner>> | undefined;
  const clients: Client[] = [];
  const stop = async () => {
    await Promise.all(clients.map((c) => c.close().catch(() => {})));
    await Promise.all([partner?.close(), idp.close()]);
    await service.close();
  };

  const tour = async () => {
    // 2. Admin.
    say(`Admin (svc): tenant "${tenant}", an instructor who authors it, an API key for a dashboard`);
    await svc(service.env, `tenant create ${tenant} --name "Demo school"`, 'tenant.create', { slug: tenant, name: 'Demo school' });
    await svc(service.env, `user create --email ${email} --password '…'`, 'user.create', { email, password });
    await svc(service.env, `author grant ${tenant} ${email}`, 'author.grant', { tenant, email });
    const { key } = await svc<{ key: string }>(service.env, `key create ${tenant} --name dashboard`, 'key.create', { tenant, name: 'dashboard' });
    show(`API key ${String(key).slice(0, 17)}… (shown once)`);
    real('an operator runs these once per school; with PostgreSQL `svc` talks to the database directly');
    const { anonKey } = loadConfig(service.env, { requireSecrets: false });

    // 3. Sign-in.
    say('The instructor signs in with @supabase/supabase-js (signInWithPassword)');
    const supabase = createClient(base, anonKey, { auth: { persistSession: false, autoRefreshToken: false } });
    const signIn = await supabase.auth.signInWithPassword({ email, password });
    if (signIn.error) throw new DemoError(`sign-in failed: ${signIn.error.message}`);
    show(`signed in as ${signIn.data.user!.email}; access token expires in ${signIn.data.session!.expires_in} s`);
    real("the instructor's own app signs in the same way, or an AI assistant connects to /mcp by URL over OAuth (docs/connect-mcp.md)");

    // 4. Authoring over MCP.
    say(`The instructor writes "${course.title}" over MCP, one tool call per record`);
    const mcp = await mcpClient(base, signIn.data.session!.access_token);
    clients.push(mcp);
    const started = Date.now();
    const imported = await importOdin(mcp, tenant, course, (done, total) => {
      if (done % 20 === 0 || done === total) process.stdout.write(`\r  ${done}/${total} records`);
    });
    console.log();
    show(
      `${imported.units} units, ${imported.lessons} lessons, ${imported.activities} activities (${[...new Set(course.units.flatMap((u) => u.lessons.flatMap((l) => l.activities.map((a) => a.kind))))].join(', ')}) in ${((Date.now() - started) / 1000).toFixed(1)} s`,
    );
    const tree = await callTool(mcp, 'get_program', { id: imported.programId });
    show(`get_program: "${tree.title}" — first unit "${tree.units[0].title}"`);
    real('an author drafts with an AI assistant (the draft_unit prompt) or imports a whole program in one import_program call');

    // 5. Tenant isolation.
    say(`An author of another tenant ("${rivalTenant}") tries to add a unit to this program`);
    await svc(service.env, `tenant create ${rivalTenant}`, 'tenant.create', { slug: rivalTenant });
    await svc(service.env, `user create --email instructor@${rivalTenant}.test --password '…'`, 'user.create', {
      email: `instructor@${rivalTenant}.test`,
      password,
    });
    await svc(service.env, `author grant ${rivalTenant} instructor@${rivalTenant}.test`, 'author.grant', {
      tenant: rivalTenant,
      email: `instructor@${rivalTenant}.test`,
    });
    const rivalSignIn = await createClient(base, anonKey, { auth: { persistSession: false } }).auth.signInWithPassword({
      email: `instructor@${rivalTenant}.test`,
      password,
    });
    const rival = await mcpClient(base, rivalSignIn.data.session!.access_token);
    clients.push(rival);
    const refused = await rival.callTool({ name: 'create_unit', arguments: { program_id: imported.programId, title: 'Injected' } });
    show(`refused: ${(refused.content as { text: string }[])[0]!.text}`);
    real('the same: row-level security in PostgreSQL decides, whatever the client sends');

    // 6. A learner from the partner's identity provider.
    say("A learner arrives from the partner's identity provider and exchanges its token for a session");
    await svc(service.env, `idp set ${tenant} --issuer ${idp.issuer} --jwks-url ${idp.jwksUrl}`, 'idp.set', {
      tenant,
      issuer: idp.issuer,
      jwks_url: idp.jwksUrl,
    });
    const sub = `learner-${stamp}`;
    const sessionRes = await fetch(`${base}/v1/embed/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ idp_token: await idp.sign({ sub }), tenant }),
    });
    const session = (await sessionRes.json()) as { svc_user_id: string; access_token: string };
    show(`svc_user_id ${session.svc_user_id}`);
    real("the partner's own provider (Auth0, Keycloak, Entra ID…): `svc idp set <tenant> --issuer <url> --discovery --audience <client id>`");

    // 7. Submissions and verdicts.
    const documents = course.units.flatMap((u) => u.lessons.flatMap((l) => l.activities)).filter((a) => a.kind === 'document');
    const answers = [
      'My page is for neighbours looking for the bakery: opening hours, the address and what is baked today. The one action: call to order a cake. I leave out the history of the shop on purpose.',
      'TODO: I will write this after I test the page with a reader.',
    ];
    say(`The learner submits ${answers.length} documents to /v1/embed/judge; the model grades them against the weighted rubric`);
    let pending = false;
    for (const [i, answer] of answers.entries()) {
      const activity = documents[i % documents.length]!;
      const verdict = (await (
        await fetch(`${base}/v1/embed/judge`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${session.access_token}` },
          body: JSON.stringify({ tenant, activity_id: imported.activityIds.get(activity.id), artifact: { kind: 'document', content: answer } }),
        })
      ).json()) as { status: string; score?: number; feedback?: string };
      if (verdict.status === 'pending') pending = true;
      show(
        `verdict on "${activity.title}": ${verdict.status}${verdict.score === undefined ? '' : ` (score ${verdict.score})`}${verdict.feedback ? ` — ${verdict.feedback}` : ''}`,
      );
    }
    if (pending) {
      show('(verdicts appear only if that service has a judge: SVC_JUDGE_BASE_URL and SVC_JUDGE_MODEL; without one they stay pending)');
    }
    real('a real model (OpenAI, Azure, a local vLLM…) and a calibrated rubric: examples per activity and the gate (docs/judge.md)');

    // 8. The results API.
    say("The partner's dashboard pulls results with the API key, one row per page (limit=1)");
    for (const path of ['/v1/activity-results', '/v1/progress']) {
      let cursor: string | null = null;
      let pages = 0;
      do {
        const page: { data: Record<string, unknown>[]; next_cursor: string | null } = await (
          await fetch(`${base}${path}?limit=1${cursor ? `&cursor=${cursor}` : ''}`, { headers: { authorization: `Bearer ${key}` } })
        ).json();
        pages++;
        for (const row of page.data) {
          if (path === '/v1/activity-results') show(`results page ${pages} (GET ${path}): ${row.status}${row.score === null ? '' : `, score ${row.score}`}`);
          else show(`progress page ${pages} (GET ${path}): ${row.completed_count}/${row.total_count} activities passed (${row.percent} %)`);
        }
        cursor = page.next_cursor;
      } while (cursor);
    }
    show(`the Results API reference: ${base}/docs`);
    real('the partner syncs with the typed client (clients/js: `sync()` with checkpoints and tombstones) or `svc-results export … --format csv`');

    // 9. The player on a partner's page.
    say("A partner's page on another origin embeds the player for the learner (two lines: docs/embed.md)");
    partner = await startPartner(base, idp, 8790).catch(() => startPartner(base, idp)); // 8790, or a free port when it is busy
    await svc(service.env, `embed origins add ${tenant} ${partner.origin}`, 'embed.origins.add', { tenant, origin: partner.origin });
    const partnerUrl = partner.url({ activity: imported.activityIds.get(documents[0]!.id)!, tenant, sub });
    real("the partner's own site, allowed with `svc embed origins add`; its own sign-in hands the player the learner's token");

    console.log(`\nThe tour took ${((Date.now() - begun) / 1000).toFixed(1)} s. Open in a browser:`);
    show(`partner page (the player, as learner ${sub}): ${partnerUrl}`);
    show(`results API reference:                     ${base}/docs`);
    show(`service (readiness):                       ${base}/readyz`);
    console.log('\nServing until Ctrl-C.');
  };

  // 10. Serve until Ctrl-C (or SIGTERM), then free the ports and the temp folder.
  const ended = await Promise.race([tour().then(() => signalled), signalled]).catch(async (err) => {
    await stop();
    throw err;
  });
  await stop();
  console.log(`\n${ended}: stopped; ports freed.`);
}

/** The Odin Project's "Foundations" from `dir`, or a DemoError naming the missing file. */
function loadOdinFrom(dir: string): OdinProgram {
  try {
    return loadOdin('odin-foundations.json', dir);
  } catch (err) {
    throw new DemoError(
      `npm run demo: --odin ${dir}: cannot read odin-foundations.json there (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
    );
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err instanceof DemoError ? err.message : `npm run demo: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  },
);
