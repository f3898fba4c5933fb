/**
 * Deep Linking and the instructor's preview in a real browser (Debian's chromium; issue #22): the
 * loopback LMS's course page on http://127.0.0.1:<p> frames the tool on http://localhost:<q>.
 *
 * 1. An instructor opens the picker from the course page (an LtiDeepLinkingRequest launch in the
 *    frame), searches and picks an activity with the keyboard, and the LMS's return URL receives
 *    the signed content item (verified there against the tool's JWKS, lms-deep-linking.ts).
 * 2. Learners launch the placed activity (one submits and passes, one only opens it); the
 *    instructor's launch of it shows the preview: the activity as learners see it, marked
 *    Preview, submitting off, and the learners' latest results.
 * axe-core on the picker and the preview; screenshots test-results/screenshots/lti-picker*.png,
 * lti-preview*.png.
 */
import { describe, expect, it } from 'vitest';
import type { Frame, Page } from 'playwright-core';
import { axeViolations, launchBrowser, screenshot } from '../helpers/browser.ts';
import { startApp, testJudge, useApp, useFixture, useServer } from '../helpers/harness.ts';
import { startTestModel } from '../helpers/test-model.ts';
import { seedActivity } from '../embed/fixtures.ts';
import { asLocalhost, newPage } from '../player/fixtures.ts';
import { submitDesignNote, toolFrame } from './frame.ts';
import { startTestLms, type TestLms } from './lms.ts';
import { installDeepLinking, type DeepLinkingLms } from './lms-deep-linking.ts';

const NAMES: Record<string, string> = { ada: 'Ada Byron', bob: 'Bob Babbage' };

let toolUrl = '';
const model = useServer(() => startTestModel());
const lms = useServer(async () => {
  const l = await startTestLms();
  const dl = installDeepLinking(l, () => toolUrl);
  const instructorOrPicker = l.tamper!;
  l.tamper = (c) => ({ ...instructorOrPicker(c), ...(typeof c.sub === 'string' && NAMES[c.sub] && { name: NAMES[c.sub] }) });
  return Object.assign(l, { dl });
}) as TestLms & { dl: DeepLinkingLms };
const t = useApp(async () => {
  const app = await startApp({ judge: testJudge(model.baseUrl, { timeoutMs: 30_000 }) });
  app.deps.config.baseUrl = asLocalhost(app.url); // the tool's own URLs on the other site
  toolUrl = asLocalhost(app.url);
  return app;
});
const browser = useServer(launchBrowser);
const world = useFixture(async () => {
  await t.op('tenant.create', { slug: 'acme' });
  await t.op('tenant.create', { slug: 'globex' });
  await t.op('lti.platforms.add', { tenant: 'acme', ...lms.registration });
  const note = await seedActivity(t, 'acme');
  const sketch = await seedActivity(t, 'acme', { title: 'Sketch the architecture', kind: 'diagram', spec: 'Draw the **architecture** of the shortener.' });
  await seedActivity(t, 'globex', { title: 'Globex secret' });
  // Names a picker would show (the seeds are all "Program › Unit › Lesson").
  const name = async (a: { programId: string; lessonId: string }, program: string, unit: string, lesson: string) => {
    await t.db.query('update programs set title = $2 where id = $1', [a.programId, program]);
    await t.db.query('update units set title = $2 where id = (select unit_id from lessons where id = $1)', [a.lessonId, unit]);
    await t.db.query('update lessons set title = $2 where id = $1', [a.lessonId, lesson]);
  };
  await name(note, 'Systems design', 'Unit 1: Requirements', 'Writing design notes');
  await name(sketch, 'Software architecture', 'Unit 2: Diagrams', 'Component diagrams');
  return { note, sketch };
});

const coursePage = (activity: string, sub: string) => `${lms.origin}/course?${new URLSearchParams({ activity, sub, tool: toolUrl })}`;

/** The tool's frame of the course page, once the launch has answered. */
async function expectAccessible(page: Page, name: string) {
  await screenshot(page, name);
  expect(await axeViolations(page), `axe, ${name}`).toEqual([]);
}

/** Whether the focused element of `frame` shows a focus outline. */
const focusShown = (frame: Frame) =>
  frame.evaluate(() => {
    const el = document.activeElement as HTMLElement;
    const style = getComputedStyle(el);
    return {
      tag: el.tagName.toLowerCase(),
      type: (el as HTMLInputElement).type,
      outline: style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) >= 2,
    };
  });

describe('an instructor places an activity from the LMS (Deep Linking)', () => {
  it('searches and picks with the keyboard in the picker, and the LMS receives the signed content item', async () => {
    const page = await newPage(browser);
    await page.goto(coursePage('deep-link', 'prof'));
    const frame = await toolFrame(page);
    await frame.getByRole('heading', { level: 1, name: 'Place an activity' }).waitFor({ timeout: 20_000 });
    expect(await frame.content()).not.toContain('Globex secret');
    await expectAccessible(page, 'lti-picker');

    // Keyboard only: Tab to the search box, type, Tab to the one match, pick it, Tab to the button, Enter.
    await frame.locator('body').focus();
    await page.keyboard.press('Tab');
    await expect.poll(() => focusShown(frame)).toEqual({ tag: 'input', type: 'search', outline: true });
    await page.keyboard.type('sketch');
    await frame.getByText('1 activity matches.').waitFor();
    expect(await frame.getByLabel('Write a design note').isVisible()).toBe(false);
    await page.keyboard.press('Tab');
    await expect.poll(() => focusShown(frame)).toEqual({ tag: 'input', type: 'radio', outline: true });
    await page.keyboard.press('Space');
    await expect.poll(() => frame.getByLabel('Sketch the architecture').isChecked()).toBe(true);
    await expectAccessible(page, 'lti-picker-search');
    await page.keyboard.press('Tab');
    await expect.poll(() => focusShown(frame)).toEqual({ tag: 'button', type: 'submit', outline: true });

    const at = lms.dl.received.length;
    await page.keyboard.press('Enter');
    await frame.getByRole('heading', { name: 'Activity placed' }).waitFor({ timeout: 20_000 });
    expect(await frame.getByRole('listitem').allTextContents()).toEqual(['Sketch the architecture']);
    const got = lms.dl.received[at]!;
    expect(got.ok).toBe(true);
    if (got.ok) {
      expect(got.payload['https://purl.imsglobal.org/spec/lti-dl/claim/content_items']).toEqual([
        expect.objectContaining({ type: 'ltiResourceLink', url: `${toolUrl}/lti/v1/launch`, custom: { activity_id: world.sketch.activityId } }),
      ]);
    }
    await page.context().close();
  }, 90_000);

  it('says what is missing when nothing is picked, without leaving the picker', async () => {
    const page = await newPage(browser);
    await page.goto(coursePage('deep-link', 'prof'));
    const frame = await toolFrame(page);
    await frame.getByRole('button', { name: 'Place the chosen activity' }).click();
    await frame.getByRole('alert').filter({ hasText: 'Choose an activity first.' }).waitFor();
    expect(await focusShown(frame)).toMatchObject({ tag: 'input', type: 'radio' });
    await expectAccessible(page, 'lti-picker-nothing-chosen');
    await page.context().close();
  }, 90_000);
});

describe("an instructor's launch of a placed activity", () => {
  it("shows the activity as learners see it, marked Preview, with the learners' latest results", async () => {
    // Ada launches the activity and passes it; Bob only opens it.
    const learner = await newPage(browser);
    await learner.goto(coursePage(world.note.activityId, 'ada'));
    let frame = await toolFrame(learner);
    await submitDesignNote(frame, '# Design note\n\nThe problem: long URLs. Two designs: hashing vs counters; trade-offs discussed.', 'Passed');
    await learner.goto(coursePage(world.note.activityId, 'bob'));
    frame = await toolFrame(learner);
    await frame.getByRole('heading', { level: 1, name: 'Write a design note' }).waitFor({ timeout: 20_000 });
    await learner.context().close();

    const counts = async () => [
      (await t.db.query('select 1 from activity_results')).length,
      (await t.db.query(`select 1 from auth.identities where provider like 'lti:%'`)).length,
    ];
    const before = await counts();
    const page = await newPage(browser);
    await page.goto(coursePage(world.note.activityId, 'prof'));
    frame = await toolFrame(page);
    await frame.getByRole('heading', { level: 1, name: 'Write a design note' }).waitFor({ timeout: 20_000 });
    await frame.getByText('you see this activity as learners see it').waitFor();
    expect(await frame.getByRole('button', { name: 'Submit for grading' }).isDisabled()).toBe(true);
    const rows = await frame.getByRole('table').getByRole('row').allInnerTexts();
    expect(rows.map((r) => r.split('\t').map((c) => c.trim()))).toEqual([
      ['Learner', 'Status', 'Score', 'Latest submission'],
      ['Ada Byron', 'Passed', expect.stringMatching(/^\d+ \/ 100$/), expect.stringMatching(/\d{4}/)],
      ['Bob Babbage', 'Not started', 'No score', 'Never'],
    ]);
    await expectAccessible(page, 'lti-preview');
    expect(await counts()).toEqual(before);
    await page.context().close();
  }, 120_000);
});
