/**
 * The configuration: the environment (and, with `svc doctor --env`, a file of KEY=value lines
 * in Node's `.env` syntax) parsed by the server's own rules (src/config/parse.ts, sections.ts).
 * A file that cannot be read, a variable out of bounds, a URL that is not a URL: one error naming
 * it. Unlike `loadConfig`, nothing is created (the embedded secrets file is the secrets check's).
 */
import { readFileSync } from 'node:fs';
import { parseEnv as parseDotenv } from 'node:util';
import { ConfigError, parseEnv, type Env } from '../../config/parse.ts';
import { configSections } from '../../config/sections.ts';
import type { Config } from '../../config.ts';
import { error, ok, type Finding } from './types.ts';

/** The environment to check: `base` with the variables of `envFile` on top; or the error finding when the file cannot be read. */
export function environment(base: NodeJS.ProcessEnv, envFile?: string): { source: NodeJS.ProcessEnv } | { finding: Finding } {
  if (envFile === undefined) return { source: base };
  let text: string;
  try {
    text = readFileSync(envFile, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'unreadable';
    return {
      finding: error(
        'config',
        `cannot read ${envFile} (${code})`,
        code === 'ENOENT' ? 'check the path given to --env' : `make ${envFile} a readable file (e.g. chmod 600, owned by the service's user)`,
      ),
    };
  }
  return { source: { ...base, ...parseDotenv(text) } };
}

/** Parse `source`: the parsed variables and the config (secrets left empty), or the error finding naming the variable. */
export function checkConfig(source: NodeJS.ProcessEnv): { env: Env; config: Config; finding: Finding } | { finding: Finding } {
  try {
    const env = parseEnv(source);
    const config: Config = { jwtSecret: '', anonKey: '', serviceRoleKey: '', ...configSections(env) };
    return { env, config, finding: ok('config', `parsed: ${env.DATABASE_URL ? 'PostgreSQL (DATABASE_URL)' : `embedded database in ${env.SVC_DATA_DIR}`}`) };
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return { finding: error('config', err.message, 'correct that variable (docs/operations.md lists every variable and its bounds)') };
  }
}
