/**
 * `svc lti …` as an admin types it (issue #22): the real `bin/svc.js` process on the suite's
 * backend — registering a platform, listing it, the registration values as text and JSON, a
 * dynamic registration URL, the tool's keys and their rotation.
 */
import { describe, expect, it } from 'vitest';
import { useSvc } from '../embed/fixtures.ts';

const svc = useSvc('cli-lti');

describe('svc lti', () => {
  // Few commands: each CLI process opens the database (an embedded folder is slow on a busy machine).
  it('registers, lists and removes a platform; prints the config; rotates the keys', async () => {
    expect((await svc('tenant', 'create', 'acme')).code).toBe(0);
    const added = await svc(
      'lti',
      'platforms',
      'add',
      'acme',
      '--issuer',
      'https://moodle.example.edu',
      '--client-id',
      'abc123',
      '--auth-url',
      'https://moodle.example.edu/mod/lti/auth.php',
      '--token-url',
      'https://moodle.example.edu/mod/lti/token.php',
      '--jwks-url',
      'https://moodle.example.edu/mod/lti/certs.php',
      '--deployment',
      '1',
      '--deployment',
      '7',
      '--frame-origin',
      'https://LMS.example.edu/',
      '--frame-origin',
      'https://*.example.edu',
    );
    expect(added.code).toBe(0);
    expect(added.out).toContain('registered acme: https://moodle.example.edu client abc123');
    expect(added.out).toContain('deployments 1, 7');
    expect(added.out).toContain('framed from https://*.example.edu https://lms.example.edu');

    const missing = await svc('lti', 'platforms', 'add', 'acme', '--issuer', 'https://x.example', '--client-id', 'c');
    expect(missing.code).not.toBe(0);
    expect(missing.out).toMatch(/--auth-url/);
    const u = 'https://x.example/lti';
    const badOrigin = await svc(
      'lti',
      'platforms',
      'add',
      'acme',
      '--issuer',
      u,
      '--client-id',
      'c',
      '--auth-url',
      u,
      '--token-url',
      u,
      '--jwks-url',
      u,
      '--frame-origin',
      'https://x.example/course',
    );
    expect(badOrigin.code).not.toBe(0);
    expect(badOrigin.out).toMatch(/not an origin/);

    const listed = JSON.parse((await svc('lti', 'platforms', 'list', '--json')).out);
    expect(listed).toEqual([
      expect.objectContaining({
        tenant: 'acme',
        issuer: 'https://moodle.example.edu',
        client_id: 'abc123',
        deployments: ['1', '7'],
        frame_origins: ['https://*.example.edu', 'https://lms.example.edu'],
      }),
    ]);

    const text = await svc('lti', 'config');
    expect(text.out).toMatch(/login URL \(OIDC login initiation\): +http:\/\/.+\/lti\/v1\/login/);
    expect(text.out).toMatch(/public keys \(JWK set URL\): +http:\/\/.+\/lti\/v1\/jwks/);
    const config = JSON.parse((await svc('lti', 'config', '--json')).out);
    expect(config.launch_url).toMatch(/\/lti\/v1\/launch$/);

    const rotated = await svc('lti', 'keys', 'rotate', '--json');
    const second = await svc('lti', 'keys', 'rotate');
    expect(second.out).toContain(`${JSON.parse(rotated.out).kid} stays in /lti/v1/jwks for 360 s`);

    // A single-use dynamic registration URL under BASE_URL, as text and JSON.
    const minted = await svc('lti', 'registration-url', 'acme');
    expect(minted.code).toBe(0);
    expect(minted.out).toMatch(/^https?:\/\/\S+\/lti\/v1\/register\/[A-Za-z0-9_-]{43}\n\(single use, for acme; expires \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\)/);
    const mintedJson = JSON.parse((await svc('lti', 'registration-url', 'acme', '--json')).out);
    expect(mintedJson).toMatchObject({ tenant: 'acme', url: expect.stringMatching(/\/lti\/v1\/register\/[A-Za-z0-9_-]{43}$/), expires_at: expect.any(String) });
    expect(mintedJson.url).not.toBe(minted.out.split('\n')[0]);
    expect((await svc('lti', 'registration-url', 'nope')).code).not.toBe(0);
    // score deliveries (test/lti/ags.test.ts fills them; here: the command and its output forms)
    expect((await svc('lti', 'scores', 'acme')).out.trim()).toBe('(none)');
    expect(JSON.parse((await svc('lti', 'scores', 'acme', '--failed', '--json')).out)).toEqual([]);

    const removed = await svc('lti', 'platforms', 'remove', 'acme', 'https://moodle.example.edu', 'abc123');
    expect(removed.out).toContain('removed https://moodle.example.edu client abc123 from acme');
    expect((await svc('lti', 'platforms', 'remove', 'acme', 'https://moodle.example.edu', 'abc123')).code).toBe(1);
  }, 240_000);
});
