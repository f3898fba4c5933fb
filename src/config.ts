/**
 * Configuration: environment → typed, validated config, in one place (DESIGN §6), in three steps
 * with one job each:
 *
 *  1. config/parse.ts — pure parsing: every variable's type, bounds and default; the rules
 *     between variables;
 *  2. config/secrets.ts — the JWT secret and the two keys: from the environment (server mode) or
 *     `<data dir>/secrets.json` (embedded mode, created on first start), and their checks;
 *  3. config/sections.ts — the app's config, one section per surface (identity, embed and its
 *     judge, results, shutdown) and the process's own settings.
 *
 * This module is the entry point: `loadConfig` and the config's types.
 * Throws `ConfigError` with a message naming the variable when a value is invalid.
 */
import { parseEnv } from './config/parse.ts';
import { resolveSecrets } from './config/secrets.ts';
import { configSections, type Config } from './config/sections.ts';

export { ConfigError } from './config/parse.ts';
export { loadOrCreateEmbeddedSecrets, type Secrets } from './config/secrets.ts';
export type { Config, EmbedConfig, IdentityConfig, JudgeConfig, ModelBudget, ResultsConfig, ShutdownConfig } from './config/sections.ts';

/**
 * Build the config from an environment (default `process.env`).
 * Embedded secrets are read from / written to the data folder. With `requireSecrets: false`
 * (the CLI talking to PostgreSQL directly, which mints no tokens) missing server-mode secrets
 * are left empty instead of refused.
 */
export function loadConfig(source: NodeJS.ProcessEnv = process.env, options: { requireSecrets?: boolean } = {}): Config {
  const e = parseEnv(source);
  const sections = configSections(e);
  return { ...resolveSecrets(e, sections.dataDir, options.requireSecrets ?? true), ...sections };
}
