/**
 * An LTI launch in a real browser (Debian's chromium; issue #22): the loopback LMS's course page
 * on http://127.0.0.1:<p> frames the tool served on http://localhost:<q> (two sites). The frame
 * opens the tool's login, which sends it to the LMS's authorization endpoint, which form-posts the
 * id_token to the tool's launch: the player shows the activity signed in as the learner, the
 * learner submits and sees the verdict (the loopback model grades). Also in the frame: another
 * tenant's activity (a refusal page), a browser that drops the login's cookie (the page offering a
 * new window), and a login from an unknown LMS. axe-core on each page; screenshots in
 * test-results/screenshots/lti-*.png.
 */
import { describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { axeViolations, launchBrowser, screenshot } from '../helpers/browser.ts';
import { startApp, testJudge, useApp, useFixture, useServer } from '../helpers/harness.ts';
import { startTestModel } from '../helpers/test-model.ts';
import { seedActivity } from '../embed/fixtures.ts';
import { asLocalhost, newPage } from '../player/fixtures.ts';
import { submitDesignNote, toolFrame } from './frame.ts';
import { startTestLms } from './lms.ts';

const model = useServer(() => startTestModel());
const lms = useServer(startTestLms);
const t = useApp(() => startApp({ judge: testJudge(model.baseUrl, { timeoutMs: 30_000 }) }));
const browser = useServer(launchBrowser);
const world = useFixture(async () => {
  t.deps.config.baseUrl = asLocalhost(t.url); // the tool's own URLs (redirect_uri) on the other site
  await t.op('tenant.create', { slug: 'acme' });
  await t.op('tenant.create', { slug: 'globex' });
  await t.op('lti.platforms.add', { tenant: 'acme', ...lms.registration });
  return { acme: await seedActivity(t, 'acme'), globex: await seedActivity(t, 'globex', { title: 'Globex secret' }) };
});

const coursePage = (activity: string, sub: string, storage = false) =>
  `${lms.origin}/course?${new URLSearchParams({ activity, sub, tool: asLocalhost(t.url), ...(storage && { storage: '1' }) })}`;

/** As Safari with third-party cookies blocked: the login's Set-Cookie never lands. */
const dropLoginCookie = (page: Page) =>
  page.route('**/lti/v1/login?**', async (route) => {
    const response = await route.fetch({ maxRedirects: 0 });
    const headers = { ...response.headers() };
    delete headers['set-cookie'];
    for (const hop of ['connection', 'keep-alive', 'content-length']) delete headers[hop]; // hop-by-hop: not for a fulfilled response
    await route.fulfill({ status: response.status(), headers, body: await response.body() });
  });

/** The tool's frame of the course page, once the launch has answered. */
async function expectAccessible(page: Page, name: string) {
  await screenshot(page, `lti-${name}`);
  expect(await axeViolations(page), `axe, ${name}`).toEqual([]);
}

describe('a learner launches an activity from the LMS', () => {
  it('opens the player in the LMS frame, signed in, and the learner submits and sees the verdict', async () => {
    const page = await newPage(browser);
    await page.goto(coursePage(world.acme.activityId, 'ada'));
    const frame = await toolFrame(page);
    await submitDesignNote(frame, '# Design note\n\nThe problem: long URLs. Two designs: hashing vs counters; trade-offs discussed.', 'Passed');
    await expectAccessible(page, 'player-passed');
    const [result] = await t.db.query<{ status: string; provider: string }>(
      `select r.status, i.provider from activity_results r join users u on u.id = r.user_id join auth.identities i on i.user_id = u.auth_user_id where r.activity_id = $1`,
      [world.acme.activityId],
    );
    expect(result).toMatchObject({ status: 'completed', provider: expect.stringMatching(/^lti:/) });
    await page.context().close();
  }, 90_000);

  it("refuses another tenant's activity with a readable page in the frame", async () => {
    const page = await newPage(browser);
    await page.goto(coursePage(world.globex.activityId, 'mallory'));
    const frame = await toolFrame(page);
    await frame.getByRole('heading', { name: 'This activity is not available here' }).waitFor();
    expect(await frame.content()).not.toContain('Globex secret');
    await expectAccessible(page, 'refused-other-tenant');
    await page.context().close();
  }, 90_000);

  it('offers a new window when the browser drops the login cookie, and accepts nothing', async () => {
    const page = await newPage(browser);
    await dropLoginCookie(page);
    await page.goto(coursePage(world.acme.activityId, 'grace'));
    const frame = await toolFrame(page);
    await frame.getByRole('heading', { name: 'Open the activity in a new window' }).waitFor();
    await expectAccessible(page, 'new-window');
    expect(await t.db.query(`select 1 from auth.identities where provider like 'lti:%' and provider_id = 'grace'`)).toEqual([]);
    // The button opens the login again as a first-party page, where the cookie is kept: the player.
    const [popup] = await Promise.all([page.context().waitForEvent('page'), frame.getByRole('button', { name: 'Open in a new window' }).click()]);
    await page.unrouteAll();
    await popup.getByRole('heading', { level: 1, name: 'Write a design note' }).waitFor({ timeout: 20_000 });
    await page.context().close();
  }, 90_000);

  it('binds the launch through platform storage (lti_storage_target) when the cookie is blocked', async () => {
    const page = await newPage(browser);
    await page.goto(coursePage(world.acme.activityId, 'katherine', true));
    // The test LMS answers lti.put_data after 1 s (the login page waits up to 3 s): the browser drops the cookie meanwhile.
    const login = await (await page.waitForSelector('iframe[title="Activity"]', { state: 'attached' })).contentFrame();
    await login!.waitForURL(/\/lti\/v1\/login\?/, { waitUntil: 'domcontentloaded' });
    await page.context().clearCookies();
    const frame = await toolFrame(page);
    await frame.getByRole('heading', { level: 1, name: 'Write a design note' }).waitFor({ timeout: 20_000 });
    expect(await page.context().cookies()).toEqual([]);
    expect(await t.db.query(`select 1 from auth.identities where provider like 'lti:%' and provider_id = 'katherine'`)).toHaveLength(1);
    await page.context().close();
  }, 90_000);

  it("launches from a course page on the institution's own host once it is registered as a frame origin (Canvas Cloud)", async () => {
    // The course page on http://localhost:<lms port>: not the issuer's or auth URL's origin (127.0.0.1), as a Canvas
    // Cloud course on <school>.instructure.com is not canvas.instructure.com; it posts the login into the frame.
    const schoolHost = asLocalhost(lms.origin);
    const schoolCourse = (sub: string) =>
      `${schoolHost}/course?${new URLSearchParams({ activity: world.acme.activityId, sub, tool: asLocalhost(t.url), post: '1' })}`;
    const refused = await newPage(browser);
    const blocked = refused.waitForEvent('console', { predicate: (m) => /frame-ancestors/.test(m.text()), timeout: 30_000 });
    await refused.goto(schoolCourse('hedy'));
    expect((await blocked).text()).toContain(`frame-ancestors ${lms.origin}`);
    await refused.context().close();

    await t.op('lti.platforms.add', { tenant: 'acme', ...lms.registration, frame_origins: [schoolHost] });
    try {
      const page = await newPage(browser);
      await page.goto(schoolCourse('hedy'));
      await submitDesignNote(
        await toolFrame(page),
        '# Design note\n\nThe problem: long URLs. Two designs: hashing vs counters; trade-offs discussed.',
        'Passed',
      );
      await page.context().close();
    } finally {
      await t.db.query('update lti_platforms set frame_origins = $1', [[]]);
    }
  }, 120_000);

  it('shows a readable error page for a login from an unregistered LMS', async () => {
    const page = await newPage(browser);
    const res = await page.goto(`${asLocalhost(t.url)}/lti/v1/login?iss=https%3A%2F%2Funknown.example&login_hint=x&target_link_uri=x`);
    expect(res?.status()).toBe(400);
    await page.getByRole('heading', { name: 'This activity could not be opened' }).waitFor();
    await expectAccessible(page, 'unknown-platform');
    await page.context().close();
  }, 30_000);
});
