/**
 * `svc` — the admin command (DESIGN §6). Same configuration as the server (environment:
 * DATABASE_URL or SVC_DATA_DIR). Every command takes `--json` for machine-readable output.
 * Exit codes: 0 done, 1 the operation was refused (not found, already exists, invalid),
 * 2 configuration or connection problem.
 */
import { closeSync, openSync, rmSync, writeSync } from 'node:fs';
import { Command, InvalidArgumentError, Option } from 'commander';
import { ConfigError, loadConfig } from '../config.ts';
import { DbUnavailableError } from '../db/errors.ts';
import { DataDirBusyError } from '../db/data-dir-lock.ts';
import { AdminError, type OpName } from '../admin/ops.ts';
import { formatFindings, runDoctor } from '../admin/doctor/index.ts';
import { unsupportedRuntime } from '../runtime.ts';
import { VERSION } from '../version.ts';
import { CliError, resolveTarget } from './target.ts';
import { print, type Printer } from './output.ts';

const program = new Command('svc')
  .description('Administer the learning-content service: tenants, users, authors, API keys, identity providers.')
  .version(VERSION)
  .addHelpText(
    'after',
    `
Configuration comes from the environment, as for the server:
  DATABASE_URL   PostgreSQL server (unset: the embedded database in SVC_DATA_DIR, default ./.svc-data)
With the embedded database, commands go to the running server (npm start) when there is one.`,
  );

const json = new Option('--json', 'print machine-readable JSON');

/** Declare a subcommand that runs one admin operation and prints its result. */
function opCommand(
  parent: Command,
  spec: string,
  description: string,
  op: OpName,
  toArgs: (positional: string[], options: Record<string, unknown>) => Record<string, unknown>,
  printer: Printer,
) {
  return parent
    .command(spec)
    .description(description)
    .addOption(json)
    .action(async (...params: unknown[]) => {
      const command = params.at(-1) as Command;
      const options = command.opts();
      const positional = command.args;
      const config = loadConfig(process.env, { requireSecrets: false });
      const target = await resolveTarget(config);
      const result = await target.run(op, toArgs(positional, options));
      print(result, { json: Boolean(options.json), printer });
    });
}

program
  .command('migrate')
  .description('apply database migrations (the server also applies them on start)')
  .addOption(json)
  .action(async (options: { json?: boolean }) => {
    const target = await resolveTarget(loadConfig(process.env, { requireSecrets: false }));
    const applied = await target.migrate();
    print(
      { applied, target: target.describe },
      {
        json: Boolean(options.json),
        printer: (r) =>
          r.target.startsWith('running server')
            ? `migrations are applied by the ${r.target}`
            : r.applied.length
              ? `applied migrations ${r.applied.join(', ')} (${r.target})`
              : `database is up to date (${r.target})`,
      },
    );
  });

const tenant = program.command('tenant').description('manage tenants');
opCommand(
  tenant,
  'create <slug>',
  'create a tenant',
  'tenant.create',
  ([slug], o) => ({ slug, name: o.name }),
  (t) => `created tenant ${t.slug} (${t.id})`,
).option('--name <name>', 'display name (default: the slug)');
opCommand(
  tenant,
  'list',
  'list tenants',
  'tenant.list',
  () => ({}),
  (rows) => table(rows, ['slug', 'name', 'id', 'created_at']),
);

const user = program.command('user').description('manage identity-platform users');
opCommand(
  user,
  'create',
  'create a user who signs in with email and password',
  'user.create',
  (_p, o) => ({ email: o.email, password: o.password }),
  (u) => `created user ${u.email} (${u.id})`,
)
  .requiredOption('--email <email>', 'required: email address (trimmed and lower-cased)')
  .requiredOption('--password <password>', 'required: password (at least 8 characters)');
opCommand(
  user,
  'list',
  'list users, newest first',
  'user.list',
  (_p, o) => ({ page: o.page, per_page: o.perPage, filter: o.filter }),
  (r) =>
    `${table(r.users, ['email', 'id', 'created_at', 'last_sign_in_at', 'banned_until'])}\n(page ${r.page} of ${Math.max(1, Math.ceil(r.total / r.per_page))}, ${r.total} users)`,
)
  .option('--page <n>', 'page number, from 1', '1')
  .option('--per-page <n>', 'users per page (at most 1000)', '50')
  .option('--filter <text>', 'only emails containing this text');
opCommand(
  user,
  'get <user>',
  'show a user (by id or email)',
  'user.get',
  ([u]) => ({ user: u }),
  (u) => JSON.stringify(u, null, 2),
);
opCommand(
  user,
  'update <user>',
  'change a user (by id or email); a new password ends all of their sessions',
  'user.update',
  ([u], o) => ({
    user: u,
    email: o.email,
    password: o.password,
    email_confirm: o.confirmEmail,
    user_metadata: o.userMetadata,
    app_metadata: o.appMetadata,
  }),
  (u) => `updated user ${u.email} (${u.id})`,
)
  .option('--email <email>', 'new email address')
  .option('--password <password>', 'new password (at least 8 characters)')
  .option('--confirm-email', 'mark the email address as confirmed')
  .option('--user-metadata <json>', 'JSON object merged into user_metadata (null removes a key)', jsonObject)
  .option('--app-metadata <json>', 'JSON object merged into app_metadata (null removes a key)', jsonObject);
opCommand(
  user,
  'ban <user> <duration>',
  'ban a user for a duration (24h, 90m, 1h30m) or lift the ban with "none"',
  'user.ban',
  ([u, d]) => ({ user: u, duration: d }),
  (u) => (u.banned_until ? `${u.email || u.id} is banned until ${u.banned_until}` : `${u.email || u.id} is not banned`),
);
opCommand(
  user,
  'delete <user>',
  'delete a user (auth id, email or svc_user_id) and everything of theirs in every tenant (learner data erased as by svc learner delete, then the account)',
  'user.delete',
  ([u]) => ({ user: u }),
  (u) => `deleted user ${u.email || u.id} (${u.id})`,
);

const author = program.command('author').description('grant or revoke authoring rights in a tenant');
/** Arguments of `author grant|revoke`: `<tenant-slug> <email>`, or `<tenant-slug> --subject <sub> [--issuer <url>]`. */
const authorArgs = ([t, e]: string[], o: Record<string, unknown>) => ({
  tenant: t,
  ...(e !== undefined && { email: e }),
  ...(o.subject !== undefined && { subject: o.subject }),
  ...(o.issuer !== undefined && { issuer: o.issuer }),
});
const whom = (r: { email?: string; subject?: string; issuer?: string }) => r.email ?? `IdP subject ${r.subject} (${r.issuer})`;
opCommand(
  author,
  'grant <tenant-slug> [email]',
  'make a user an author of a tenant: by email, or an identity-provider user by --subject',
  'author.grant',
  authorArgs,
  (r) => `${whom(r)} is now an author of ${r.tenant}${r.svc_user_id ? '' : " (from their first sign-in through the tenant's identity provider)"}`,
)
  .option('--subject <sub>', "an identity-provider user's subject (the token's sub claim), instead of an email")
  .option('--issuer <url>', "the subject's issuer (default: the tenant's identity provider)");
opCommand(
  author,
  'revoke <tenant-slug> [email]',
  'take authoring rights away (the user stays a learner member)',
  'author.revoke',
  authorArgs,
  (r) => `${whom(r)} is no longer an author of ${r.tenant}`,
)
  .option('--subject <sub>', "an identity-provider user's subject, instead of an email")
  .option('--issuer <url>', "the subject's issuer (default: the tenant's identity provider)");

const key = program.command('key').description('manage results-API keys');
opCommand(
  key,
  'create <tenant-slug>',
  'create a read-only API key (printed once)',
  'key.create',
  ([t], o) => ({
    tenant: t,
    name: o.name,
    ...(o.rateLimit !== undefined && { rate_limit: o.rateLimit }),
  }),
  (k) => `${k.key}\n\nAPI key "${k.name}" for ${k.tenant_id} (prefix ${k.prefix}). Store it now: it is not shown again.`,
)
  .requiredOption('--name <name>', 'required: a name to recognise the key by')
  .option('--rate-limit <n>', 'requests per rate-limit window for this key (default: SVC_RATE_LIMIT)', (v: string) => {
    if (!/^[1-9][0-9]{0,6}$/.test(v) || Number(v) > 1_000_000) throw new InvalidArgumentError('a whole number from 1 to 1000000');
    return Number(v);
  });
opCommand(
  key,
  'list <tenant-slug>',
  "list a tenant's API keys",
  'key.list',
  ([t]) => ({ tenant: t }),
  (rows) => table(rows, ['prefix', 'name', 'created_at', 'last_used_at', 'revoked_at', 'rate_limit']),
);
opCommand(
  key,
  'revoke <key-prefix>',
  'revoke an API key by its prefix',
  'key.revoke',
  ([p]) => ({ prefix: p }),
  (k) => `revoked key ${k.prefix} (${k.name})`,
);

const learner = program.command('learner').description("manage a tenant's learners");
opCommand(
  learner,
  'delete <tenant-slug> <svc-user-id>',
  "erase a learner from a tenant: results, artifacts and their content, the judge's request bodies, appeals, progress, membership, sessions (tombstones in /v1/deletions)",
  'learner.delete',
  ([t, u]) => ({ tenant: t, svc_user_id: u }),
  (r) =>
    `erased learner ${r.svc_user_id} from ${r.tenant}: ${r.deleted.results} result(s), ${r.deleted.progress} progress row(s)` +
    (r.deleted.account ? '; their account is gone too (no other tenant, no password)' : ''),
);
// svc learner export (issue #23): one JSON document, to --out (opened before anything is read) or stdout.
learner
  .command('export <tenant-slug> <svc-user-id>')
  .description('write everything held about a learner in a tenant as one JSON document (identities, results, verdicts, artifacts, appeals)')
  .option('--out <file>', 'write to this file (default: standard output)')
  .addOption(json)
  .action(async (tenantSlug: string, svcUserId: string, options: { out?: string }) => {
    let fd: number | undefined;
    if (options.out !== undefined) {
      try {
        fd = openSync(options.out, 'wx');
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        const why = code === 'EEXIST' ? 'it exists (an existing file is not overwritten)' : code === 'ENOENT' ? 'its folder does not exist' : (code ?? 'error');
        throw new AdminError('invalid', `--out: cannot create ${options.out}: ${why}`);
      }
    }
    try {
      const target = await resolveTarget(loadConfig(process.env, { requireSecrets: false }));
      const doc = JSON.stringify(await target.run('learner.export', { tenant: tenantSlug, svc_user_id: svcUserId }), null, 2);
      if (fd === undefined) console.log(doc);
      else writeSync(fd, `${doc}\n`);
    } catch (err) {
      if (fd !== undefined) rmSync(options.out!, { force: true });
      throw err;
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
    if (options.out !== undefined) console.error(`wrote the export of ${svcUserId} in ${tenantSlug} to ${options.out}`);
  });

const idp = program.command('idp').description("configure a tenant's external identity provider for /v1/embed/session");
opCommand(
  idp,
  'set <tenant-slug>',
  'set the issuer and its keys (JWKS URL or OIDC discovery)',
  'idp.set',
  ([t], o) => ({
    tenant: t,
    issuer: o.issuer,
    jwks_url: o.jwksUrl,
    discovery: o.discovery,
    audience: o.audience,
  }),
  (r) =>
    `identity provider of ${r.tenant}: ${r.issuer} (${r.jwks_url ?? r.discovery_url})` +
    (r.audience
      ? `, audience ${r.audience}`
      : '\nnote: no --audience, so a token this provider issued for any of its applications is accepted; ' +
        "set --audience to the client id your player's tokens are issued for"),
)
  .requiredOption('--issuer <url>', "required: the `iss` of the provider's tokens")
  .option('--jwks-url <url>', "the provider's JWKS URL")
  .option('--discovery', 'read the JWKS URL from <issuer>/.well-known/openid-configuration')
  .option('--audience <aud>', 'the `aud` tokens must carry (recommended: without it any audience is accepted)');
opCommand(
  idp,
  'refresh <tenant-slug>',
  "fetch the provider's keys again now, in every server process (a key removed from its JWKS stops working at once)",
  'idp.refresh',
  ([t]) => ({ tenant: t }),
  (r) => `keys of ${r.tenant}'s identity provider (${r.issuer}) will be fetched again on the next token (version ${r.keys_version})`,
);

const embed = program.command('embed').description("the embeddable player: who may frame a tenant's player");
const origins = embed.command('origins').description('partner origins allowed to embed the player (Content-Security-Policy frame-ancestors)');
/** The allowed origins, or why the player cannot be framed. */
const originList = (r: { tenant: string; origins: string[] }) =>
  r.origins.length
    ? `origins allowed to embed ${r.tenant}'s player:\n${r.origins.map((o) => `  ${o}`).join('\n')}`
    : `no origins: ${r.tenant}'s player cannot be framed by any page (frame-ancestors 'none'); add one with svc embed origins add ${r.tenant} <origin>`;
opCommand(
  origins,
  'add <tenant-slug> <origin>',
  'allow an origin (https://learn.example.com, or https://*.example.com) to embed the player',
  'embed.origins.add',
  ([t, o]) => ({ tenant: t, origin: o }),
  (r) => `${r.added ? 'added' : 'already allowed:'} ${r.origin}\n${originList(r)}`,
);
opCommand(
  origins,
  'remove <tenant-slug> <origin>',
  'stop allowing an origin to embed the player',
  'embed.origins.remove',
  ([t, o]) => ({ tenant: t, origin: o }),
  (r) => `removed ${r.origin}\n${originList(r)}`,
);
opCommand(origins, 'list <tenant-slug>', 'list the origins allowed to embed the player', 'embed.origins.list', ([t]) => ({ tenant: t }), originList);

const review = program.command('review').description("the review queue: passes held as possible prompt injection, and learners' appeals");
opCommand(
  review,
  'list <tenant-slug>',
  'list open reviews, oldest first',
  'review.list',
  ([t]) => ({ tenant: t }),
  (rows) =>
    table(
      rows.map((r: Record<string, unknown>) => ({ ...r, detail: ((r.signals as string[] | undefined) ?? []).join('; ') || (r.message ?? '') })),
      ['kind', 'result_id', 'activity_title', 'svc_user_id', 'score', 'submitted_at', 'detail'],
    ),
);
opCommand(
  review,
  'approve <result-id>',
  'uphold the verdict: a held pass counts, the result completes and progress moves',
  'review.approve',
  ([r]) => ({ result_id: r }),
  (r) => `approved ${r.decided} held submission(s) of result ${r.result_id}: the result is ${r.status}`,
);
opCommand(
  review,
  'reject <result-id>',
  'override the verdict to a fail (audited): the result fails and a pass no longer counts',
  'review.reject',
  ([r]) => ({ result_id: r }),
  (r) => `rejected ${r.decided} held submission(s) of result ${r.result_id}: the result is ${r.status}`,
);

// svc judge …: a tenant's language-model judge (issue #21, docs/judge.md) — the calibration gate's
// thresholds ("The gate") and borderline consistency.
const judge = program.command('judge').description("a tenant's language-model judge: the calibration gate's thresholds, borderline consistency");
const thresholds = judge.command('thresholds').description('the calibration gate: the figures a report must reach before learners are graded live');
const thresholdsText = (r: Record<string, unknown>) =>
  `calibration gate of ${r.tenant}: cohen_kappa >= ${r.min_kappa}, false_pass_rate <= ${r.max_false_pass_rate}, adversarial examples must fail: ${r.require_adversarial_fail}`;
opCommand(
  thresholds,
  'show <tenant-slug>',
  "show a tenant's thresholds (defaults: 0.6, 0.10, true)",
  'judge.thresholds.show',
  ([t]) => ({ tenant: t }),
  thresholdsText,
);
opCommand(
  thresholds,
  'set <tenant-slug>',
  "change a tenant's thresholds (the others keep their value)",
  'judge.thresholds.set',
  ([t], o) => ({
    tenant: t,
    ...(o.minKappa !== undefined && { min_kappa: o.minKappa }),
    ...(o.maxFalsePassRate !== undefined && { max_false_pass_rate: o.maxFalsePassRate }),
    ...(o.adversarialMustFail !== undefined && { require_adversarial_fail: o.adversarialMustFail }),
  }),
  thresholdsText,
)
  .option('--min-kappa <x>', "lowest Cohen's kappa, -1..1")
  .option('--max-false-pass-rate <y>', 'highest false pass rate, 0..1')
  .option('--adversarial-must-fail <bool>', 'every adversarial example must fail: true|false', (v: string) => {
    if (v !== 'true' && v !== 'false') throw new InvalidArgumentError('true or false');
    return v === 'true';
  });

// svc retention set|show|run (issue #23, src/admin/retention.ts; docs/privacy.md "Retention").
const retention = program.command('retention').description('how long a tenant keeps model-ledger bodies, artifact content and tombstones');
const days = (d: number | null) => (d === null ? 'forever' : `${d} days`);
const retentionText = (r: { tenant: string; model_bodies_days: number | null; artifact_content_days: number | null; tombstones_days: number | null }) =>
  `retention of ${r.tenant}: model bodies ${days(r.model_bodies_days)}, artifact content ${days(r.artifact_content_days)}, tombstones ${days(r.tombstones_days)}`;
opCommand(
  retention,
  'show <tenant-slug>',
  "show a tenant's windows (defaults: model bodies 90 days, artifact content forever, tombstones 30 days)",
  'retention.show',
  ([t]) => ({ tenant: t }),
  retentionText,
);
opCommand(
  retention,
  'set <tenant-slug>',
  "change a tenant's windows (the others keep their value): a positive number of days, or forever",
  'retention.set',
  ([t], o) => ({
    tenant: t,
    ...(o.artifactContent !== undefined && { artifact_content: o.artifactContent }),
    ...(o.modelBodies !== undefined && { model_bodies: o.modelBodies }),
    ...(o.tombstones !== undefined && { tombstones: o.tombstones }),
  }),
  retentionText,
)
  .option('--artifact-content <days>', 'keep submitted content this long (the verdict and result stay)')
  .option('--model-bodies <days>', 'keep the exact request bodies sent to the model this long')
  .option('--tombstones <days>', 'keep /v1/deletions tombstones this long (partners syncing less often must do a full pull)');
opCommand(
  retention,
  'run [tenant-slug]',
  'remove now what is past the windows (the server also does it hourly)',
  'retention.run',
  ([t]) => (t === undefined ? {} : { tenant: t }),
  (r) =>
    `retention sweep of ${r.tenant ?? `${r.tenants} tenant(s)`}: ${r.model_bodies} model bod(ies), ${r.artifact_contents} artifact content(s), ${r.tombstones} tombstone(s) removed`,
);

// svc audit list: who did what (issue #23, src/audit; docs/privacy.md).
const auditCmd = program.command('audit').description('the audit log: every privileged act, append-only');
opCommand(
  auditCmd,
  'list [tenant-slug]',
  'list audit events, oldest first (the newest 1000; all tenants when none is named)',
  'audit.list',
  ([t], o) => ({
    ...(t !== undefined && { tenant: t }),
    ...(o.since !== undefined && { since: o.since }),
    ...(o.action !== undefined && { action: o.action }),
  }),
  (rows) =>
    table(
      rows.map((r: { actor: { kind: string; id: string | null }; target: { type: string; id: string } }) => ({
        ...r,
        actor: r.actor.id ? `${r.actor.kind}:${r.actor.id}` : r.actor.kind,
        target: `${r.target.type}:${r.target.id}`,
      })),
      ['at', 'action', 'actor', 'target', 'tenant_id', 'request_id'],
    ),
)
  .option('--since <time>', 'only events at or after this time (RFC 3339, or a date)')
  .option('--action <name>', 'only this action (author.grant, learner.erase, …)');

const verdict = program.command('verdict').description('audit how an artifact was graded');
opCommand(
  verdict,
  'show <artifact-id>',
  'the stored verdict and every model call made for it (request hash, raw answer, tokens, timing)',
  'verdict.show',
  ([a], o) => ({
    artifact_id: a,
    ...(o.withRequest ? { with_request: true } : {}),
  }),
  (r) => JSON.stringify(r, null, 2),
).option('--with-request', 'include the exact request bodies sent to the model (to replay them)');

const consistency = judge.command('consistency').description('grade borderline verdicts again and take the majority (opt-in per tenant)');
/** The setting as one line. */
const consistencyLine = (r: { tenant: string; enabled: boolean; margin: number | null; repeats: number }) =>
  r.enabled
    ? `borderline consistency of ${r.tenant}: on — a score within ${r.margin} points of the pass mark is graded up to ${r.repeats} times in all; the majority decides`
    : `borderline consistency of ${r.tenant}: off — one model call per grading (repeats ${r.repeats} when turned on)`;
opCommand(
  consistency,
  'set <tenant-slug>',
  'turn it on: a score within --margin points of the pass mark is graded up to --repeats times in all',
  'judge.consistency.set',
  ([t], o) => ({
    tenant: t,
    margin: o.margin,
    ...(o.repeats !== undefined && { repeats: o.repeats }),
  }),
  consistencyLine,
)
  .requiredOption('--margin <points>', 'required: points either side of the pass mark, 0–100')
  .option('--repeats <2|3>', 'runs in all, the first included (default 3; with 2 a disagreement fails)');
opCommand(consistency, 'off <tenant-slug>', 'turn it off: one model call per grading', 'judge.consistency.off', ([t]) => ({ tenant: t }), consistencyLine);
opCommand(consistency, 'show <tenant-slug>', "show a tenant's setting", 'judge.consistency.show', ([t]) => ({ tenant: t }), consistencyLine);

// svc lti …: the LTI 1.3 tool (issue #22, docs/lti.md).
const lti = program.command('lti').description("the LTI 1.3 tool: platform (LMS) registrations, the tool's keys, what an LMS administrator types in");
const platforms = lti.command('platforms').description("a tenant's LMS registrations (issuer + client id, one tenant each)");
/** A registration as lines. */
const platformText = (p: Record<string, unknown>) =>
  [
    `${p.tenant}: ${p.issuer} client ${p.client_id}`,
    `  auth ${p.auth_url}`,
    `  token ${p.token_url}${p.token_audience ? ` (audience ${p.token_audience})` : ''}`,
    `  jwks ${p.jwks_url}`,
    `  deployments ${p.any_deployment ? `any (dynamic registration without a deployment id)${(p.deployments as string[]).length ? `; ${(p.deployments as string[]).join(', ')}` : ''}` : (p.deployments as string[]).join(', ') || '(none: launches are refused until one is added)'}`,
    ...((p.frame_origins as string[] | undefined)?.length ? [`  framed from ${(p.frame_origins as string[]).join(' ')}`] : []),
  ].join('\n');
opCommand(
  platforms,
  'add <tenant-slug>',
  'register an LMS for a tenant (again with the same issuer and client id: update its URLs, add deployments)',
  'lti.platforms.add',
  ([t], o) => ({
    tenant: t,
    issuer: o.issuer,
    client_id: o.clientId,
    auth_url: o.authUrl,
    token_url: o.tokenUrl,
    jwks_url: o.jwksUrl,
    deployments: o.deployment,
    frame_origins: o.frameOrigin,
    ...(o.tokenAudience !== undefined && { token_audience: o.tokenAudience }),
  }),
  (p) => `${p.created ? 'registered' : 'updated'} ${platformText(p)}`,
)
  .requiredOption('--issuer <url>', "required: the platform's issuer (the id_token's iss)")
  .requiredOption('--client-id <id>', 'required: the client id the platform gave the tool')
  .requiredOption('--auth-url <url>', "required: the platform's OIDC authorization URL")
  .requiredOption('--token-url <url>', "required: the platform's OAuth 2 token URL")
  .requiredOption('--jwks-url <url>', "required: the platform's public keys (JWK set URL)")
  .option('--deployment <id>', 'a deployment id launches may carry (repeat for several)', (v: string, all: string[]) => [...all, v], [] as string[])
  .option('--token-audience <url>', "the aud of the tool's client assertions, when not the token URL (Brightspace)")
  .option(
    '--frame-origin <origin>',
    "an LMS host whose course pages frame the launches, when it is not the issuer's or auth URL's (a Canvas vanity domain: https://canvas.school.edu; *.instructure.com is known); repeat for several",
    (v: string, all: string[]) => [...all, v],
    [] as string[],
  );
opCommand(
  platforms,
  'list [tenant-slug]',
  'list registrations (of one tenant, or all)',
  'lti.platforms.list',
  ([t]) => (t === undefined ? {} : { tenant: t }),
  (rows) => (rows.length ? rows.map(platformText).join('\n') : '(none)'),
);
opCommand(
  platforms,
  'remove <tenant-slug> <issuer> <client-id>',
  'remove a registration and its deployments: its launches are refused from now on',
  'lti.platforms.remove',
  ([t, i, c]) => ({ tenant: t, issuer: i, client_id: c }),
  (r) => `removed ${r.issuer} client ${r.client_id} from ${r.tenant}`,
);
lti
  .command('config')
  .description("print what an LMS administrator types in to register the tool (from BASE_URL: the running server's when the command goes to it)")
  .addOption(json)
  .action(async (options: { json?: boolean }) => {
    const config = loadConfig(process.env, { requireSecrets: false });
    // No base_url: the process that runs it names its own (withBaseUrl), a running server its BASE_URL.
    const result = await (await resolveTarget(config)).run('lti.config', {});
    print(result, {
      json: Boolean(options.json),
      printer: (c) =>
        [
          `login URL (OIDC login initiation):  ${c.login_url}`,
          `launch URL (redirect URI):          ${c.launch_url}`,
          `public keys (JWK set URL):          ${c.jwks_url}`,
          `deep-linking URL:                   ${c.deep_linking_url}`,
          `domain:                             ${c.domain}`,
          `scopes:                             ${c.scopes.join(' ')}`,
        ].join('\n'),
    });
  });
lti
  .command('registration-url <tenant-slug>')
  .description('mint a single-use LTI Dynamic Registration URL for a tenant (valid 24 h): give it to the LMS ("register a tool by URL")')
  .addOption(json)
  .action(async (tenant: string, options: { json?: boolean }) => {
    const config = loadConfig(process.env, { requireSecrets: false });
    const result = await (await resolveTarget(config)).run('lti.registration_url', { tenant });
    print(result, {
      json: Boolean(options.json),
      printer: (r) => `${r.url}\n(single use, for ${r.tenant}; expires ${r.expires_at})`,
    });
  });
const ltiKeys = lti.command('keys').description("the tool's RS256 signing keys (published at /lti/v1/jwks)");
opCommand(
  ltiKeys,
  'list',
  'list the keys, newest first (the current one has no retired_at)',
  'lti.keys.list',
  () => ({}),
  (rows) => table(rows, ['kid', 'created_at', 'retired_at']),
);
opCommand(
  ltiKeys,
  'rotate',
  'make a new current key; the previous one stays published until tokens signed with it have expired',
  'lti.keys.rotate',
  () => ({}),
  (r) => `new signing key ${r.kid}${r.retired ? `; ${r.retired} stays in /lti/v1/jwks for ${r.retired_published_seconds} s` : ''}`,
);
opCommand(
  lti,
  'scores <tenant-slug>',
  "the tenant's score deliveries to its LMSs, newest first (state, grading progress, score, errors)",
  'lti.scores',
  ([t], o) => ({ tenant: t, failed: Boolean(o.failed) }),
  (rows) =>
    rows.length
      ? table(rows, ['created_at', 'state', 'grading_progress', 'score_given', 'user_id', 'activity_id', 'attempts', 'http_status', 'last_error'])
      : '(none)',
).option('--failed', 'only the deliveries the platform refused');

const oauth = program.command('oauth').description('the OAuth clients (MCP hosts) instructors connected, and their grants');
const oauthClients = oauth.command('clients').description('OAuth clients: registered ones and Client ID Metadata Documents');
opCommand(
  oauthClients,
  'list',
  'list every client, newest first, with its live sessions and grants',
  'oauth.clients.list',
  () => ({}),
  (rows) =>
    table(
      rows.map((r: Record<string, unknown>) => ({ ...r, redirect_uris: (r.redirect_uris as string[]).join(' ') })),
      ['client_id', 'kind', 'client_name', 'created_at', 'revoked_at', 'sessions', 'grants', 'redirect_uris'],
    ),
);
opCommand(
  oauthClients,
  'revoke <client_id>',
  'revoke a client everywhere: its sessions end at once and it can no longer sign anyone in',
  'oauth.clients.revoke',
  ([c]) => ({ client_id: c }),
  (r) => `revoked OAuth client ${r.client_id}: its tokens are refused from now on`,
);
const oauthGrants = oauth.command('grants').description('what a user allowed each client');
opCommand(
  oauthGrants,
  'list <email>',
  "list a user's grants",
  'oauth.grants.list',
  ([e]) => ({ email: e }),
  (rows) =>
    table(
      rows.map((g: { client: { id: string; name: string }; scopes: string[]; granted_at: string }) => ({
        client_id: g.client.id,
        client_name: g.client.name,
        scopes: g.scopes.join(' '),
        granted_at: g.granted_at,
      })),
      ['client_id', 'client_name', 'scopes', 'granted_at'],
    ),
);
opCommand(
  oauthGrants,
  'revoke <email> <client_id>',
  "take a user's grant back: that client's sessions of the user end at once",
  'oauth.grants.revoke',
  ([e, c]) => ({ email: e, client_id: c }),
  (r) => `revoked the grant of ${r.email} to ${r.client_id}: its tokens are refused from now on`,
);

// svc doctor (issue #25, src/admin/doctor/): what is misconfigured, each finding with its fix.
program
  .command('doctor')
  .description(
    'check the configuration and every dependency (database, replica, Redis, judge, identity providers, secrets): ok / warning / error with the fix; exit status 1 on an error',
  )
  .option('--env <file>', 'check the variables of this file (KEY=value lines) on top of the environment')
  .option('--timeout <seconds>', 'time cap of each network check', '5')
  .addOption(json)
  .action(async (options: { env?: string; timeout: string; json?: boolean }) => {
    const timeoutMs = Math.min(Math.max(Number(options.timeout) || 5, 0.1), 60) * 1000;
    const findings = await runDoctor(process.env, { envFile: options.env, timeoutMs });
    const failed = findings.some((f) => f.status === 'error');
    print(options.json ? { ok: !failed, findings } : findings, { json: Boolean(options.json), printer: formatFindings });
    process.exitCode = failed ? 1 : 0;
  });

program
  .command('secrets')
  .description('print the anon and service-role keys (embedded mode: kept in the data folder)')
  .addOption(json)
  .action((options: { json?: boolean }) => {
    const config = loadConfig(process.env, { requireSecrets: false });
    const keys = { anon_key: config.anonKey, service_role_key: config.serviceRoleKey, data_dir: config.dataDir ?? null };
    print(keys, {
      json: Boolean(options.json),
      printer: (k) => `anon key:          ${k.anon_key}\nservice-role key:  ${k.service_role_key}${k.data_dir ? `\n(kept in ${k.data_dir}/secrets.json)` : ''}`,
    });
  });

/** Commander option parser: a JSON object (`--user-metadata '{"name":"Ada"}'`). */
function jsonObject(value: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    throw new InvalidArgumentError('not valid JSON');
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new InvalidArgumentError('must be a JSON object');
  return parsed as Record<string, unknown>;
}

function table(rows: Record<string, unknown>[], columns: string[]): string {
  if (!rows.length) return '(none)';
  const cells = rows.map((r) => columns.map((c) => String(r[c] ?? '-')));
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((row) => row[i]!.length)));
  const line = (values: string[]) =>
    values
      .map((v, i) => v.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [line(columns), ...cells.map(line)].join('\n');
}

const runtime = unsupportedRuntime();
if (runtime) {
  console.error(`svc: ${runtime}`);
  process.exit(2);
}

program.parseAsync(process.argv).catch((err: unknown) => {
  const known =
    err instanceof AdminError || err instanceof CliError || err instanceof ConfigError || err instanceof DataDirBusyError || err instanceof DbUnavailableError;
  if (!known) throw err;
  // An unreachable database: say where and why in one line (the driver's error is the cause), exit 2 (docs/operations.md).
  if (err instanceof DbUnavailableError)
    err.message = `the database is unavailable (${(err.cause as Error | undefined)?.message ?? 'no answer'}); check DATABASE_URL, or run svc doctor`;
  const json = process.argv.includes('--json');
  if (json) console.log(JSON.stringify({ error: { code: err instanceof AdminError ? err.code : 'unavailable', message: err.message } }));
  else console.error(`svc: ${err.message}`);
  process.exit(err instanceof AdminError ? 1 : 2);
});
