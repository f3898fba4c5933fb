/**
 * Configuration, step 3 — the app's config, one section per surface, built from the parsed
 * environment (parse.ts). Pure: no file I/O, no secrets (secrets.ts). `defaultSections()` is the
 * config an empty environment gives, from which the test config is derived (test/helpers/harness.ts).
 */
import { resolve } from 'node:path';
import { DEFAULT_POOL_SIZE } from './db-defaults.ts';
import { originList, parseEnv, parseTrustProxy, type Env } from './parse.ts';
import type { Secrets } from './secrets.ts';

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

/** A per-tenant model budget: calls and tokens per UTC hour and per UTC day (src/embed/grading/ledger.ts `reserveCall`). */
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
    /** OAuth dynamic client registrations (POST /oauth/clients/register) per IP and minute (a fixed 60-second window; issue #23). */
    registerPerIp: number;
    /** OAuth authorization requests (GET /oauth/authorize) per IP and minute (a fixed 60-second window). */
    authorizePerIpPerMinute: number;
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
  /** Appeals (review requests) per learner and tenant per `appealWindowSeconds` (default 5 per 3600; 429 beyond). */
  appealRate?: number;
  appealWindowSeconds?: number;
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
  /**
   * Exports running at once in this process, across all keys (each holds a database connection of
   * its own outside the pool on PostgreSQL); one more is refused with 503 and `Retry-After`.
   */
  exportsMax: number;
  /**
   * Milliseconds an export may go without sending a byte (a client that stopped reading, or a
   * query that long without a row) before it is ended: it holds a snapshot (vacuum waits for it),
   * a connection and its key's export.
   */
  exportIdleTimeoutMs: number;
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
  /** `SVC_LOG_FORMAT`: JSON lines or pretty lines; unset: pretty when stdout is a terminal (src/telemetry/log-format.ts). */
  logFormat?: 'json' | 'pretty';
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

/** The language model of the judge (`SVC_JUDGE_*`), or null when none is configured. */
export function judgeSection(e: Env): JudgeConfig | null {
  if (!e.SVC_JUDGE_BASE_URL || !e.SVC_JUDGE_MODEL) return null;
  return {
    baseUrl: e.SVC_JUDGE_BASE_URL,
    apiKey: e.SVC_JUDGE_API_KEY ?? 'none',
    model: e.SVC_JUDGE_MODEL,
    timeoutMs: e.SVC_JUDGE_TIMEOUT * 1000,
    maxTokens: e.SVC_JUDGE_MAX_TOKENS,
    tokenParam: e.SVC_JUDGE_TOKEN_PARAM,
    temperature: e.SVC_JUDGE_TEMPERATURE,
    seed: e.SVC_JUDGE_SEED,
  };
}

/** The embed surface and its judge's bounds (src/embed/README.md). */
export function embedSection(e: Env): EmbedConfig {
  return {
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
  };
}

/** The identity platform (`/auth/v1`). */
export function identitySection(e: Env): IdentityConfig {
  return {
    sessionMaxLifetime: e.SVC_SESSION_MAX_LIFETIME,
    sessionInactivityTimeout: e.SVC_SESSION_INACTIVITY_TIMEOUT,
    rateLimit: {
      windowSeconds: e.SVC_AUTH_RATE_WINDOW,
      signInPerIp: e.SVC_AUTH_SIGNIN_PER_IP,
      signInPerEmail: e.SVC_AUTH_SIGNIN_PER_EMAIL,
      refreshPerIp: e.SVC_AUTH_REFRESH_PER_IP,
      registerPerIp: e.SVC_OAUTH_REGISTER_PER_IP,
      authorizePerIpPerMinute: e.SVC_OAUTH_AUTHORIZE_PER_IP,
    },
    argon2: { memoryKib: e.SVC_ARGON2_MEMORY_KIB, timeCost: e.SVC_ARGON2_TIME_COST, parallelism: e.SVC_ARGON2_PARALLELISM },
    corsOrigins: e.SVC_AUTH_CORS_ORIGINS.trim() === '*' ? '*' : originList('SVC_AUTH_CORS_ORIGINS', e.SVC_AUTH_CORS_ORIGINS),
  };
}

/** The results API (`/v1`). */
export function resultsSection(e: Env): ResultsConfig {
  return {
    rateLimit: { max: e.SVC_RATE_LIMIT, windowMs: e.SVC_RATE_LIMIT_WINDOW * 1000 },
    keyCacheTtlMs: e.SVC_API_KEY_CACHE_TTL_MS,
    keyUsageFlushMs: e.SVC_API_KEY_USAGE_FLUSH_MS,
    exportsMax: e.SVC_EXPORTS_MAX,
    exportIdleTimeoutMs: Math.round(e.SVC_EXPORT_IDLE_TIMEOUT * 1000),
  };
}

/** Shutdown timing (src/http/shutdown.ts). */
export function shutdownSection(e: Env): ShutdownConfig {
  return { delayMs: Math.round(e.SVC_SHUTDOWN_DELAY * 1000), timeoutMs: Math.round(e.SVC_SHUTDOWN_TIMEOUT * 1000) };
}

/** Everything but the secrets: the process (listener, database, logs, telemetry) and each surface's section. */
export function configSections(e: Env): Omit<Config, keyof Secrets> {
  return {
    port: e.PORT,
    host: e.HOST,
    baseUrl: (e.BASE_URL ?? `http://${e.HOST.includes(':') ? `[${e.HOST}]` : e.HOST}:${e.PORT}`).replace(/\/$/, ''),
    databaseUrl: e.DATABASE_URL,
    databaseReadUrl: e.DATABASE_READ_URL,
    dataDir: e.DATABASE_URL ? undefined : resolve(e.SVC_DATA_DIR),
    dbPoolSize: e.SVC_DB_POOL_SIZE ?? DEFAULT_POOL_SIZE,
    dbAcquireTimeoutMs: Math.round(e.SVC_DB_ACQUIRE_TIMEOUT * 1000),
    dbStatementTimeoutMs: Math.round(e.SVC_DB_STATEMENT_TIMEOUT * 1000),
    accessTokenTtl: e.SVC_ACCESS_TOKEN_TTL,
    refreshReuseInterval: e.SVC_REFRESH_REUSE_INTERVAL,
    judge: judgeSection(e),
    fetchAllowPrivate: e.SVC_FETCH_ALLOW_PRIVATE === '1' || e.SVC_FETCH_ALLOW_PRIVATE === 'true',
    embed: embedSection(e),
    redisUrl: e.REDIS_URL,
    trustProxy: parseTrustProxy(e.SVC_TRUST_PROXY),
    logLevel: e.LOG_LEVEL,
    ...(e.SVC_LOG_FORMAT !== undefined && { logFormat: e.SVC_LOG_FORMAT }),
    accessLog: ['on', '1', 'true'].includes(e.SVC_ACCESS_LOG),
    ...(e.SVC_METRICS_PORT !== undefined && { metrics: { port: e.SVC_METRICS_PORT, host: e.SVC_METRICS_HOST ?? e.HOST } }),
    bodyLimit: 1024 * 1024,
    mcpBodyLimit: e.SVC_MCP_BODY_LIMIT,
    mcpAllowedOrigins: originList('SVC_MCP_ALLOWED_ORIGINS', e.SVC_MCP_ALLOWED_ORIGINS),
    identity: identitySection(e),
    results: resultsSection(e),
    shutdown: shutdownSection(e),
  };
}

/** The config of an empty environment, secrets aside: every default in one object. */
export const defaultSections = (): Omit<Config, keyof Secrets> => configSections(parseEnv({}));
