/**
 * The player in a real browser (Debian's chromium): a partner page on http://127.0.0.1:<p> mounts
 * the player served by the app on http://localhost:<q> — two sites, so third-party rules apply.
 * Handshake, the activity, a document submitted and graded per criterion, the host's messages,
 * the frame's height, a pending grade finished by polling (after leaving and coming back),
 * keyboard-only use, no cookies, the session refreshed before it expires (sessions last 72 s
 * here, so the player refreshes after 12 s); axe-core and a screenshot in the ready, grading, passed and
 * failed states.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { Frame } from 'playwright-core';
import { countRows } from '../embed/fixtures.ts';
import {
  asLocalhost,
  clickSettled,
  expectAccessible,
  expectHeightFollows,
  messages,
  newPage,
  openPlayer,
  playerFrame,
  received,
  usePlayerWorld,
} from './fixtures.ts';

const world = usePlayerWorld({ embed: { judgeWaitMs: 500 }, judge: { timeoutMs: 30_000 }, config: { accessTokenTtl: 72 } });
const { w, browser, partner } = world;
const open = (sub: string) => openPlayer(world, sub);
beforeAll(async () => {
  await w.t.db.query('update activities set spec = $2 where id = $1', [
    w.doc.activityId,
    'Write a **one-page** design note for a URL shortener.\n\n- the problem it solves\n- two designs and their trade-offs',
  ]);
});

async function submitText(frame: Frame, text: string) {
  await frame.getByLabel('Pasted text').check();
  await frame.getByLabel('Your text (Markdown welcome)').fill(text);
  await clickSettled(frame, frame.getByRole('button', { name: /Submit/ }));
}

/** Submit `text`, wait for the verdict headed `heading`, and expect the verdict to say each of `says`. */
async function submitForVerdict(frame: Frame, text: string, heading: string, says: string[]) {
  await submitText(frame, text);
  await frame.getByRole('heading', { name: heading }).waitFor();
  const verdict = await frame.locator('#outcome').innerText();
  for (const line of says) expect(verdict).toContain(line);
}

describe('the player in a partner page', () => {
  it('hands off, shows the activity, grades a document per criterion and tells the host; no cookies', async () => {
    const page = await newPage(browser);
    const serviceResponses: { url: string; cookie: string | null }[] = [];
    page.on('response', (r) => {
      if (r.url().startsWith(asLocalhost(w.t.url))) serviceResponses.push({ url: r.url(), cookie: r.headers()['set-cookie'] ?? null });
    });
    await page.goto(partner.url({ activity: w.doc.activityId, sub: 'ada' }));
    const frame = await playerFrame(page);
    await frame.getByRole('heading', { level: 1, name: 'Write a design note' }).waitFor();
    expect(await page.locator('iframe').first().getAttribute('title')).toBe('Activity');
    const crumbs = frame.getByRole('navigation', { name: 'Breadcrumb' });
    expect(await crumbs.getByRole('listitem').allInnerTexts()).toEqual(['Program', 'Unit', 'Lesson']);
    expect(await frame.locator('.spec strong').innerText()).toBe('one-page');
    expect(await frame.locator('.rubric').innerText()).toMatch(/States the problem \(weight 1\)\s*Discusses trade-offs \(weight 2\)/);
    expect(await frame.getByText('at least 70 out of 100').count()).toBe(1);
    await expect.poll(() => frame.locator('#progress').innerText()).toBe('Progress in Program: 0 of 1 activities');
    await received(page, 'svc:ready');
    await received(page, 'svc:progress', { completed_count: 0, total_count: 1 });
    await expectHeightFollows(page, frame);
    const before = await page
      .locator('iframe')
      .first()
      .evaluate((f) => f.getBoundingClientRect().height);
    await expectAccessible(page, frame, 'ready');

    await submitForVerdict(frame, '# Design note\n\nThe problem: long URLs. Two designs: hashing vs counters; trade-offs discussed.', 'Passed', [
      'Score 100 out of 100 — the pass mark is 70. This submission passes.',
      'Met: States the problem',
      'Met: Discusses trade-offs',
    ]);
    expect(await frame.locator('#status').innerText()).toMatch(/^Passed: score 100 out of 100/);
    // progress is fetched after the verdict is shown (a side note), so it may lag the heading
    await expect.poll(() => frame.locator('#progress').innerText()).toBe('Progress in Program: 1 of 1 activities');
    await received(page, 'svc:submitted', { activity_id: w.doc.activityId });
    const v = await received(page, 'svc:verdict', { activity_id: w.doc.activityId });
    expect(v).toMatchObject({ v: 1, status: 'passed', score: 100, result_id: expect.any(String) });
    await received(page, 'svc:progress', { completed_count: 1, total_count: 1 });
    await expectHeightFollows(page, frame);
    expect(
      await page
        .locator('iframe')
        .first()
        .evaluate((f) => f.getBoundingClientRect().height),
    ).toBeGreaterThan(before);
    await expectAccessible(page, frame, 'passed');

    expect(await frame.evaluate(() => document.cookie)).toBe('');
    expect(await page.context().cookies()).toEqual([]);
    expect(serviceResponses.map((r) => r.url)).toEqual(
      expect.arrayContaining([expect.stringContaining('/embed/v1/play'), expect.stringContaining('/v1/embed/judge')]),
    );
    expect(serviceResponses.filter((r) => r.cookie !== null)).toEqual([]);
    await page.context().close();
  });

  it('shows a failed verdict per criterion in words', async () => {
    const { page, frame } = await open('grace');
    await submitForVerdict(frame, 'TODO: write the note', 'Not passed yet', [
      'Score 0 out of 100 — the pass mark is 70. This submission does not pass.',
      'Not met: States the problem',
      'Finish the parts marked TODO',
    ]);
    expect(await frame.locator('#history').innerText()).toContain('not passed, score 0');
    await received(page, 'svc:verdict', { status: 'failed', score: 0 });
    await expectAccessible(page, frame, 'failed');
    await page.context().close();
  });

  it('a pending grade keeps polling, also after the learner leaves and comes back', async () => {
    const release = w.model.hold(); // no verdict until the learner has left and come back
    try {
      const { page, frame } = await open('linus');
      await submitText(frame, 'A design note without gaps.');
      await frame.getByText('Grading…').waitFor();
      await expect.poll(() => frame.locator('#status').innerText()).toBe('Grading your submission…');
      await expectAccessible(page, frame, 'grading');
      await page.context().close();

      const back = await open('linus');
      await back.frame.getByText('Grading…').waitFor();
      release();
      await back.frame.getByRole('heading', { name: 'Passed' }).waitFor({ timeout: 30_000 });
      await received(back.page, 'svc:verdict', { status: 'passed' });
      expect(await back.frame.locator('#history').innerText()).toContain('passed, score 100');
      await back.page.context().close();
    } finally {
      release();
    }
  });

  it('works with the keyboard alone', async () => {
    const { page, frame } = await open('margaret');
    const focused = () =>
      frame.evaluate(() => (document.activeElement as HTMLElement | null)?.id || (document.activeElement as HTMLInputElement | null)?.value || '');
    // The player is a cross-site frame (its own renderer process): focus moving into it, and within
    // it, is not settled when the key press returns — so each step polls.
    await page.keyboard.press('Tab'); // into the frame: the first choice, "A link"
    await expect.poll(focused).toBe('url');
    await page.keyboard.press('ArrowRight'); // "Pasted text"
    await expect.poll(focused).toBe('text');
    await page.keyboard.press('Tab');
    await expect.poll(focused).toBe('f-text');
    await page.keyboard.type('A complete note: the problem, two designs, their trade-offs.');
    await page.keyboard.press('Tab');
    await expect.poll(focused).toBe('submit');
    const outline = await frame.locator('#submit').evaluate((b) => getComputedStyle(b).outlineStyle);
    expect(outline).toBe('solid'); // visible focus
    await page.keyboard.press('Enter');
    await frame.getByRole('heading', { name: 'Passed' }).waitFor();
    await expect.poll(focused).toBe('outcome-h'); // focus moves to the verdict
    expect((await messages(page)).filter((m) => m.type === 'svc:submitted')).toHaveLength(1);
    await page.context().close();
  });

  it('refreshes its session before it expires, without asking the host', async () => {
    const { page, frame } = await open('kept');
    const tokensOf = () => countRows(w.t, 'auth.refresh_tokens rt join auth.identities i on i.user_id = rt.user_id', `i.provider_id = 'kept'`);
    expect(await tokensOf()).toBe(1);
    await expect.poll(tokensOf, { timeout: 30_000 }).toBe(2);
    await submitText(frame, 'A complete note, after a refresh.');
    await frame.getByRole('heading', { name: 'Passed' }).waitFor();
    expect((await messages(page)).filter((m) => m.type === 'svc:auth-expiring' || m.type === 'svc:error')).toEqual([]);
    await page.context().close();
  });
});
