/**
 * The one way tests wait for something that happens in the background: `vi.waitFor` (vitest's
 * poll), with a message naming what was awaited when it times out. Where the wait ends in an
 * assertion, tests use `expect.poll` directly.
 */
import { vi } from 'vitest';

/**
 * Poll `probe` every `interval` ms until it returns a truthy value (returned) or `ms` pass (then
 * throws "timed out waiting for <what>"). A probe that throws counts as not yet.
 */
export function eventually<T>(probe: () => Promise<T | undefined | null | false>, ms = 20_000, what = 'condition', interval = 100): Promise<T> {
  return vi.waitFor(
    async () => {
      const value = await probe();
      if (!value) throw new Error(`timed out waiting for ${what}`);
      return value;
    },
    { timeout: ms, interval },
  );
}

/**
 * When fewer than `seconds` remain before the next UTC hour, wait until just past it (else return
 * at once) — for tests of per-hour budgets, whose window would otherwise start over midway.
 */
export async function clearOfHourBoundary(seconds = 45): Promise<void> {
  const left = 3_600_000 - (Date.now() % 3_600_000);
  if (left < seconds * 1000) await new Promise((resolve) => setTimeout(resolve, left + 1000));
}
