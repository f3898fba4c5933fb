/** The allowed-origin rules (src/embed/origins.ts): normalising entries and matching a page's origin. */
import { describe, expect, it } from 'vitest';
import { allows, frameAncestors, normalizeOrigin } from '../../src/embed/origins.ts';

describe('origins', () => {
  it('normalises exact and wildcard origins, refusing anything else', () => {
    expect(normalizeOrigin('HTTPS://Learn.Example.com:443/')).toEqual({ origin: 'https://learn.example.com' });
    expect(normalizeOrigin('http://127.0.0.1:5173')).toEqual({ origin: 'http://127.0.0.1:5173' });
    expect(normalizeOrigin('http://[::1]:8080')).toEqual({ origin: 'http://[::1]:8080' });
    expect(normalizeOrigin('https://*.example.com')).toEqual({ origin: 'https://*.example.com' });
    for (const bad of [
      'https://*.com',
      'https://a.example.com/x',
      'https://a.example.com?x',
      'data:text/html,x',
      'https://x.org:99999',
      "'self'",
      'https://a b.org',
    ]) {
      expect(normalizeOrigin(bad), bad).toHaveProperty('error');
    }
  });

  it('matches exact origins, and one subdomain level for a wildcard', () => {
    const entries = ['https://learn.example.com', 'https://*.partner.example', 'http://127.0.0.1:5173'];
    expect(allows(entries, 'https://learn.example.com')).toBe(true);
    expect(allows(entries, 'http://learn.example.com')).toBe(false);
    expect(allows(entries, 'https://a.partner.example')).toBe(true);
    expect(allows(entries, 'https://partner.example')).toBe(false);
    expect(allows(entries, 'https://a.b.partner.example')).toBe(false);
    expect(allows(entries, 'https://evilpartner.example')).toBe(false);
    expect(allows(entries, 'https://a.partner.example:8443')).toBe(false);
    expect(allows(entries, 'http://127.0.0.1:5174')).toBe(false);
    expect(allows([], 'https://learn.example.com')).toBe(false);
  });

  it("builds frame-ancestors, 'none' without origins", () => {
    expect(frameAncestors([])).toBe("'none'");
    expect(frameAncestors(['https://a.example', 'https://*.b.example'])).toBe('https://a.example https://*.b.example');
  });
});
