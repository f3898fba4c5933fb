/**
 * `svc` — the admin command (DESIGN §6). Same configuration as the server (environment:
 * DATABASE_URL or SVC_DATA_DIR). Every command takes `--json` for machine-readable output.
 * Exit codes: 0 done, 1 the operation was refused (not found, already exists, invalid),
 * 2 configuration or connection problem.
 */
import { Command, Option } from 'commander';
import { ConfigError, loadConfig } from '../config.ts';
import { DataDirBusyError } from '../db/data-dir-lock.ts';
import { AdminError, type OpName } from '../admin/ops.ts';
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
    print({ applied, target: target.describe }, {
      json: Boolean(options.json),
      printer: (r) =>
        r.target.startsWith('running server')
          ? `migrations are applied by the ${r.target}`
          : r.applied.length
            ? `applied migrations ${r.applied.join(', ')} (${r.target})`
            : `database is up to date (${r.target})`,
    });
  });

const tenant = program.command('tenant').description('manage tenants');
opCommand(tenant, 'create <slug>', 'create a tenant', 'tenant.create', ([slug], o) => ({ slug, name: o.name }), (t) => `created tenant ${t.slug} (${t.id})`)
  .option('--name <name>', 'display name (default: the slug)');
opCommand(tenant, 'list', 'list tenants', 'tenant.list', () => ({}), (rows) => table(rows, ['slug', 'name', 'id', 'created_at']));

const user = program.command('user').description('manage identity-platform users');
opCommand(user, 'create', 'create a user who signs in with email and password', 'user.create', (_p, o) => ({ email: o.email, password: o.password }), (u) => `created user ${u.email} (${u.id})`)
  .requiredOption('--email <email>', 'email address (trimmed and lower-cased)')
  .requiredOption('--password <password>', 'password (at least 6 characters)');

const author = program.command('author').description('grant or revoke authoring rights in a tenant');
opCommand(author, 'grant <tenant-slug> <email>', 'make a user an author of a tenant', 'author.grant', ([t, e]) => ({ tenant: t, email: e }), (r) => `${r.email} is now an author of ${r.tenant}`);
opCommand(author, 'revoke <tenant-slug> <email>', 'take authoring rights away (the user stays a learner member)', 'author.revoke', ([t, e]) => ({ tenant: t, email: e }), (r) => `${r.email} is no longer an author of ${r.tenant}`);

const key = program.command('key').description('manage results-API keys');
opCommand(key, 'create <tenant-slug>', 'create a read-only API key (printed once)', 'key.create', ([t], o) => ({ tenant: t, name: o.name }), (k) =>
  `${k.key}\n\nAPI key "${k.name}" for ${k.tenant_id} (prefix ${k.prefix}). Store it now: it is not shown again.`,
).requiredOption('--name <name>', 'a name to recognise the key by');
opCommand(key, 'list <tenant-slug>', 'list a tenant\'s API keys', 'key.list', ([t]) => ({ tenant: t }), (rows) =>
  table(rows, ['prefix', 'name', 'created_at', 'last_used_at', 'revoked_at']),
);
opCommand(key, 'revoke <key-prefix>', 'revoke an API key by its prefix', 'key.revoke', ([p]) => ({ prefix: p }), (k) => `revoked key ${k.prefix} (${k.name})`);

const idp = program.command('idp').description('configure a tenant\'s external identity provider for /v1/embed/session');
opCommand(idp, 'set <tenant-slug>', 'set the issuer and its keys (JWKS URL or OIDC discovery)', 'idp.set', ([t], o) => ({
  tenant: t,
  issuer: o.issuer,
  jwks_url: o.jwksUrl,
  discovery: o.discovery,
  audience: o.audience,
}), (r) => `identity provider of ${r.tenant}: ${r.issuer} (${r.jwks_url ?? r.discovery_url})`)
  .requiredOption('--issuer <url>', 'the `iss` of the provider\'s tokens')
  .option('--jwks-url <url>', 'the provider\'s JWKS URL')
  .option('--discovery', 'read the JWKS URL from <issuer>/.well-known/openid-configuration')
  .option('--audience <aud>', 'the `aud` tokens must carry');

program
  .command('secrets')
  .description('print the anon and service-role keys (embedded mode: kept in the data folder)')
  .addOption(json)
  .action((options: { json?: boolean }) => {
    const config = loadConfig(process.env, { requireSecrets: false });
    const keys = { anon_key: config.anonKey, service_role_key: config.serviceRoleKey, data_dir: config.dataDir ?? null };
    print(keys, {
      json: Boolean(options.json),
      printer: (k) => `anon key:          ${k.anon_key}\nservice-role key:  ${k.service_role_key}` + (k.data_dir ? `\n(kept in ${k.data_dir}/secrets.json)` : ''),
    });
  });

function table(rows: Record<string, unknown>[], columns: string[]): string {
  if (!rows.length) return '(none)';
  const cells = rows.map((r) => columns.map((c) => String(r[c] ?? '-')));
  const widths = columns.map((c, i) => Math.max(c.length, ...cells.map((row) => row[i]!.length)));
  const line = (values: string[]) => values.map((v, i) => v.padEnd(widths[i]!)).join('  ').trimEnd();
  return [line(columns), ...cells.map(line)].join('\n');
}

program.parseAsync(process.argv).catch((err: unknown) => {
  const known = err instanceof AdminError || err instanceof CliError || err instanceof ConfigError || err instanceof DataDirBusyError;
  if (!known) throw err;
  const json = process.argv.includes('--json');
  if (json) console.log(JSON.stringify({ error: { code: err instanceof AdminError ? err.code : 'unavailable', message: err.message } }));
  else console.error(`svc: ${err.message}`);
  process.exit(err instanceof AdminError ? 1 : 2);
});
