/** The outbound guard: address classification and the guarded fetch (GET and POST). */
import { describe, expect, it } from 'vitest';
import { fetchPage, fetchResource, FetchRefused, isBlockedAddress, refuseUrl } from '../../src/http/outbound.ts';
import { startSite } from '../embed/servers.ts';
import { useServer } from '../helpers/harness.ts';

const site = useServer(() =>
  startSite({
    '/': { type: 'text/html', body: '<p>hello</p>' },
    '/redirect-private': { redirect: 'http://10.0.0.1/' },
    '/redirect-malformed': { redirect: 'http://[bad' },
    '/redirect-loop': { redirect: '/redirect-loop' },
    '/binary': { type: 'application/octet-stream', body: 'x' },
    '/big': { type: 'text/plain', body: 'a'.repeat(5000) },
    '/echo': (req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c));
      req.on('end', () =>
        res
          .writeHead(201, { 'content-type': 'application/json' })
          .end(JSON.stringify({ method: req.method, type: req.headers['content-type'], auth: req.headers.authorization, body })),
      );
    },
    '/post-redirect': { redirect: '/echo', status: 303 },
    '/unavailable': { type: 'text/plain', body: 'down', status: 503 },
  }),
);

describe('isBlockedAddress', () => {
  it('blocks private, loopback, link-local, CGNAT, unspecified and mapped addresses', () => {
    for (const ip of [
      '127.0.0.1',
      '10.1.2.3',
      '172.16.0.1',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '::1',
      '::',
      'fe80::1',
      'fd00::1',
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
      '64:ff9b::7f00:1',
      '::7f00:1',
      '::ffff:0:7f00:1',
      'not-an-ip',
    ]) {
      expect(isBlockedAddress(ip), ip).toBe(true);
    }
  });

  it('allows public addresses', () => {
    for (const ip of ['93.184.216.34', '1.1.1.1', '8.8.8.8', '::ffff:8.8.8.8', '2606:4700:4700::1111']) expect(isBlockedAddress(ip), ip).toBe(false);
  });
});

describe('refuseUrl', () => {
  it('refuses localhost names, literal private addresses (also in odd notations) and credentials', () => {
    for (const url of ['http://localhost/', 'http://app.localhost/', 'http://2130706433/', 'http://0x7f.1/', 'http://[::1]/', 'http://u:p@example.com/']) {
      expect(refuseUrl(new URL(url), false), url).toBeTypeOf('string');
    }
    expect(refuseUrl(new URL('https://example.com/page'), false)).toBeUndefined();
    expect(refuseUrl(new URL('http://127.0.0.1/'), true)).toBeUndefined();
  });
});

describe('fetchResource with a method and a body', () => {
  const json = { allowPrivate: true, timeoutMs: 2000, accept: (t: string) => t.startsWith('application/json') };

  it('sends the body and headers, and reads the answer', async () => {
    const r = await fetchResource(`${site.url}/echo`, {
      ...json,
      method: 'POST',
      body: 'a=1',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: 'Bearer t' },
    });
    expect(r.status).toBe(201);
    expect(JSON.parse(r.body.toString())).toEqual({ method: 'POST', type: 'application/x-www-form-urlencoded', auth: 'Bearer t', body: 'a=1' });
  });

  it('does not follow a redirect of a POST, and reports the status of a failed answer', async () => {
    await expect(fetchResource(`${site.url}/post-redirect`, { ...json, method: 'POST', body: '' })).rejects.toMatchObject({ status: 303 });
    await expect(fetchResource(`${site.url}/unavailable`, { ...json, method: 'POST', body: '' })).rejects.toMatchObject({ status: 503 });
  });
});

describe('fetchPage', () => {
  it('fetches text when private addresses are allowed (tests)', async () => {
    const page = await fetchPage(`${site.url}/`, { allowPrivate: true, timeoutMs: 2000 });
    expect(page).toMatchObject({ status: 200, text: '<p>hello</p>', truncated: false });
  });

  it('refuses a host name that resolves to a private address, without connecting', async () => {
    const before = site.hits.length;
    const port = new URL(site.url).port;
    await expect(
      fetchPage(`http://innocent.test:${port}/`, { allowPrivate: false, timeoutMs: 2000, lookup: async () => [{ address: '127.0.0.1', family: 4 }] }),
    ).rejects.toThrow(FetchRefused);
    expect(site.hits.length).toBe(before);
  });

  it('connects to the address it checked, not to a second DNS answer', async () => {
    const port = new URL(site.url).port;
    let calls = 0;
    const page = await fetchPage(`http://pinned.test:${port}/`, {
      allowPrivate: true,
      timeoutMs: 2000,
      lookup: async () => (calls++ === 0 ? [{ address: '127.0.0.1', family: 4 }] : [{ address: '10.255.255.1', family: 4 }]),
    });
    expect(page.status).toBe(200);
    expect(calls).toBe(1);
  });

  it('re-checks every redirect hop against the address rule', async () => {
    // Loopback allowed for the test server, 10/8 refused: the first hop passes, the redirect
    // to http://10.0.0.1/ must be refused before any connection is tried.
    const isBlocked = (ip: string) => ip.startsWith('10.');
    await expect(fetchPage(`${site.url}/redirect-private`, { allowPrivate: false, isBlocked, timeoutMs: 2000 })).rejects.toThrow(/private address/);
    expect(await fetchPage(`${site.url}/`, { allowPrivate: false, isBlocked, timeoutMs: 2000 })).toMatchObject({ status: 200 });
  });

  it('caps redirects, refuses binary content and cuts big bodies', async () => {
    await expect(fetchPage(`${site.url}/redirect-loop`, { allowPrivate: true, timeoutMs: 2000 })).rejects.toThrow(/too many redirects/);
    await expect(fetchPage(`${site.url}/redirect-malformed`, { allowPrivate: true, timeoutMs: 2000 })).rejects.toThrow(FetchRefused);
    await expect(fetchPage(`${site.url}/binary`, { allowPrivate: true, timeoutMs: 2000 })).rejects.toThrow(
      /application\/octet-stream, which cannot be read here/,
    );
    const big = await fetchPage(`${site.url}/big`, { allowPrivate: true, timeoutMs: 2000, maxBytes: 1000 });
    expect(big).toMatchObject({ truncated: true });
    expect(big.text).toHaveLength(1000);
  });
});
