/**
 * `svc doctor` (issue #25): checks the configuration and every dependency the service is set up
 * to use, one small check per file, and returns each finding as ok / warning / error with the fix:
 *
 *   config.ts    the environment (and --env <file>) parsed by the server's rules
 *   secrets.ts   the JWT secret and keys: length, entropy, example values, development secrets
 *   outbound.ts  SVC_FETCH_ALLOW_PRIVATE with NODE_ENV=production
 *   database.ts  reachable, migrated, roles (an embedded folder held by a server: through its /readyz)
 *   replica.ts   DATABASE_READ_URL: a standby, and its replay lag
 *   redis.ts     REDIS_URL answers PING
 *   judge.ts     the model endpoint knows SVC_JUDGE_MODEL (GET /models/<model>)
 *   idp.ts       each tenant's identity provider: discovery and JWKS, through the outbound guard
 *
 * Read-only: nothing is migrated, created or changed. A check that throws becomes an error
 * finding with its message (never a stack trace). Network checks are capped by `timeoutMs`.
 */
import { checkConfig, environment } from './config.ts';
import { checkDatabase, type DatabaseCheck } from './database.ts';
import { checkIdps } from './idp.ts';
import { checkJudge } from './judge.ts';
import { checkOutbound } from './outbound.ts';
import { checkRedis } from './redis.ts';
import { checkReplica } from './replica.ts';
import { checkSecrets } from './secrets.ts';
import { error, ok, warning, type DoctorContext, type Finding } from './types.ts';

export type { Finding, Status } from './types.ts';

/** A check that failed in an unforeseen way, as an error finding. */
const crashed =
  (check: string) =>
  (err: unknown): Finding[] => [
    error(
      check,
      `the check failed: ${err instanceof Error ? err.message : String(err)}`,
      'run `svc doctor` again; if it persists, report it with this message',
    ),
  ];

/** Every finding for the environment `base` (with `envFile`'s variables on top), in a fixed order. */
export async function runDoctor(base: NodeJS.ProcessEnv, options: { envFile?: string; timeoutMs?: number } = {}): Promise<Finding[]> {
  const read = environment(base, options.envFile);
  if ('finding' in read) return [read.finding];
  const parsed = checkConfig(read.source);
  if (!('config' in parsed)) return [parsed.finding];
  const ctx: DoctorContext = { source: read.source, env: parsed.env, config: parsed.config, timeoutMs: options.timeoutMs ?? 5000 };
  const findings: Finding[] = [parsed.finding, ...checkSecrets(ctx), checkOutbound(ctx)];

  const database: DatabaseCheck = await checkDatabase(ctx).catch((err) => ({
    findings: crashed('database')(err),
    skipped: 'the database check failed',
    close: async () => {},
  }));
  try {
    findings.push(...database.findings);
    const network = await Promise.all([
      checkReplica(ctx).then((f) => (f ? [f] : []), crashed('replica')),
      checkRedis(ctx).then((f) => (f ? [f] : []), crashed('redis')),
      checkJudge(ctx).then((f) => [f], crashed('judge')),
      database.db
        ? checkIdps(database.db, { ...ctx, db: database.db }).catch(crashed('idp'))
        : Promise.resolve([
            database.skipped === 'no database yet'
              ? ok('idp', 'no tenants yet')
              : warning(
                  'idp',
                  `tenants' identity providers not checked: ${database.skipped}`,
                  database.skipped?.includes('held') ? 'stop the server, or run `svc doctor` with DATABASE_URL, to check them too' : 'fix the database first',
                ),
          ]),
    ]);
    findings.push(...network.flat());
  } finally {
    await database.close().catch(() => {});
  }
  return findings;
}

/** The findings as text: one line each (status, check, message), the fix indented below. */
export function formatFindings(findings: Finding[]): string {
  const width = Math.max(...findings.map((f) => f.check.length));
  const lines = findings.flatMap((f) => [
    `${f.status.padEnd(7)}  ${f.check.padEnd(width)}  ${f.message}`,
    ...(f.fix ? [`${' '.repeat(9 + width + 2)}fix: ${f.fix}`] : []),
  ]);
  const errors = findings.filter((f) => f.status === 'error').length;
  const warnings = findings.filter((f) => f.status === 'warning').length;
  return `${lines.join('\n')}\n\n${errors} error(s), ${warnings} warning(s)`;
}
