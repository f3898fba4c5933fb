/**
 * The player's routes over plain HTTP: the loader and assets (types, caching, the 30 KB gzip
 * budget), the page's Content-Security-Policy per tenant (frame-ancestors from the allowed
 * origins, 'none' without any, anywhere for the data-less error page of an unknown tenant), and
 * no Set-Cookie on any of them.
 */
import { gzipSync } from 'node:zlib';
import { beforeAll, describe, expect, it } from 'vitest';
import { useApp } from '../helpers/harness.ts';
import { seedActivity, type SeededActivity } from '../embed/fixtures.ts';

let doc: SeededActivity;

const t = useApp();
beforeAll(async () => {
  await t.op('tenant.create', { slug: 'acme' });
  await t.op('tenant.create', { slug: 'closed' });
  doc = await seedActivity(t, 'acme');
  await t.op('embed.origins.add', { tenant: 'acme', origin: 'https://learn.example.com' });
  await t.op('embed.origins.add', { tenant: 'acme', origin: 'https://*.partner.example' });
});

const get = async (path: string) => {
  const res = await fetch(`${t.url}${path}`);
  return { status: res.status, headers: res.headers, text: await res.text() };
};
const play = (q: Record<string, string>) => get(`/embed/v1/play?${new URLSearchParams(q)}`);
const config = (html: string) => JSON.parse(/<script type="application\/json" id="svc-config">(.*?)<\/script>/s.exec(html)![1]!);

describe('assets', () => {
  it('serves the loader, the player script (≤ 30 KB gzipped) and styles, cached by hash, without cookies', async () => {
    const loader = await get('/embed/v1/svc-embed.js');
    expect(loader.status).toBe(200);
    expect(loader.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(loader.text).toContain('SvcEmbed');
    expect(loader.headers.get('cache-control')).toBe('public, max-age=300');

    const page = await play({ tenant: 'acme', activity: doc.activityId, host: 'https://learn.example.com' });
    const script = /<script src="(player\.js\?v=[0-9a-f]{16})" defer>/.exec(page.text)![1]!;
    const player = await get(`/embed/v1/${script}`);
    expect(player.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(gzipSync(player.text).length).toBeLessThanOrEqual(30 * 1024);
    const css = await get(`/embed/v1/${/href="(player\.css\?v=[0-9a-f]{16})"/.exec(page.text)![1]}`);
    expect(css.headers.get('content-type')).toBe('text/css; charset=utf-8');

    for (const r of [loader, page, player, css]) {
      expect(r.headers.get('set-cookie')).toBeNull();
      expect(r.headers.get('x-content-type-options')).toBe('nosniff');
    }
  });
});

describe('the page', () => {
  it("may be framed by the tenant's origins only, and says so in its CSP", async () => {
    const page = await play({ tenant: 'acme', activity: doc.activityId, host: 'https://a.partner.example' });
    expect(page.status).toBe(200);
    const csp = page.headers.get('content-security-policy')!;
    expect(csp).toContain('frame-ancestors https://*.partner.example https://learn.example.com');
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(page.headers.get('cache-control')).toBe('no-store');
    expect(page.text).toContain('<html lang="en">');
    expect(config(page.text)).toMatchObject({
      tenant: 'acme',
      activity: doc.activityId,
      host: 'https://a.partner.example',
      origins: ['https://*.partner.example', 'https://learn.example.com'],
    });
    expect(config(page.text).error).toBeUndefined();
  });

  it("cannot be framed at all when the tenant has no origins (frame-ancestors 'none')", async () => {
    const page = await play({ tenant: 'closed', activity: doc.activityId, host: 'https://learn.example.com' });
    expect(page.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
  });

  it('answers bad requests with a readable page (the reason in its config), never a blank one', async () => {
    const unknown = await play({ tenant: 'nobody', activity: doc.activityId, host: 'https://learn.example.com' });
    expect(unknown.status).toBe(404);
    expect(unknown.headers.get('content-security-policy')).toContain('frame-ancestors *');
    expect(config(unknown.text).error).toEqual({ code: 'not_found', message: 'There is no organisation "nobody" on this service.' });

    const noTenant = await play({ activity: doc.activityId });
    expect(noTenant.status).toBe(400);
    expect(config(noTenant.text).error.code).toBe('invalid_request');

    const badActivity = await play({ tenant: 'acme', activity: 'nope', host: 'https://learn.example.com' });
    expect(badActivity.status).toBe(400);
    expect(badActivity.headers.get('content-security-policy')).toContain('frame-ancestors https://*.partner.example https://learn.example.com');
    expect(config(badActivity.text).error.message).toMatch(/valid activity id/);

    const badHost = await play({ tenant: 'acme', activity: doc.activityId, host: '"></script><script>alert(1)</script>' });
    expect(badHost.status).toBe(400);
    expect(badHost.text).not.toContain('<script>alert(1)');
    expect(config(badHost.text).host).toBe('');
  });

  it('unknown player paths answer 404 with the /v1 error body', async () => {
    const res = await get('/embed/v1/nothing');
    expect(res.status).toBe(404);
    expect(JSON.parse(res.text).error.code).toBe('not_found');
  });
});
