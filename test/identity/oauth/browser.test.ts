/**
 * Issue #12: the whole flow once in a real browser — Debian's chromium driven by playwright-core
 * (test/helpers/browser.ts; fails loudly when no browser is installed). The MCP SDK client starts
 * from the /mcp URL; chromium opens the authorize URL, a person's keyboard signs in, the consent
 * page is read and Allow pressed; the browser lands on the host's loopback callback server, which
 * hands the code to the SDK. Also: axe-core finds no violation on the pages, and a page on
 * another origin cannot frame them (chromium refuses: `frame-ancestors 'none'`).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { axeViolations, launchBrowser, newPage, screenshot } from '../../helpers/browser.ts';
import { seedAuthor, useApp, useServer } from '../../helpers/harness.ts';
import { authorizeUrl, MemoryProvider, pkce, register } from './helpers.ts';

const codes: string[] = [];
const author = { email: 'margaret@browser.test', password: 'correct horse battery' };

const t = useApp();
beforeAll(async () => {
  await seedAuthor(t, 'browser', author.email, author.password);
});
const browser = useServer(launchBrowser);
/** The MCP host's loopback callback (what Claude Code or VS Code listen on). */
const callback = useServer(async () => {
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const code = url.searchParams.get('code');
    if (code) codes.push(code);
    res
      .writeHead(200, { 'content-type': 'text/html' })
      .end('<!doctype html><html lang="en"><title>Connected</title><h1>Connected. You can close this tab.</h1></html>');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback`,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
});

describe('OAuth in chromium', () => {
  it('MCP SDK client + a person in the browser: sign in with the keyboard, Allow, connected', async () => {
    const provider = new MemoryProvider(callback.url);
    const transport = new StreamableHTTPClientTransport(new URL(`${t.url}/mcp`), { authProvider: provider });
    await expect(new Client({ name: 'browser-host', version: '1' }).connect(transport)).rejects.toBeInstanceOf(UnauthorizedError);

    const page = await newPage(browser);
    await page.goto(provider.authorizationUrl!.toString());
    await expect(page.getByRole('heading', { name: 'Sign in' }).isVisible()).resolves.toBe(true);
    expect(await axeViolations(page)).toEqual([]);
    await screenshot(page, 'oauth-sign-in');
    // Keyboard only: the email field has focus; type, Tab, type, Enter.
    await page.keyboard.type(author.email);
    await page.keyboard.press('Tab');
    await page.keyboard.type(author.password);
    await page.keyboard.press('Enter');
    await page.getByRole('button', { name: 'Allow' }).waitFor();
    const consent = await page.textContent('main');
    expect(consent).toContain('Test MCP host');
    expect(consent).toContain(author.email);
    expect(consent).toContain('localhost');
    expect(await axeViolations(page)).toEqual([]);
    await screenshot(page, 'oauth-consent');
    await page.getByRole('button', { name: 'Allow' }).focus();
    await page.keyboard.press('Enter');
    await page.waitForURL((u) => u.toString().startsWith(callback.url));
    expect(await page.evaluate(() => document.cookie)).toBe('');
    await page.context().close();

    expect(codes).toHaveLength(1);
    await transport.finishAuth(codes[0]!);
    const client = new Client({ name: 'browser-host', version: '1' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${t.url}/mcp`), { authProvider: provider }));
    const me = (await client.callTool({ name: 'whoami', arguments: {} })).structuredContent as { email: string };
    expect(me.email).toBe(author.email);
    await client.close();
  });

  it('a wrong password shows an error in an alert; the error page passes axe too', async () => {
    const page = await newPage(browser);
    await page.goto(authorizeUrl(t, await register(t), pkce().challenge).toString());
    await page.getByLabel('Email').fill(author.email);
    await page.getByLabel('Password').fill('not the password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect(page.getByRole('alert').textContent()).resolves.toContain('do not match');
    expect(await axeViolations(page)).toEqual([]);
    await screenshot(page, 'oauth-sign-in-error');
    await page.goto(`${t.url}/auth/v1/oauth/authorize?client_id=00000000-0000-4000-8000-000000000000`);
    expect(await axeViolations(page)).toEqual([]);
    await screenshot(page, 'oauth-error-page');
    await page.context().close();
  });

  it('a page on another origin cannot frame the sign-in page', async () => {
    const attacker = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end(`<!doctype html><html lang="en"><title>Attacker</title><iframe title="x" src="${authorizeUrl(t, clientId, pkce().challenge)}"></iframe></html>`);
    });
    const clientId = await register(t);
    await new Promise<void>((r) => attacker.listen(0, '127.0.0.1', r));
    try {
      const page = await newPage(browser);
      const blocked = new Promise<boolean>((resolve) => {
        page.on('console', (m) => m.text().includes('frame-ancestors') && resolve(true));
        setTimeout(() => resolve(false), 30_000);
      });
      await page.goto(`http://localhost:${(attacker.address() as AddressInfo).port}/`);
      expect(await blocked, 'chromium reports the frame-ancestors refusal').toBe(true);
      const frame = page.frames().find((f) => f !== page.mainFrame());
      expect(frame!.url(), "the frame shows the browser's error page, not ours").not.toContain('/auth/v1/oauth/');
      const form = await frame!
        .locator('input[name="password"]')
        .count()
        .catch(() => 0);
      expect(form, 'nothing of the sign-in page renders in the frame').toBe(0);
      await page.context().close();
    } finally {
      await new Promise((r) => attacker.close(r));
    }
  });
});
