/**
 * Reading database errors the same way on both backends (PGlite and node-postgres both expose
 * the SQLSTATE as `code`). Surfaces use these to answer a client error instead of a 5xx, and a
 * 503 instead of a 500 when the database is unavailable (`DbUnavailableError`, issue #11).
 */

/** The SQLSTATE of a PGlite or node-postgres error, if it is one. */
export function sqlState(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

/**
 * SQLSTATEs that mean a value from the request cannot be stored or read as its type: a NUL
 * character in text (22021, 22P05), an impossible date (22007, 22008), a number out of range
 * (22003), malformed input for a type (22P02), a string too long (22001), a check or not-null
 * rule (23514, 23502). PostgreSQL Appendix A, class 22 and 23.
 */
const BAD_INPUT = new Set(['22021', '22P05', '22007', '22008', '22003', '22P02', '22001', '23514', '23502']);

/** True when `err` is the database refusing a value of the request (a client error). */
export const isBadInput = (err: unknown) => BAD_INPUT.has(sqlState(err) ?? '');

/** True when `err` is a unique-constraint violation (23505). */
export const isUniqueViolation = (err: unknown) => sqlState(err) === '23505';

/**
 * The database cannot serve the request now: no connection could be had within the acquisition
 * timeout (server down, refusing, starting up or shutting down, too many connections), the
 * connection dropped (a backend terminated, a failover), or a statement ran past the statement
 * timeout. Surfaces answer it with 503 and `Retry-After` in their own error body, never a 500
 * with the driver's message; the pool recovers by itself once the server answers again.
 * `cause` keeps the driver's error for the log.
 */
export class DbUnavailableError extends Error {
  constructor(readonly cause: unknown) {
    super('the database is unavailable');
    this.name = 'DbUnavailableError';
  }
}

/** Seconds a client is asked to wait (`Retry-After`) when the database is unavailable. */
export const DB_RETRY_AFTER_SECONDS = 5;

/** True when `err` is (or wraps) an unavailable database. */
export const isDbUnavailable = (err: unknown): err is DbUnavailableError => err instanceof DbUnavailableError;

/**
 * SQLSTATEs of an unavailable server rather than of the statement (PostgreSQL Appendix A): class
 * 08 connection exception, class 53 insufficient resources (disk full, out of memory, too many
 * connections), 57014 query_canceled (the statement timeout), 57P01–57P05 admin / crash
 * shutdown, cannot connect now, idle session timeout.
 */
const UNAVAILABLE_STATE = /^(08...|53...|57014|57P0[1-5])$/;
/** Node socket errors and the driver's own words for a lost or never-made connection. */
const NETWORK_CODE = /^(ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH|EHOSTDOWN)$/;
const LOST_CONNECTION = /connection terminated|timeout exceeded when trying to connect|connection timeout|query read timeout|not queryable|connection error/i;

/**
 * `err` as a `DbUnavailableError` when it says the database is unavailable (see above), else
 * `err` unchanged. Used by the PostgreSQL backend on everything the driver throws.
 */
export function asUnavailable(err: unknown): unknown {
  if (err instanceof DbUnavailableError) return err;
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && NETWORK_CODE.test(code)) return new DbUnavailableError(err); // before: EPIPE has 5 letters
  const state = sqlState(err);
  if (state) return UNAVAILABLE_STATE.test(state) ? new DbUnavailableError(err) : err;
  if (err instanceof Error && LOST_CONNECTION.test(err.message)) return new DbUnavailableError(err);
  return err;
}
