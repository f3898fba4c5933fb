/**
 * Go's `time.ParseDuration` syntax, for GoTrue's `ban_duration` ("24h", "1h30m", "90s",
 * "1.5h", "-1h"; units ns, us/µs, ms, s, m, h; "0" alone is allowed). "none" (lift the ban)
 * is handled by the caller.
 */

const UNIT_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  μs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

const PART = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/y;

/** Milliseconds of a Go duration string, or undefined when it is not one. */
export function parseGoDuration(text: string): number | undefined {
  let s = text;
  let sign = 1;
  if (s.startsWith('-') || s.startsWith('+')) {
    sign = s.startsWith('-') ? -1 : 1;
    s = s.slice(1);
  }
  if (s === '0') return 0;
  if (s === '' || s.length > 64) return undefined;
  let total = 0;
  PART.lastIndex = 0;
  while (PART.lastIndex < s.length) {
    const m = PART.exec(s);
    if (!m) return undefined;
    total += Number(m[1]) * UNIT_MS[m[2]!]!;
  }
  // Go's Duration is an int64 of nanoseconds: about 292 years.
  if (!Number.isFinite(total) || total > 9.2e15) return undefined;
  return sign * total;
}
