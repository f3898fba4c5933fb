/**
 * RFC 3339 timestamps of the Results API, kept exact to the microsecond without a JS `Date`
 * in the way (a Date holds milliseconds only).
 *
 * `normalizeTimestamp` accepts an RFC 3339 `date-time` (RFC 3339 §5.6: `T`/`t` separator, `Z`/`z`
 * or a ±HH:MM offset, 0–6 fractional digits) and returns the same instant in the one form the
 * API prints: UTC with exactly six fractional digits, `2026-01-01T00:00:00.000001Z`. Anything
 * else — another format, an impossible date (Feb 30), leap second 60, more than microsecond
 * precision, or an instant outside years 0001–9999 once in UTC — is undefined.
 */

const RFC3339_RE = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;

/** The instant of an RFC 3339 date-time as `YYYY-MM-DDTHH:MM:SS.ffffffZ`, or undefined. */
export function normalizeTimestamp(text: string): string | undefined {
  const m = RFC3339_RE.exec(text);
  if (!m) return undefined;
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  const micros = (m[7] ?? '').padEnd(6, '0');
  const offsetMinutes = m[8] ? 0 : (m[9] === '-' ? -1 : 1) * (Number(m[10]) * 60 + Number(m[11]));
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return undefined;
  if (!m[8] && (Number(m[10]) > 23 || Number(m[11]) > 59)) return undefined;

  const local = new Date(0);
  local.setUTCFullYear(year, month - 1, day);
  local.setUTCHours(hour, minute, second, 0);
  // A day past the month's end rolls over into the next month: refuse it.
  if (local.getUTCFullYear() !== year || local.getUTCMonth() !== month - 1 || local.getUTCDate() !== day) return undefined;

  const utc = new Date(local.getTime() - offsetMinutes * 60_000);
  const utcYear = utc.getUTCFullYear();
  if (utcYear < 1 || utcYear > 9999) return undefined;
  // toISOString: YYYY-MM-DDTHH:MM:SS.000Z for years 0001–9999.
  return `${utc.toISOString().slice(0, 19)}.${micros}Z`;
}
