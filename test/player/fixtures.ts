/**
 * Fixtures of the player's browser tests: the real app (served as `http://localhost:<q>`), the test
 * IdP and model (startEmbedWorld), and partner pages on `http://127.0.0.1:<p>` — a small real HTTP
 * server — that mount the player with the loader, so the player runs in a third-party iframe of
 * another site. The partner page records every message the loader hands it in `window.__messages`.
 *
 * Partner routes: `/?activity=&sub=&mode=&tenant=&timeout=&evil=1` the page; `/token?sub=&mode=&n=`
 * the learner's IdP token (mode `valid`, `expired-first`: the first one expired, `garbage`: not a
 * JWT); `/evil` a third frame of the partner's origin that keeps posting a forged `svc:auth`
 * (a valid token of the subject `mallory`) to the player's frame.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { beforeAll, expect } from 'vitest';
import type { Browser, Frame, Locator, Page } from 'playwright-core';
import { axeViolations, launchBrowser, screenshot } from '../helpers/browser.ts';
import { startEmbedWorld, type EmbedWorld } from '../embed/fixtures.ts';
import type { TestIdp } from '../helpers/test-idp.ts';
import { useServer } from '../helpers/harness.ts';

export interface Partner {
  origin: string;
  /** The page URL for these options. */
  url(options: { activity: string; sub?: string; mode?: 'valid' | 'expired-first' | 'garbage'; tenant?: string; timeout?: number; evil?: boolean }): string;
  close(): Promise<void>;
}

/**
 * Start a partner site that mounts the player of `serviceUrl`, with tokens signed by `idp`, on
 * 127.0.0.1:`port` (default: a free port; `npm run demo` asks for a fixed one).
 */
export async function startPartner(serviceUrl: string, idp: TestIdp, port = 0): Promise<Partner> {
  const served = new Map<string, number>();
  const server: Server = createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://partner');
    const q = url.searchParams;
    if (url.pathname === '/token') {
      const sub = q.get('sub') ?? 'learner';
      const mode = q.get('mode') ?? 'valid';
      const n = served.get(sub) ?? 0;
      served.set(sub, n + 1);
      const token = mode === 'garbage' ? 'not-a-jwt' : await idp.sign({ sub }, mode === 'expired-first' && n === 0 ? { expiresIn: '-5m' } : {});
      res.writeHead(200, { 'content-type': 'text/plain' }).end(token);
      return;
    }
    if (url.pathname === '/evil') {
      const forged = JSON.stringify({ type: 'svc:auth', v: 1, idp_token: await idp.sign({ sub: 'mallory' }) });
      res
        .writeHead(200, { 'content-type': 'text/html' })
        .end(
          `<!doctype html><html lang="en"><title>Advert</title><p>Advert</p><script>setInterval(() => { try { parent.frames[0].postMessage(${forged}, '*'); } catch (e) {} }, 100);</script></html>`,
        );
      return;
    }
    if (url.pathname !== '/') {
      res.writeHead(404).end();
      return;
    }
    const options = {
      tenant: q.get('tenant') ?? 'acme',
      activity: q.get('activity') ?? '',
      ...(q.get('timeout') ? { readyTimeoutMs: Number(q.get('timeout')) } : {}),
    };
    const tokenQuery = JSON.stringify(`sub=${encodeURIComponent(q.get('sub') ?? 'learner')}&mode=${q.get('mode') ?? 'valid'}`);
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Partner course</title>
<style>body{font-family:sans-serif;margin:0;padding:12px 24px;background:#eef1f5} #player{background:#fff;border:1px solid #c8ced8;border-radius:8px;overflow:hidden;max-width:760px}</style></head>
<body><main><h1>Partner course: week 3</h1><div id="player"></div></main>
<script src="${serviceUrl}/embed/v1/svc-embed.js"></script>
<script>
window.__messages = [];
SvcEmbed.mount(document.getElementById('player'), Object.assign(${JSON.stringify(options)}, {
  getToken: () => fetch('/token?' + ${tokenQuery}).then((r) => r.text()),
  onMessage: (m) => window.__messages.push(m),
}));
</script>
${q.get('evil') ? '<iframe src="/evil" title="Advert" style="height:40px;border:0"></iframe>' : ''}
</body></html>`);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    origin,
    url: (o) => {
      const q = new URLSearchParams({ activity: o.activity, sub: o.sub ?? 'learner', mode: o.mode ?? 'valid' });
      if (o.tenant !== undefined) q.set('tenant', o.tenant);
      if (o.timeout) q.set('timeout', String(o.timeout));
      if (o.evil) q.set('evil', '1');
      return `${origin}/?${q}`;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** What a browser test of the player runs against. */
export interface PlayerWorld {
  /** The app, the test IdP and model, and tenant `acme`'s `document` activity. */
  w: EmbedWorld;
  browser: Browser;
  /** A partner site that `acme` lets frame its player. */
  partner: Partner;
}

/**
 * The `PlayerWorld` of a test file, instead of a `beforeAll`/`afterAll` pair: the world
 * (`startEmbedWorld(options)`), the browser and the partner site start before the file's tests,
 * `acme` then allows the partner's origin, and all close after the tests (`useServer`).
 */
export function usePlayerWorld(options: Parameters<typeof startEmbedWorld>[0] = {}): PlayerWorld {
  const w = useServer(() => startEmbedWorld(options));
  const browser = useServer(launchBrowser);
  const partner = useServer(() => startPartner(asLocalhost(w.t.url), w.idp));
  beforeAll(async () => {
    await w.t.op('embed.origins.add', { tenant: 'acme', origin: partner.origin });
  });
  return { w, browser, partner };
}

/**
 * Open `activity` for learner `sub` on `partner`'s page and expect the player not to show it (an
 * activity of another tenant, an archived one): the alert says it is not available here, the host
 * gets `svc:error` `not_found`, and nothing of `title` is on the page.
 */
export async function expectNotShown(browser: Browser, partner: Partner, activity: string, sub: string, title: string): Promise<void> {
  const page = await newPage(browser);
  await page.goto(partner.url({ activity, sub }));
  const frame = await playerFrame(page);
  await frame.getByRole('alert').waitFor();
  expect(await frame.getByRole('alert').innerText()).toMatch(/This activity is not available here/);
  expect(await frame.getByText(title).count()).toBe(0);
  await received(page, 'svc:error', { code: 'not_found' });
  await page.context().close();
}

/** The app's URL as `http://localhost:<port>` (another site than the partner's 127.0.0.1). */
export const asLocalhost = (url: string) => url.replace('://127.0.0.1:', '://localhost:');

/** A fresh page (own context: no shared storage) of `browser`. */
export async function newPage(browser: Browser): Promise<Page> {
  // Tall enough for the whole player: chromium paints a cross-site frame only within the viewport,
  // so a full-page screenshot of a taller page would cut it.
  const context = await browser.newContext({ viewport: { width: 900, height: 1600 } });
  return context.newPage();
}

/** The player's frame of `page` (waits for it to be attached and loaded from the service). */
export async function playerFrame(page: Page): Promise<Frame> {
  const frame = await (await page.waitForSelector('iframe[title="Activity"]', { state: 'attached', timeout: 15_000 })).contentFrame();
  await frame!.waitForURL(/\/embed\/v1\/play/, { waitUntil: 'domcontentloaded', timeout: 15_000 });
  return frame!;
}

/**
 * Open the partner page of `world` for learner `sub` on the world's `document` activity and wait
 * for the activity in the player: the page and the player's frame.
 */
export async function openPlayer({ w, browser, partner }: PlayerWorld, sub: string): Promise<{ page: Page; frame: Frame }> {
  const page = await newPage(browser);
  await page.goto(partner.url({ activity: w.doc.activityId, sub }));
  const frame = await playerFrame(page);
  await frame.getByRole('heading', { level: 1, name: 'Write a design note' }).waitFor();
  return { page, frame };
}

/** The messages the partner page received from the player, so far. */
export const messages = (page: Page) => page.evaluate(() => (window as unknown as { __messages: { type: string; [k: string]: unknown }[] }).__messages);

/** Wait until the partner page received a message of `type` (matching `fields`), and return it. */
export async function received(page: Page, type: string, fields: Record<string, unknown> = {}) {
  await expect
    .poll(async () => (await messages(page)).some((m) => m.type === type && Object.entries(fields).every(([k, v]) => m[k] === v)), { timeout: 20_000 })
    .toBe(true);
  return (await messages(page)).find((m) => m.type === type && Object.entries(fields).every(([k, v]) => m[k] === v))!;
}

/**
 * Click `target` until `then` shows. Once in CI (under load) a click in the cross-site player
 * frame, just resized by its host, had no effect, and never does when run alone: most likely the
 * browser routed it by the frame's previous hit-test regions. Only for clicks that do the same
 * thing when repeated; the poll still fails if `then` never shows.
 */
export async function clickUntil(target: Locator, then: Locator) {
  await expect
    .poll(
      async () => {
        if ((await then.count()) === 0) await target.click();
        return then.isVisible();
      },
      { timeout: 30_000, interval: 1000 },
    )
    .toBe(true);
}

/**
 * Click `target` in the player `frame` once its host has resized the frame to the content (a
 * click just after a resize was once lost: see `clickUntil`) — for clicks that must happen once,
 * such as a submission.
 */
export async function clickSettled(frame: Frame, target: Locator) {
  await expectHeightFollows(frame.page(), frame);
  await target.click();
}

/** The iframe's height follows the player's content. */
export async function expectHeightFollows(page: Page, frame: Frame) {
  await expect
    .poll(
      async () => {
        const [outer, inner] = await Promise.all([
          page.locator('iframe[title="Activity"]').evaluate((f) => (f as HTMLIFrameElement).getBoundingClientRect().height),
          frame.evaluate(() => document.body.getBoundingClientRect().height),
        ]);
        return Math.abs(outer - inner);
      },
      { timeout: 10_000 },
    )
    .toBeLessThanOrEqual(1);
}

/** Screenshot the partner page in `state` (test-results/screenshots/player-<state>.png); axe finds no violation. */
export async function expectAccessible(page: Page, frame: Frame, state: string) {
  await expectHeightFollows(page, frame);
  // The cross-site frame paints in its own process: let it catch up with its new height.
  await frame.evaluate(() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve))));
  await screenshot(page, `player-${state}`);
  expect(await axeViolations(page), `axe, ${state}`).toEqual([]);
}
