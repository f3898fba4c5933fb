/**
 * SQL text helpers shared by every surface that writes SQL (one home for each).
 */

/**
 * SQL writing the timestamptz `expr` as RFC 3339 UTC with microseconds
 * (`2026-03-01T10:00:00.123456Z`), the API's one timestamp text; SQL null stays null.
 */
export const rfc3339 = (expr: string) => `to_char(${expr} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;
