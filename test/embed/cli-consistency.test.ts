/**
 * `svc judge consistency set|off|show` as an admin types it: the real `bin/svc.js` process on the
 * suite's backend (an embedded data folder the CLI opens itself, or DATABASE_URL). Bad values are
 * refused with a message naming the option, exit code 1, and nothing changes.
 */
import { describe, expect, it } from 'vitest';
import { useSvc } from './fixtures.ts';

const svc = useSvc('cli-consistency');

describe('svc judge consistency', () => {
  // Few commands: each CLI process opens the database (an embedded folder is slow on a busy machine).
  it('is off by default; set turns it on, bad values change nothing, off turns it off', async () => {
    expect((await svc('tenant', 'create', 'acme')).code).toBe(0);
    const shown = await svc('judge', 'consistency', 'show', 'acme');
    expect(shown.out).toContain('borderline consistency of acme: off');

    const set = await svc('judge', 'consistency', 'set', 'acme', '--margin', '5', '--repeats', '2', '--json');
    expect(set.code).toBe(0);
    expect(JSON.parse(set.out)).toEqual({ tenant: 'acme', enabled: true, margin: 5, repeats: 2 });

    const badMargin = await svc('judge', 'consistency', 'set', 'acme', '--margin', '101');
    expect(badMargin.code).toBe(1);
    expect(badMargin.out).toContain('margin: a number of points from 0 to 100');
    const badRepeats = await svc('judge', 'consistency', 'set', 'acme', '--margin', '8', '--repeats', '4', '--json');
    expect(badRepeats.code).toBe(1);
    expect(JSON.parse(badRepeats.out)).toEqual({ error: { code: 'invalid', message: 'repeats: 2 or 3 (runs in all, the first included)' } });

    const off = await svc('judge', 'consistency', 'off', 'acme', '--json');
    expect(JSON.parse(off.out)).toEqual({ tenant: 'acme', enabled: false, margin: null, repeats: 2 }); // the bad values changed nothing
  }, 180_000);
});
