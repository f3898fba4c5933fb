/**
 * `svc embed origins add|remove|list` as an admin types it: the real `bin/svc.js` process on the
 * suite's backend (an embedded data folder the CLI opens itself, or DATABASE_URL).
 */
import { describe, expect, it } from 'vitest';
import { useSvc } from './fixtures.ts';

const svc = useSvc('cli-origins');

describe('svc embed origins', () => {
  // Few commands: each CLI process opens the database (an embedded folder is slow on a busy machine).
  it('says the player cannot be framed without origins; adds, lists and removes them', async () => {
    expect((await svc('tenant', 'create', 'acme')).code).toBe(0);
    const none = await svc('embed', 'origins', 'list', 'acme');
    expect(none.out).toContain("no origins: acme's player cannot be framed by any page (frame-ancestors 'none')");

    const added = await svc('embed', 'origins', 'add', 'acme', 'https://*.partner.example', '--json');
    expect(JSON.parse(added.out)).toEqual({ tenant: 'acme', origin: 'https://*.partner.example', added: true, origins: ['https://*.partner.example'] });
    const listed = await svc('embed', 'origins', 'list', 'acme');
    expect(listed.out).toContain("origins allowed to embed acme's player:\n  https://*.partner.example");

    const bad = await svc('embed', 'origins', 'add', 'acme', 'https://partner.example/course');
    expect(bad.code).toBe(1);
    expect(bad.out).toMatch(/is not an origin/);

    const removed = await svc('embed', 'origins', 'remove', 'acme', 'https://*.partner.example');
    expect(removed.code).toBe(0);
    expect(removed.out).toContain('removed https://*.partner.example');
  }, 180_000);
});
