/**
 * Configuration: environment → typed, validated config, in one place (DESIGN §6).
 *
 * Embedded mode (no DATABASE_URL): data lives in `SVC_DATA_DIR` (default `./.svc-data`); on
 * first start a random JWT secret and anon / service-role keys are generated and kept in
 * `<data dir>/secrets.json` (mode 0600); any of the three set in the environment wins.
 * Server mode (DATABASE_URL set) requires the three secrets in the environment. Either way
 * empty, short, low-entropy, well-known (Supabase's demo values, any JWT) or equal secrets
 * are refused: an anon key equal to the service-role key would open the admin endpoints.
 *
 * Throws `ConfigError` with a message naming the variable when a value is invalid.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { DEFAULT_ACQUIRE_TIMEOUT_MS, DEFAULT_POOL_SIZE, DEFAULT_STATEMENT_TIMEOUT_MS } from './db/postgres.ts';

export class ConfigError extends Error {}

export interface Secrets {
  jwtSecret: string;
  anonKey: string;
  serviceRoleKey: string;
}

export interface JudgeConfig {
  baseUrl: string;
  apiKey: string;
  model: string;
  /** Per-call timeout of the model in milliseconds. */
  timeoutMs: number;
  /** Most tokens the model may answer with, per call. */
  maxTokens: number;
  /** The request field that carries `maxTokens`: `max_completion_tokens` (OpenAI today) or `max_tokens` (older servers). */
  tokenParam: 'max_completion_tokens' | 'max_tokens';
  /** Sampling temperature sent on every call (0: as deterministic as the model allows). */
  temperature: number;
  /** `seed` sent on every call (reproducible sampling where the model supports it). */
  seed: number;
}

/** A per-tenant model budget: calls and tokens per UTC hour and per UTC day (src/embed/budget.ts). */
export interface ModelBudget {
  callsPerHour: number;
  callsPerDay: number;
  tokensPerHour: number;
  tokensPerDay: number;
}

/** Identity-platform settings (`/auth/v1`); see src/identity/README.md. */
export interface IdentityConfig {
  /** Seconds a session may live from sign-in (GoTrue `SESSIONS_TIMEBOX`); 0 = no limit. */
  sessionMaxLifetime: number;
  /** Seconds without a refresh after which a session cannot be refreshed; 0 = no limit. */
  sessionInactivityTimeout: number;
  /** Sign-in / refresh rate limits, counted per fixed window of `windowSeconds`. */
  rateLimit: {
    windowSeconds: number;
    signInPerIp: number;
    signInPerEmail: number;
    refreshPerIp: number;
    /** OAuth dynamic client registrations (POST /oauth/clients/register) per IP and window. */
    registerPerIp: number;
  };
  /** argon2id cost of new password hashes (OWASP: 19,456 KiB, t = 2, p = 1). */
  argon2: { memoryKib: number; timeCost: number; parallelism: number };
  /** Origins allowed by CORS on /auth/v1: `*` or a list. */
  corsOrigins: '*' | string[];
}

/**
 * Embed judge settings (`/v1/embed/judge`, src/embed/README.md): how long a request waits for
 * its verdict, the grading queue, and the caps on what is read from a learner's URLs.
 */
export interface EmbedConfig {
  /** Milliseconds a judge request waits for its verdict before answering `pending`. */
  judgeWaitMs: number;
  /** Model calls per grading run: 1 + bounded retries on timeouts, 5xx, 429 and malformed output. */
  judgeAttempts: number;
  /**
   * Seconds before a grading run that failed for the model's sake (timeout, connection, 5xx, 429)
   * runs again; doubled after each such run, with jitter, up to `judgeRetryMaxDelaySeconds`.
   */
  judgeRetryDelaySeconds: number;
  /** Longest wait between two grading runs, in seconds. */
  judgeRetryMaxDelaySeconds: number;
  /** Seconds after submission when a submission the model never answered becomes `failed` (`model_unavailable`). */
  judgeMaxAgeSeconds: number;
  /** Submissions per learner and tenant per `learnerWindowSeconds` (429 `rate_limited` beyond). */
  learnerRate: number;
  learnerWindowSeconds: number;
  /** Model calls and tokens each tenant may spend; beyond them submissions wait for the next window. */
  tenantBudget: ModelBudget;
  /** Seconds an IdP key set is trusted before it is fetched again (a removed key stops working within this). */
  jwksMaxAgeSeconds: number;
  /**
   * Seconds of a grading job's lease: renewed every third of it while its run is alive, so the
   * job of a process that died runs again about this long after (plus pg-boss's maintenance).
   */
  judgeLeaseSeconds: number;
  /** Gradings in parallel in this process. */
  judgeConcurrency: number;
  /** Seconds between looks at the queue when idle (other processes' submissions, retries, backlog). */
  judgePollSeconds: number;
  /** Send images (diagrams) to the model as data URLs; off → image artifacts get a `failed` verdict saying why. */
  judgeVision: boolean;
  /** Milliseconds for reading one artifact's URLs (page, document, image, repository), all hops included. */
  fetchTimeoutMs: number;
  /** Largest download per URL in bytes (page, PDF, image, repository pack). */
  fetchMaxBytes: number;
  /** Largest artifact text shown to the model, in bytes (repository files, page text, documents). */
  judgeInputBytes: number;
}

/** Results API (`/v1` data routes): rate limit and API-key cache. */
export interface ResultsConfig {
  /**
   * Rate limit counted per API key: `max` requests per `windowMs` milliseconds (a key's own
   * `rate_limit` replaces `max`). Shared by all processes through Redis when `REDIS_URL` is set.
   */
  rateLimit: { max: number; windowMs: number };
  /** Milliseconds a checked API key is trusted from memory; revocation notices drop it sooner. */
  keyCacheTtlMs: number;
  /** Milliseconds between writes of the keys' `last_used_at` (one batched UPDATE, not one per request). */
  keyUsageFlushMs: number;
}

/**
 * Shutdown on SIGTERM / SIGINT (src/http/shutdown.ts), both counted from the signal: readiness
 * fails at once; new connections are refused after `delayMs` (a load balancer sees /readyz fail
 * first); requests still running at `timeoutMs` are cut.
 */
export interface ShutdownConfig {
  delayMs: number;
  timeoutMs: number;
}

export interface Config extends Secrets {
  port: number;
  host: string;
  baseUrl: string;
  /** PostgreSQL server URL; undefined → embedded PGlite in `dataDir`. */
  databaseUrl?: string;
  /**
   * A streaming read replica of `databaseUrl` (`DATABASE_READ_URL`, PostgreSQL only): the results
   * API and the learner reads run there (src/db/replica.ts, docs/scaling.md). Undefined → the primary.
   */
  databaseReadUrl?: string;
  /** PGlite data folder; undefined with no databaseUrl → in memory (tests only). */
  dataDir?: string;
  /**
   * Connections of the PostgreSQL pool (`SVC_DB_POOL_SIZE`; default twice the CPU cores, at
   * least 4 — the PostgreSQL wiki's rule of thumb). More backends than cores only time-slice
   * against each other and the server: measured in bench/README.md (results API p99).
   */
  dbPoolSize: number;
  /**
   * Milliseconds a request waits for a PostgreSQL connection before it is answered 503
   * (`SVC_DB_ACQUIRE_TIMEOUT`, seconds, default 5): the bound of an outage (issue #11).
   */
  dbAcquireTimeoutMs: number;
  /** Milliseconds one statement may run, 0 = no limit (`SVC_DB_STATEMENT_TIMEOUT`, seconds, default 30). */
  dbStatementTimeoutMs: number;
  /** Access-token lifetime in seconds. */
  accessTokenTtl: number;
  /** Seconds a spent refresh token may be replayed (concurrent tabs) before it revokes the session. */
  refreshReuseInterval: number;
  /** Language model for /v1/embed/judge; null → submissions stay `pending`. */
  judge: JudgeConfig | null;
  /** Allow outbound fetches to private / loopback addresses (tests only). */
  fetchAllowPrivate: boolean;
  /**
   * Extra CA certificates (PEM) outbound https fetches trust besides the system's (tests only: a
   * loopback https server with a self-signed certificate). Operators use NODE_EXTRA_CA_CERTS.
   */
  fetchCa?: string;
  embed: EmbedConfig;
  redisUrl?: string;
  /**
   * Which proxies' `X-Forwarded-For` to believe for the client address (Fastify's `trustProxy`,
   * from `SVC_TRUST_PROXY`): false (default: the TCP peer is the client), true (any), a number of
   * hops, or a comma-separated list of addresses and CIDR ranges. Per-IP rate limits key on it.
   */
  trustProxy: boolean | number | string;
  logLevel: string;
  /** One `info` line per request (method, route template, status, duration, request id); `SVC_ACCESS_LOG=off` stops it. */
  accessLog: boolean;
  /** Prometheus text at `/metrics` on this port (`SVC_METRICS_PORT`; unset: no metrics listener), on `metricsHost`. */
  metrics?: { port: number; host: string };
  /** Largest accepted request body in bytes. */
  bodyLimit: number;
  /** Largest accepted body of `POST /mcp` in bytes (import_program carries whole programs); default 16 MiB. */
  mcpBodyLimit?: number;
  /**
   * Origins besides the base URL's own that browsers may call `/mcp` from (DNS-rebinding
   * protection, `SVC_MCP_ALLOWED_ORIGINS`); default none.
   */
  mcpAllowedOrigins?: string[];
  identity: IdentityConfig;
  results: ResultsConfig;
  shutdown: ShutdownConfig;
}

/** Known or placeholder secrets that must never run a production service. */
const KNOWN_SECRETS = new Set([
  'super-secret-jwt-token-with-at-least-32-characters-long',
  'your-super-secret-jwt-token-with-at-least-32-characters-long',
  'changeme',
  'secret',
]);

/** A number of seconds from `min` to `max`, decimals allowed (`0.5`), nothing else. */
const seconds = (min: number, max: number) =>
  z
    .string()
    .trim()
    .regex(/^\d+(\.\d+)?$/, `must be a number of seconds from ${min} to ${max}`)
    .transform(Number)
    .pipe(z.number().min(min, `must be at least ${min} seconds`).max(max, `must be at most ${max} seconds`));

const env = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(8787),
  HOST: z.string().min(1).default('127.0.0.1'),
  BASE_URL: z.url().optional(),
  DATABASE_URL: z.string().regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL').optional(),
  DATABASE_READ_URL: z.string().regex(/^postgres(ql)?:\/\//, 'must be a postgres:// URL').optional(),
  SVC_DATA_DIR: z.string().min(1).default('.svc-data'),
  SVC_JWT_SECRET: z.string().optional(),
  SVC_ANON_KEY: z.string().optional(),
  SVC_SERVICE_ROLE_KEY: z.string().optional(),
  SVC_ACCESS_TOKEN_TTL: z.coerce.number().int().min(30).max(86_400 * 7).default(3600),
  SVC_REFRESH_REUSE_INTERVAL: z.coerce.number().int().min(0).max(3600).default(10),
  SVC_SESSION_MAX_LIFETIME: z.coerce.number().int().min(0).max(86_400 * 366).default(0),
  SVC_SESSION_INACTIVITY_TIMEOUT: z.coerce.number().int().min(0).max(86_400 * 366).default(0),
  SVC_AUTH_RATE_WINDOW: z.coerce.number().int().min(1).max(86_400).default(300),
  SVC_AUTH_SIGNIN_PER_IP: z.coerce.number().int().min(1).max(1_000_000).default(30),
  SVC_AUTH_SIGNIN_PER_EMAIL: z.coerce.number().int().min(1).max(1_000_000).default(10),
  SVC_AUTH_REFRESH_PER_IP: z.coerce.number().int().min(1).max(1_000_000).default(150),
  SVC_OAUTH_REGISTER_PER_IP: z.coerce.number().int().min(1).max(1_000_000).default(20),
  SVC_ARGON2_MEMORY_KIB: z.coerce.number().int().min(7168).max(1_048_576).default(19_456),
  SVC_ARGON2_TIME_COST: z.coerce.number().int().min(1).max(10).default(2),
  SVC_ARGON2_PARALLELISM: z.coerce.number().int().min(1).max(8).default(1),
  SVC_AUTH_CORS_ORIGINS: z.string().min(1).default('*'),
  SVC_JUDGE_BASE_URL: z.url().optional(),
  SVC_JUDGE_API_KEY: z.string().optional(),
  SVC_JUDGE_MODEL: z.string().min(1).optional(),
  SVC_JUDGE_TIMEOUT: z.coerce.number().int().min(1).max(600).default(60),
  SVC_JUDGE_WAIT: z.coerce.number().min(0).max(300).default(20),
  SVC_JUDGE_ATTEMPTS: z.coerce.number().int().min(1).max(10).default(3),
  SVC_JUDGE_RETRY_DELAY: z.coerce.number().int().min(1).max(86_400).default(60),
  SVC_JUDGE_RETRY_MAX_DELAY: z.coerce.number().int().min(1).max(86_400).default(3600),
  SVC_JUDGE_MAX_AGE: z.coerce.number().int().min(60).max(86_400 * 30).default(86_400),
  SVC_JUDGE_LEARNER_RATE: z.coerce.number().int().min(1).max(100_000).default(10),
  SVC_JUDGE_LEARNER_WINDOW: z.coerce.number().int().min(1).max(86_400).default(60),
  SVC_JUDGE_TENANT_CALLS_PER_HOUR: z.coerce.number().int().min(1).max(1e9).default(1000),
  SVC_JUDGE_TENANT_CALLS_PER_DAY: z.coerce.number().int().min(1).max(1e9).default(10_000),
  SVC_JUDGE_TENANT_TOKENS_PER_HOUR: z.coerce.number().int().min(1000).max(1e12).default(5_000_000),
  SVC_JUDGE_TENANT_TOKENS_PER_DAY: z.coerce.number().int().min(1000).max(1e12).default(50_000_000),
  SVC_JUDGE_MAX_TOKENS: z.coerce.number().int().min(256).max(100_000).default(2048),
  SVC_JUDGE_TOKEN_PARAM: z.enum(['max_completion_tokens', 'max_tokens']).default('max_completion_tokens'),
  SVC_JUDGE_TEMPERATURE: z.coerce.number().min(0).max(2).default(0),
  SVC_JUDGE_SEED: z.coerce.number().int().min(0).max(2 ** 31 - 1).default(20_260_423),
  SVC_IDP_JWKS_MAX_AGE: z.coerce.number().int().min(10).max(3600).default(300),
  SVC_JUDGE_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(4),
  SVC_JUDGE_LEASE: z.coerce.number().int().min(6).max(600).default(30),
  SVC_JUDGE_POLL: z.coerce.number().min(0.5).max(600).default(2),
  SVC_JUDGE_VISION: z.enum(['0', '1', 'true', 'false']).default('1'),
  SVC_JUDGE_INPUT_BYTES: z.coerce.number().int().min(4096).max(4 * 1024 * 1024).default(200_000),
  SVC_FETCH_TIMEOUT: z.coerce.number().min(1).max(300).default(15),
  SVC_FETCH_MAX_BYTES: z.coerce.number().int().min(65_536).max(1024 * 1024 * 1024).default(20 * 1024 * 1024),
  SVC_FETCH_ALLOW_PRIVATE: z.enum(['0', '1', 'true', 'false']).optional(),
  SVC_MCP_ALLOWED_ORIGINS: z.string().default(''),
  SVC_MCP_BODY_LIMIT: z.coerce.number().int().min(65_536).max(256 * 1024 * 1024).default(16 * 1024 * 1024),
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
  SVC_RATE_LIMIT: z.coerce.number().int().min(1).max(1_000_000_000).default(600),
  SVC_RATE_LIMIT_WINDOW: z.coerce.number().int().min(1).max(86_400).default(60),
  SVC_API_KEY_CACHE_TTL_MS: z.coerce.number().int().min(0).max(1000).default(1000),
  SVC_API_KEY_USAGE_FLUSH_MS: z.coerce.number().int().min(100).max(3_600_000).default(5000),
  SVC_SHUTDOWN_DELAY: z.coerce.number({ error: 'must be a number of seconds' }).min(0, 'must not be negative').max(300).default(5),
  SVC_SHUTDOWN_TIMEOUT: z.coerce.number({ error: 'must be a number of seconds' }).min(1, 'must be at least 1 second').max(600).default(20),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});

/** Random secret: `bytes` of CSPRNG output as base64url. */
export function randomSecret(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

function generateSecrets(): Secrets {
  return {
    jwtSecret: randomSecret(48),
    anonKey: `sb_publishable_${randomSecret(24)}`,
    serviceRoleKey: `sb_secret_${randomSecret(32)}`,
  };
}

/** Read `<dataDir>/secrets.json`, creating it (0600) with fresh secrets on first use. */
export function loadOrCreateEmbeddedSecrets(dataDir: string): Secrets {
  const file = join(dataDir, 'secrets.json');
  if (existsSync(file)) return JSON.parse(readFileSync(file, 'utf8')) as Secrets;
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const secrets = generateSecrets();
  writeFileSync(file, JSON.stringify(secrets, null, 2) + '\n', { mode: 0o600, flag: 'wx' });
  chmodSync(file, 0o600);
  return secrets;
}

function checkSecret(name: string, value: string | undefined, minLength: number): string {
  if (!value) throw new ConfigError(`${name} is required when DATABASE_URL is set`);
  if (value.length < minLength) throw new ConfigError(`${name} must be at least ${minLength} characters`);
  if (KNOWN_SECRETS.has(value) || value.startsWith('eyJ')) {
    throw new ConfigError(`${name} is a well-known example value or a JWT; generate your own random value`);
  }
  if (new Set(value).size < 8) throw new ConfigError(`${name} is not random enough; generate it with \`openssl rand -base64 48\``);
  return value;
}

/**
 * Build the config from an environment (default `process.env`).
 * Embedded secrets are read from / written to the data folder. With `requireSecrets: false`
 * (the CLI talking to PostgreSQL directly, which mints no tokens) missing server-mode secrets
 * are left empty instead of refused.
 */
export function loadConfig(source: NodeJS.ProcessEnv = process.env, options: { requireSecrets?: boolean } = {}): Config {
  const requireSecrets = options.requireSecrets ?? true;
  const parsed = env.safeParse(source);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new ConfigError(`${issue.path.join('.')}: ${issue.message}`);
  }
  const e = parsed.data;
  const dataDir = e.DATABASE_URL ? undefined : resolve(e.SVC_DATA_DIR);
  const secrets: Secrets = e.DATABASE_URL
    ? !requireSecrets
      ? { jwtSecret: e.SVC_JWT_SECRET ?? '', anonKey: e.SVC_ANON_KEY ?? '', serviceRoleKey: e.SVC_SERVICE_ROLE_KEY ?? '' }
      : {
        jwtSecret: checkSecret('SVC_JWT_SECRET', e.SVC_JWT_SECRET, 32),
        anonKey: checkSecret('SVC_ANON_KEY', e.SVC_ANON_KEY, 20),
        serviceRoleKey: checkSecret('SVC_SERVICE_ROLE_KEY', e.SVC_SERVICE_ROLE_KEY, 20),
      }
    : {
        // Values in the environment win over the generated ones, with the same checks.
        ...loadOrCreateEmbeddedSecrets(dataDir!),
        ...(e.SVC_JWT_SECRET !== undefined && { jwtSecret: checkSecret('SVC_JWT_SECRET', e.SVC_JWT_SECRET, 32) }),
        ...(e.SVC_ANON_KEY !== undefined && { anonKey: checkSecret('SVC_ANON_KEY', e.SVC_ANON_KEY, 20) }),
        ...(e.SVC_SERVICE_ROLE_KEY !== undefined && {
          serviceRoleKey: checkSecret('SVC_SERVICE_ROLE_KEY', e.SVC_SERVICE_ROLE_KEY, 20),
        }),
      };
  if (requireSecrets && new Set([secrets.jwtSecret, secrets.anonKey, secrets.serviceRoleKey]).size < 3) {
    throw new ConfigError('SVC_JWT_SECRET, SVC_ANON_KEY and SVC_SERVICE_ROLE_KEY must all differ');
  }
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
  return {
    ...secrets,
    port: e.PORT,
    host: e.HOST,
    baseUrl: (e.BASE_URL ?? `http://${e.HOST.includes(':') ? `[${e.HOST}]` : e.HOST}:${e.PORT}`).replace(/\/$/, ''),
    databaseUrl: e.DATABASE_URL,
    databaseReadUrl: e.DATABASE_READ_URL,
    dataDir,
    dbPoolSize: e.SVC_DB_POOL_SIZE ?? DEFAULT_POOL_SIZE,
    dbAcquireTimeoutMs: Math.round(e.SVC_DB_ACQUIRE_TIMEOUT * 1000),
    dbStatementTimeoutMs: Math.round(e.SVC_DB_STATEMENT_TIMEOUT * 1000),
    accessTokenTtl: e.SVC_ACCESS_TOKEN_TTL,
    refreshReuseInterval: e.SVC_REFRESH_REUSE_INTERVAL,
    judge:
      e.SVC_JUDGE_BASE_URL && e.SVC_JUDGE_MODEL
        ? {
            baseUrl: e.SVC_JUDGE_BASE_URL,
            apiKey: e.SVC_JUDGE_API_KEY ?? 'none',
            model: e.SVC_JUDGE_MODEL,
            timeoutMs: e.SVC_JUDGE_TIMEOUT * 1000,
            maxTokens: e.SVC_JUDGE_MAX_TOKENS,
            tokenParam: e.SVC_JUDGE_TOKEN_PARAM,
            temperature: e.SVC_JUDGE_TEMPERATURE,
            seed: e.SVC_JUDGE_SEED,
          }
        : null,
    fetchAllowPrivate: e.SVC_FETCH_ALLOW_PRIVATE === '1' || e.SVC_FETCH_ALLOW_PRIVATE === 'true',
    embed: {
      judgeWaitMs: Math.round(e.SVC_JUDGE_WAIT * 1000),
      judgeAttempts: e.SVC_JUDGE_ATTEMPTS,
      judgeRetryDelaySeconds: e.SVC_JUDGE_RETRY_DELAY,
      judgeRetryMaxDelaySeconds: e.SVC_JUDGE_RETRY_MAX_DELAY,
      judgeMaxAgeSeconds: e.SVC_JUDGE_MAX_AGE,
      learnerRate: e.SVC_JUDGE_LEARNER_RATE,
      learnerWindowSeconds: e.SVC_JUDGE_LEARNER_WINDOW,
      tenantBudget: {
        callsPerHour: e.SVC_JUDGE_TENANT_CALLS_PER_HOUR,
        callsPerDay: e.SVC_JUDGE_TENANT_CALLS_PER_DAY,
        tokensPerHour: e.SVC_JUDGE_TENANT_TOKENS_PER_HOUR,
        tokensPerDay: e.SVC_JUDGE_TENANT_TOKENS_PER_DAY,
      },
      jwksMaxAgeSeconds: e.SVC_IDP_JWKS_MAX_AGE,
      judgeLeaseSeconds: e.SVC_JUDGE_LEASE,
      judgeConcurrency: e.SVC_JUDGE_CONCURRENCY,
      judgePollSeconds: e.SVC_JUDGE_POLL,
      judgeVision: e.SVC_JUDGE_VISION === '1' || e.SVC_JUDGE_VISION === 'true',
      fetchTimeoutMs: Math.round(e.SVC_FETCH_TIMEOUT * 1000),
      fetchMaxBytes: e.SVC_FETCH_MAX_BYTES,
      judgeInputBytes: e.SVC_JUDGE_INPUT_BYTES,
    },
    redisUrl: e.REDIS_URL,
    trustProxy: parseTrustProxy(e.SVC_TRUST_PROXY),
    logLevel: e.LOG_LEVEL,
    accessLog: ['on', '1', 'true'].includes(e.SVC_ACCESS_LOG),
    ...(e.SVC_METRICS_PORT !== undefined && { metrics: { port: e.SVC_METRICS_PORT, host: e.SVC_METRICS_HOST ?? e.HOST } }),
    bodyLimit: 1024 * 1024,
    mcpBodyLimit: e.SVC_MCP_BODY_LIMIT,
    mcpAllowedOrigins: originList('SVC_MCP_ALLOWED_ORIGINS', e.SVC_MCP_ALLOWED_ORIGINS),
    identity: {
      sessionMaxLifetime: e.SVC_SESSION_MAX_LIFETIME,
      sessionInactivityTimeout: e.SVC_SESSION_INACTIVITY_TIMEOUT,
      rateLimit: {
        windowSeconds: e.SVC_AUTH_RATE_WINDOW,
        signInPerIp: e.SVC_AUTH_SIGNIN_PER_IP,
        signInPerEmail: e.SVC_AUTH_SIGNIN_PER_EMAIL,
        refreshPerIp: e.SVC_AUTH_REFRESH_PER_IP,
        registerPerIp: e.SVC_OAUTH_REGISTER_PER_IP,
      },
      argon2: { memoryKib: e.SVC_ARGON2_MEMORY_KIB, timeCost: e.SVC_ARGON2_TIME_COST, parallelism: e.SVC_ARGON2_PARALLELISM },
      corsOrigins: e.SVC_AUTH_CORS_ORIGINS.trim() === '*' ? '*' : originList('SVC_AUTH_CORS_ORIGINS', e.SVC_AUTH_CORS_ORIGINS),
    },
    results: {
      rateLimit: { max: e.SVC_RATE_LIMIT, windowMs: e.SVC_RATE_LIMIT_WINDOW * 1000 },
      keyCacheTtlMs: e.SVC_API_KEY_CACHE_TTL_MS,
      keyUsageFlushMs: e.SVC_API_KEY_USAGE_FLUSH_MS,
    },
    shutdown: { delayMs: Math.round(e.SVC_SHUTDOWN_DELAY * 1000), timeoutMs: Math.round(e.SVC_SHUTDOWN_TIMEOUT * 1000) },
  };
}

/** `SVC_TRUST_PROXY` → Fastify's `trustProxy` (see `Config.trustProxy`). */
function parseTrustProxy(value: string | undefined): boolean | number | string {
  if (value === undefined || value === 'false') return false;
  if (value === 'true') return true;
  if (/^\d+$/.test(value)) return Number(value);
  return value.replace(/\s+/g, '');
}

/** A comma-separated list of origins (`https://app.example.com`) in variable `name`; throws `ConfigError`. */
function originList(name: string, value: string): string[] {
  const origins = value.split(',').map((o) => o.trim()).filter(Boolean);
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
