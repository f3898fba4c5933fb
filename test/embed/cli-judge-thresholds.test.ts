/**
 * `svc judge thresholds set|show` as an admin types it (issue #21): the real `bin/svc.js` process
 * on the suite's backend. The gate's thresholds: defaults without a row, a partial change keeps
 * the others, bad values are refused with the field named.
 */
import { describe, expect, it } from 'vitest';
import { useSvc } from './fixtures.ts';

const svc = useSvc('cli-judge');

describe('svc judge thresholds', () => {
  it('shows the defaults, changes some, refuses bad values', async () => {
    expect((await svc('tenant', 'create', 'acme')).code).toBe(0);
    const shown = await svc('judge', 'thresholds', 'show', 'acme', '--json');
    expect(JSON.parse(shown.out)).toEqual({ tenant: 'acme', min_kappa: 0.6, max_false_pass_rate: 0.1, require_adversarial_fail: true });

    const set = await svc('judge', 'thresholds', 'set', 'acme', '--min-kappa', '0.7', '--adversarial-must-fail', 'false');
    expect(set.code).toBe(0);
    expect(set.out).toContain('calibration gate of acme: cohen_kappa >= 0.7, false_pass_rate <= 0.1, adversarial examples must fail: false');

    const bad = await svc('judge', 'thresholds', 'set', 'acme', '--max-false-pass-rate', '2');
    expect(bad.code).toBe(1);
    expect(bad.out).toMatch(/--max-false-pass-rate is between 0 and 1/);
    expect((await svc('judge', 'thresholds', 'set', 'acme')).out).toMatch(/give at least one of/);
    expect((await svc('judge', 'thresholds', 'show', 'nope')).code).toBe(1);
  }, 180_000);
});
