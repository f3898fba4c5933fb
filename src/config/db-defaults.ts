/**
 * The database settings' defaults (SVC_DB_POOL_SIZE, SVC_DB_ACQUIRE_TIMEOUT,
 * SVC_DB_STATEMENT_TIMEOUT): configuration's, used by the parser (parse.ts, sections.ts) and by
 * src/db/postgres.ts when a caller (a test, a bench) opens a database without them.
 */
import { availableParallelism } from 'node:os';

/**
 * Default pool size: twice the CPU cores, at least 4 (the PostgreSQL wiki's rule of thumb for
 * active connections). More busy backends than that only time-slice against each other and
 * against the server: the results API's p99 on 2 cores was 6–9× worse with 10 (bench/README.md).
 */
export const DEFAULT_POOL_SIZE = Math.max(4, 2 * availableParallelism());
/** Default wait for a pooled connection, in milliseconds (`SVC_DB_ACQUIRE_TIMEOUT`). */
export const DEFAULT_ACQUIRE_TIMEOUT_MS = 5000;
/** Default statement timeout, in milliseconds (`SVC_DB_STATEMENT_TIMEOUT`). */
export const DEFAULT_STATEMENT_TIMEOUT_MS = 30_000;
