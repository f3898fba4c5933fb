/**
 * LTI Dynamic Registration in a real browser (Debian's chromium; issue #22): the loopback LMS's
 * admin page on http://127.0.0.1:<p> frames the tool's registration URL served on
 * http://localhost:<q> (two sites) with `openid_configuration` and `registration_token`; the tool
 * registers itself and its page posts `org.imsglobal.lti.close`, which the LMS page receives. The
 * same URL again shows the refusal page in the frame. Also: the LTI player, its handed session
 * ended, tells the learner to reopen the activity from the LMS. axe-core on each page;
 * screenshots test-results/screenshots/lti-register*.png, lti-session-ended.png.
 */
import { describe, expect, it } from 'vitest';
import type { Frame, Page } from 'playwright-core';
import { axeViolations, launchBrowser, screenshot } from '../helpers/browser.ts';
import { startApp, useApp, useFixture, useServer } from '../helpers/harness.ts';
import { seedActivity } from '../embed/fixtures.ts';
import { asLocalhost, newPage } from '../player/fixtures.ts';
import { CLIENT_ID, startTestLms } from './lms.ts';
import { addRegistration } from './lms-registration.ts';

const lms = useServer(startTestLms);
const t = useApp(() => startApp());
const browser = useServer(launchBrowser);
const world = useFixture(async () => {
  t.deps.config.baseUrl = asLocalhost(t.url);
  await t.op('tenant.create', { slug: 'acme' });
  return { reg: addRegistration(lms), acme: await seedActivity(t, 'acme') };
});

async function expectAccessible(page: Page, name: string) {
  await screenshot(page, name);
  expect(await axeViolations(page), `axe, ${name}`).toEqual([]);
}

const registrationFrame = async (page: Page): Promise<Frame> =>
  (await (await page.waitForSelector('iframe[title="Tool registration"]', { state: 'attached' })).contentFrame())!;

describe('dynamic registration in the browser', () => {
  it('the LMS admin page frames the registration URL; the tool registers and the LMS receives the close message', async () => {
    const minted = await t.op('lti.registration_url', { tenant: 'acme', base_url: asLocalhost(t.url) });
    world.reg.newToken();
    const page = await newPage(browser);
    // Hold the close message back a moment to look at the page: the LMS removes the frame on it.
    await page.addInitScript(() => {
      const real = window.addEventListener.bind(window);
      (window as unknown as { __closes: number }).__closes = 0;
      window.addEventListener = ((type: string, fn: EventListener, opts?: boolean | AddEventListenerOptions) =>
        real(
          type,
          type === 'message'
            ? (e: Event) => {
                if ((e as MessageEvent).data?.subject === 'org.imsglobal.lti.close') (window as unknown as { __closes: number }).__closes++;
                if ((window as unknown as { __hold?: boolean }).__hold) return;
                fn(e);
              }
            : fn,
          opts,
        )) as typeof window.addEventListener;
      (window as unknown as { __hold?: boolean }).__hold = true;
    });
    await page.goto(world.reg.adminPage(minted.url));
    const frame = await registrationFrame(page);
    await frame.getByRole('heading', { name: 'The tool is registered' }).waitFor({ timeout: 20_000 });
    await expect.poll(() => page.evaluate(() => (window as unknown as { __closes: number }).__closes)).toBe(1);
    await expectAccessible(page, 'lti-register-done');
    const [stored] = await t.op('lti.platforms.list', { tenant: 'acme' });
    expect(stored).toMatchObject({ issuer: lms.issuer, client_id: CLIENT_ID });
    // The LMS acts on the message: its dialog closes.
    await page.evaluate(() => ((window as unknown as { __hold?: boolean }).__hold = false));
    await frame.getByRole('button', { name: 'Close' }).click();
    await page.getByText('Closed by the tool').waitFor();
    await page.context().close();

    // The same URL again, in the LMS frame: a readable refusal.
    world.reg.newToken();
    const again = await newPage(browser);
    await again.goto(world.reg.adminPage(minted.url));
    const refused = await registrationFrame(again);
    await refused.getByRole('heading', { name: 'The tool could not be registered' }).waitFor({ timeout: 20_000 });
    expect(await refused.content()).toContain('Error code: code_used.');
    await expectAccessible(again, 'lti-register-used');
    await again.context().close();
  }, 90_000);

  it('a configuration on another host: the refusal page, nothing stored', async () => {
    await t.op('lti.platforms.remove', { tenant: 'acme', issuer: lms.issuer, client_id: CLIENT_ID }).catch(() => undefined);
    const minted = await t.op('lti.registration_url', { tenant: 'acme', base_url: asLocalhost(t.url) });
    world.reg.setMode('issuer-mismatch');
    world.reg.newToken();
    const page = await newPage(browser);
    await page.goto(world.reg.adminPage(minted.url));
    const frame = await registrationFrame(page);
    await frame.getByRole('heading', { name: 'The tool could not be registered' }).waitFor({ timeout: 20_000 });
    expect(await frame.content()).toContain('Error code: issuer_mismatch.');
    await expectAccessible(page, 'lti-register-issuer-mismatch');
    expect(await t.op('lti.platforms.list', { tenant: 'acme' })).toEqual([]);
    world.reg.setMode('ok');
    await page.context().close();
  }, 60_000);
});

describe('the LTI player when its session ends', () => {
  it('tells the learner to open the activity again from the LMS', async () => {
    await t.op('lti.platforms.add', { tenant: 'acme', ...lms.registration });
    const page = await newPage(browser);
    await page.clock.install();
    await page.goto(`${lms.origin}/course?${new URLSearchParams({ activity: world.acme.activityId, sub: 'sleepy', tool: asLocalhost(t.url) })}`);
    const frame = await (await page.waitForSelector('iframe[title="Activity"]', { state: 'attached' })).contentFrame();
    await frame!.waitForURL(/\/lti\/v1\/launch$/, { waitUntil: 'domcontentloaded', timeout: 20_000 });
    await frame!.getByRole('heading', { level: 1, name: 'Write a design note' }).waitFor({ timeout: 20_000 });
    // The session ends on the server (signed out, expired): the page's refresh is refused.
    await t.db.query(`delete from auth.sessions where user_id = (select user_id from auth.identities where provider like 'lti:%' and provider_id = 'sleepy')`);
    await page.clock.runFor(2 * 3600 * 1000);
    await frame!
      .getByRole('alert')
      .getByText(/Your session has ended\. To go on, open the activity again from your course in the LMS/)
      .waitFor({ timeout: 10_000 });
    await expectAccessible(page, 'lti-session-ended');
    await page.context().close();
  }, 60_000);
});
