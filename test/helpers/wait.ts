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
