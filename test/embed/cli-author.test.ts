/**
 * `svc author grant|revoke` by IdP subject, as an admin types it: the real `bin/svc.js` process on
 * the suite's backend (an embedded data folder the CLI opens itself, or DATABASE_URL).
 * `svc author grant <tenant-slug> <email>` keeps working (test/cli covers it too).
 */
import { describe, expect, it } from 'vitest';
import { useSvc } from './fixtures.ts';

const svc = useSvc('cli-author');

describe('svc author … --subject', () => {
  it('grants and revokes authorship to an IdP subject, the issuer defaulting to the tenant IdP', async () => {
    expect((await svc('tenant', 'create', 'acme')).code).toBe(0);
    expect((await svc('idp', 'set', 'acme', '--issuer', 'https://idp.acme.test', '--jwks-url', 'https://idp.acme.test/jwks.json')).code).toBe(0);
    const grant = await svc('author', 'grant', 'acme', '--subject', 'teacher-7', '--json');
    expect(grant.code).toBe(0);
    expect(JSON.parse(grant.out)).toEqual({ tenant: 'acme', issuer: 'https://idp.acme.test', subject: 'teacher-7', svc_user_id: null, role: 'author' });
    const other = await svc('author', 'grant', 'acme', '--subject', 'teacher-8', '--issuer', 'https://other.test');
    expect(other.code).toBe(0);
    expect(other.out).toContain('IdP subject teacher-8 (https://other.test) is now an author of acme');
    const revoke = await svc('author', 'revoke', 'acme', '--subject', 'teacher-7', '--json');
    expect(JSON.parse(revoke.out)).toMatchObject({ subject: 'teacher-7', role: 'learner' });
    const both = await svc('author', 'grant', 'acme', 'a@acme.test', '--subject', 'x');
    expect(both.code).not.toBe(0);
    expect(both.out).toMatch(/an email or --subject, not both/);
  }, 180_000);
});
