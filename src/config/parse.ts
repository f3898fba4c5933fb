/**
 * Configuration, step 1 — pure parsing: the environment's variables, their types, bounds and
 * defaults (one zod schema), the cross-variable rules, and the parsers of the few composite
 * values. No file I/O, no secrets logic (secrets.ts), no shape of the app's config (sections.ts).
 *
 * Throws `ConfigError` with a message naming the variable when a value is invalid.
 */
import { z } from 'zod';
import { DEFAULT_ACQUIRE_TIMEOUT_MS, DEFAULT_STATEMENT_TIMEOUT_MS } from './db-defaults.ts';

/** An invalid configuration; the message names the variable. */
export class ConfigError extends Error {}

/** A number of seconds from `min` to `max`, decimals allowed (`0.5`), nothing else. */
const seconds = (min: number, max: number) =>
  z
    .string()
    .trim()
    .regex(/^\d+(\.\d+)?$/, `must be a number of seconds from ${min} to ${max}`)
    .transform(Number)
    .pipe(z.number().min(min, `must be at least ${min} seconds`).max(max, `must be at most ${max} seconds`));

/** A whole number from `min` to `max` (coerced from the variable's text), `fallback` when unset. */
const int = (min: number, max: number, fallback: number) => z.coerce.number().int().min(min).max(max).default(fallback);

const env = z.object({
  PORT: int(0, 65535, 8787),
  HOST: z.string().min(1).default('127.0.0.1'),
  BASE_URL: z.url().optional(),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL')
    .optional(),
  DATABASE_READ_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL')
    .optional(),
  SVC_DATA_DIR: z.string().min(1).default('.svc-data'),
  SVC_JWT_SECRET: z.string().optional(),
  SVC_ANON_KEY: z.string().optional(),
  SVC_SERVICE_ROLE_KEY: z.string().optional(),
  SVC_ACCESS_TOKEN_TTL: int(30, 86_400 * 7, 3600),
  SVC_REFRESH_REUSE_INTERVAL: int(0, 3600, 10),
  SVC_SESSION_MAX_LIFETIME: int(0, 86_400 * 366, 0),
  SVC_SESSION_INACTIVITY_TIMEOUT: int(0, 86_400 * 366, 0),
  SVC_AUTH_RATE_WINDOW: int(1, 86_400, 300),
  SVC_AUTH_SIGNIN_PER_IP: int(1, 1_000_000, 30),
  SVC_AUTH_SIGNIN_PER_EMAIL: int(1, 1_000_000, 10),
  SVC_AUTH_REFRESH_PER_IP: int(1, 1_000_000, 150),
  SVC_OAUTH_REGISTER_PER_IP: int(1, 1_000_000, 60),
  SVC_OAUTH_AUTHORIZE_PER_IP: int(1, 1_000_000, 60),
  SVC_ARGON2_MEMORY_KIB: int(7168, 1_048_576, 19_456),
  SVC_ARGON2_TIME_COST: int(1, 10, 2),
  SVC_ARGON2_PARALLELISM: int(1, 8, 1),
  SVC_AUTH_CORS_ORIGINS: z.string().min(1).default('*'),
  SVC_JUDGE_BASE_URL: z.url().optional(),
  SVC_JUDGE_API_KEY: z.string().optional(),
  SVC_JUDGE_MODEL: z.string().min(1).optional(),
  SVC_JUDGE_TIMEOUT: int(1, 600, 60),
  SVC_JUDGE_WAIT: z.coerce.number().min(0).max(300).default(20),
  SVC_JUDGE_ATTEMPTS: int(1, 10, 3),
  SVC_JUDGE_RETRY_DELAY: int(1, 86_400, 60),
  SVC_JUDGE_RETRY_MAX_DELAY: int(1, 86_400, 3600),
  SVC_JUDGE_MAX_AGE: int(60, 86_400 * 30, 86_400),
  SVC_JUDGE_LEARNER_RATE: int(1, 100_000, 10),
  SVC_JUDGE_LEARNER_WINDOW: int(1, 86_400, 60),
  SVC_JUDGE_TENANT_CALLS_PER_HOUR: int(1, 1e9, 1000),
  SVC_JUDGE_TENANT_CALLS_PER_DAY: int(1, 1e9, 10_000),
  SVC_JUDGE_TENANT_TOKENS_PER_HOUR: int(1000, 1e12, 5_000_000),
  SVC_JUDGE_TENANT_TOKENS_PER_DAY: int(1000, 1e12, 50_000_000),
  SVC_JUDGE_MAX_TOKENS: int(256, 100_000, 2048),
  SVC_JUDGE_TOKEN_PARAM: z.enum(['max_completion_tokens', 'max_tokens']).default('max_completion_tokens'),
  SVC_JUDGE_TEMPERATURE: z.coerce.number().min(0).max(2).default(0),
  SVC_JUDGE_SEED: int(0, 2 ** 31 - 1, 20_260_423),
  SVC_IDP_JWKS_MAX_AGE: int(10, 3600, 300),
  SVC_JUDGE_CONCURRENCY: int(1, 64, 4),
  SVC_JUDGE_LEASE: int(6, 600, 30),
  SVC_JUDGE_POLL: z.coerce.number().min(0.5).max(600).default(2),
  SVC_JUDGE_VISION: z.enum(['0', '1', 'true', 'false']).default('1'),
  SVC_JUDGE_INPUT_BYTES: int(4096, 4 * 1024 * 1024, 200_000),
  SVC_FETCH_TIMEOUT: z.coerce.number().min(1).max(300).default(15),
  SVC_FETCH_MAX_BYTES: int(65_536, 1024 * 1024 * 1024, 20 * 1024 * 1024),
  SVC_FETCH_ALLOW_PRIVATE: z.enum(['0', '1', 'true', 'false']).optional(),
  SVC_MCP_ALLOWED_ORIGINS: z.string().default(''),
  SVC_MCP_BODY_LIMIT: int(65_536, 256 * 1024 * 1024, 16 * 1024 * 1024),
  REDIS_URL: z.string().optional(),
  SVC_ACCESS_LOG: z.enum(['on', 'off', '1', '0', 'true', 'false']).default('on'),
  SVC_METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  SVC_METRICS_HOST: z.string().min(1).optional(),
  SVC_TRUST_PROXY: z
    .string()
    .regex(/^(true|false|\d{1,2}|[0-9a-fA-F.:/]+(\s*,\s*[0-9a-fA-F.:/]+)*)$/, 'true, false, a number of hops, or comma-separated addresses / CIDR ranges')
    .optional(),
  SVC_DB_POOL_SIZE: z.coerce.number().int().min(2).max(1000).optional(),
  SVC_DB_ACQUIRE_TIMEOUT: seconds(0.1, 60).default(DEFAULT_ACQUIRE_TIMEOUT_MS / 1000),
  SVC_DB_STATEMENT_TIMEOUT: seconds(0, 86_400)
    .refine((v) => v === 0 || v >= 0.1, 'must be 0 (no limit) or at least 0.1 seconds')
    .default(DEFAULT_STATEMENT_TIMEOUT_MS / 1000),
  SVC_RATE_LIMIT: int(1, 1_000_000_000, 600),
  SVC_RATE_LIMIT_WINDOW: int(1, 86_400, 60),
  SVC_API_KEY_CACHE_TTL_MS: int(0, 1000, 1000),
  SVC_API_KEY_USAGE_FLUSH_MS: int(100, 3_600_000, 5000),
  SVC_EXPORTS_MAX: int(1, 1000, 8),
  SVC_EXPORT_IDLE_TIMEOUT: seconds(1, 86_400).default(300),
  SVC_SHUTDOWN_DELAY: z.coerce.number({ error: 'must be a number of seconds' }).min(0, 'must not be negative').max(300).default(5),
  SVC_SHUTDOWN_TIMEOUT: z.coerce.number({ error: 'must be a number of seconds' }).min(1, 'must be at least 1 second').max(600).default(20),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  SVC_LOG_FORMAT: z.enum(['json', 'pretty']).optional(),
});

/** The parsed environment: every variable typed, bounded and defaulted. */
export type Env = z.infer<typeof env>;

/** Parse `source` (an environment) into `Env`; throws `ConfigError` naming the first bad variable or rule. */
export function parseEnv(source: NodeJS.ProcessEnv): Env {
  const parsed = env.safeParse(source);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new ConfigError(`${issue.path.join('.')}: ${issue.message}`);
  }
  const e = parsed.data;
  const judgeParts = [e.SVC_JUDGE_BASE_URL, e.SVC_JUDGE_MODEL];
  if (judgeParts.some(Boolean) && !judgeParts.every(Boolean)) {
    throw new ConfigError('SVC_JUDGE_BASE_URL and SVC_JUDGE_MODEL must be set together');
  }
  if (e.SVC_JUDGE_TENANT_CALLS_PER_HOUR > e.SVC_JUDGE_TENANT_CALLS_PER_DAY) {
    throw new ConfigError('SVC_JUDGE_TENANT_CALLS_PER_HOUR must not exceed SVC_JUDGE_TENANT_CALLS_PER_DAY');
  }
  if (e.SVC_JUDGE_TENANT_TOKENS_PER_HOUR > e.SVC_JUDGE_TENANT_TOKENS_PER_DAY) {
    throw new ConfigError('SVC_JUDGE_TENANT_TOKENS_PER_HOUR must not exceed SVC_JUDGE_TENANT_TOKENS_PER_DAY');
  }
  if (e.SVC_JUDGE_RETRY_MAX_DELAY < e.SVC_JUDGE_RETRY_DELAY) {
    throw new ConfigError('SVC_JUDGE_RETRY_MAX_DELAY must be at least SVC_JUDGE_RETRY_DELAY');
  }
  if (e.DATABASE_READ_URL && !e.DATABASE_URL) {
    throw new ConfigError('DATABASE_READ_URL needs DATABASE_URL: read replicas are for a PostgreSQL server; the embedded database (PGlite) has none');
  }
  if (e.SVC_SHUTDOWN_DELAY >= e.SVC_SHUTDOWN_TIMEOUT) {
    throw new ConfigError('SVC_SHUTDOWN_DELAY must be less than SVC_SHUTDOWN_TIMEOUT (both are seconds from the signal)');
  }
  return e;
}

/** `SVC_TRUST_PROXY` → Fastify's `trustProxy` (see `Config.trustProxy`). */
export function parseTrustProxy(value: string | undefined): boolean | number | string {
  if (value === undefined || value === 'false') return false;
  if (value === 'true') return true;
  if (/^\d+$/.test(value)) return Number(value);
  return value.replace(/\s+/g, '');
}

/** A comma-separated list of origins (`https://app.example.com`) in variable `name`; throws `ConfigError`. */
export function originList(name: string, value: string): string[] {
  const origins = value
    .split(',')
    .map((o) => o.trim())
    .filter(Boolean);
  for (const origin of origins) {
    let url: URL | undefined;
    try {
      url = new URL(origin);
    } catch {
      url = undefined;
    }
    if (!url || !/^https?:$/.test(url.protocol) || url.origin !== origin) {
      throw new ConfigError(`${name}: "${origin}" is not an origin like https://app.example.com`);
    }
  }
  return origins;
}
