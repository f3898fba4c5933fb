/**
 * `svc audit list`, `svc learner export` and `svc retention` as an admin types them (issue #23): the real `bin/svc.js` process on the suite's
 * backend. Acts of the command itself are the `cli` actor's; bad input is a clear message and a
 * non-zero exit, nothing changed.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useSvc } from '../embed/fixtures.ts';

const svc = useSvc('cli-audit');

describe('svc audit list', () => {
  it('lists the acts, by tenant, action and time; refuses a --since that is not a time', async () => {
    expect((await svc('tenant', 'create', 'acme')).code).toBe(0);
    expect((await svc('key', 'create', 'acme', '--name', 'dash')).code).toBe(0);
    const all = JSON.parse((await svc('audit', 'list', 'acme', '--json')).out);
    expect(all.map((e: { action: string }) => e.action)).toEqual(['tenant.create', 'key.create']);
    expect(all[0]).toMatchObject({ actor: { kind: 'cli', id: null }, target: { type: 'tenant' }, request_id: null });

    const keys = JSON.parse((await svc('audit', 'list', '--action', 'key.create', '--since', '2020-01-01', '--json')).out);
    expect(keys).toHaveLength(1);
    const text = await svc('audit', 'list', 'acme');
    expect(text.code).toBe(0);
    expect(text.out).toMatch(/tenant\.create\s+cli\s+tenant:/);

    const bad = await svc('audit', 'list', '--since', 'last tuesday');
    expect(bad.code).toBe(1);
    expect(bad.out).toMatch(/since: not a time/);
    const typo = await svc('audit', 'list', '--action', 'nonsense.act');
    expect(typo.code, 'an action the service never records is a typo, not "no events"').toBe(1);
    expect(typo.out).toMatch(/action: not an action the service records: one of tenant\.create, /);
    const unknown = await svc('audit', 'list', 'nope');
    expect(unknown.code).toBe(1);
    expect(unknown.out).toMatch(/no tenant "nope"/);
    // reading the log is not an act
    expect(JSON.parse((await svc('audit', 'list', '--json')).out)).toHaveLength(2);
  }, 180_000);

  it('svc learner export: an unwritable --out, or an unknown learner, is a clear message and exit 1; no file left', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-export-'));
    try {
      const unwritable = await svc('learner', 'export', 'acme', '00000000-0000-4000-8000-000000000001', '--out', join(dir, 'no-such-dir', 'x.json'));
      expect(unwritable.code).toBe(1);
      expect(unwritable.out).toMatch(/--out: cannot create .*: its folder does not exist/);
      const out = join(dir, 'x.json');
      const unknown = await svc('learner', 'export', 'acme', '00000000-0000-4000-8000-000000000001', '--out', out);
      expect(unknown.code).toBe(1);
      expect(unknown.out).toMatch(/no learner 00000000-0000-4000-8000-000000000001 in "acme"/);
      expect(existsSync(out)).toBe(false);
      const badDays = await svc('retention', 'set', 'acme', '--tombstones', '0');
      expect(badDays.code).toBe(1);
      expect(badDays.out).toMatch(/tombstones: a positive number of days, or forever/);
      const shown = await svc('retention', 'show', 'acme');
      expect(shown.out).toContain('retention of acme: model bodies 90 days, artifact content forever, tombstones 30 days');
      const erase = await svc('learner', 'delete', 'acme', '00000000-0000-4000-8000-000000000001');
      expect(erase.code).toBe(1);
      expect(JSON.parse((await svc('audit', 'list', '--json')).out)).toHaveLength(2);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 180_000);
});
