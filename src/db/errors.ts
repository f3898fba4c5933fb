/**
 * Reading database errors the same way on both backends (PGlite and postgres.js both expose
 * the SQLSTATE as `code`). Surfaces use these to answer a client error instead of a 5xx.
 */

/** The SQLSTATE of a PGlite or postgres.js error, if it is one. */
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
