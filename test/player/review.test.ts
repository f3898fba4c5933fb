/**
 * Reviews in the player (issue #21), in Chromium inside a partner page: a verdict offers "Ask for a
 * review" (a labelled text box with a live count of at most 1,000 characters, usable with the
 * keyboard alone, errors announced); a sent request shows "Review requested"; when an author
 * overrides the verdict (MCP `resolve_review`) or upholds it, the player shows "Reviewed by your
 * instructor" with the reason and tells the host `svc:verdict` again with `review`; the verdict says
 * how its grading was calibrated. axe-core finds nothing and a screenshot is saved in each new state.
 */
import { describe, expect, it } from 'vitest';
import type { Frame, Page } from 'playwright-core';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { connect, ok, signIn } from '../authoring/helpers.ts';
import { useServer } from '../helpers/harness.ts';
import { clickSettled, clickUntil, expectAccessible, messages, openPlayer, received, usePlayerWorld } from './fixtures.ts';

const world = usePlayerWorld({ embed: { judgeWaitMs: 2000 } });
const { w } = world;
const open = (sub: string) => openPlayer(world, sub);
const author = useServer<Client>(async () => {
  await w.t.op('user.create', { email: 'teacher@acme.test', password: 'correct horse battery' });
  await w.t.op('author.grant', { tenant: 'acme', email: 'teacher@acme.test' });
  return connect(w.t, await signIn(w.t, 'teacher@acme.test', 'correct horse battery'));
});

async function failOnce(frame: Frame) {
  await frame.getByLabel('Pasted text').check();
  await frame.getByLabel('Your text (Markdown welcome)').fill('TODO: the trade-offs are in my notebook');
  await clickSettled(frame, frame.getByRole('button', { name: /Submit/ }));
  await frame.getByRole('heading', { name: 'Not passed yet' }).waitFor();
}

/** The stored verification of the learner's latest artifact gets `calibration` (what the calibration room stores with a verdict). */
async function storeCalibration(resultId: string, calibration: Record<string, unknown>) {
  await w.t.db.query(
    `update artifacts set verification = verification || jsonb_build_object('calibration', $2::text::jsonb)
      where id = (select id from artifacts where result_id = $1 order by created_at desc limit 1)`,
    [resultId, JSON.stringify(calibration)],
  );
}

/** Ask for a review with the keyboard alone: the button, the text box, the submit. */
async function askWithKeyboard(page: Page, frame: Frame, message: string) {
  await frame.locator('#appeal-open').focus();
  await expect.poll(() => frame.evaluate(() => document.activeElement?.id)).toBe('appeal-open');
  await page.keyboard.press('Enter');
  await expect.poll(() => frame.evaluate(() => document.activeElement?.id)).toBe('f-appeal');
  await page.keyboard.type(message);
  await page.keyboard.press('Tab');
  await expect.poll(() => frame.evaluate(() => document.activeElement?.id)).toBe('appeal-submit'); // a cross-site frame: focus settles after the key press
  await page.keyboard.press('Enter');
}

describe('asking for a review in the player', () => {
  it('offers the form, announces errors, shows "Review requested", then the instructor\'s override with the reason; tells the host', async () => {
    const { page, frame } = await open('rev-ada');
    await failOnce(frame);
    const verdict = await received(page, 'svc:verdict', { status: 'failed' });
    const resultId = verdict.result_id as string;

    // offered, then opened with the keyboard
    const openButton = frame.getByRole('button', { name: 'Ask for a review' });
    expect(await openButton.getAttribute('aria-expanded')).toBe('false');
    await openButton.focus();
    await expect.poll(() => frame.evaluate(() => document.activeElement?.id)).toBe('appeal-open');
    await page.keyboard.press('Enter');
    await expect.poll(() => openButton.getAttribute('aria-expanded')).toBe('true'); // a cross-site frame: settled after the key press
    const box = frame.getByLabel('Why should your instructor review this verdict?');
    expect(await box.getAttribute('maxlength')).toBe('1000');
    expect(await frame.locator('#f-appeal-count').innerText()).toBe('0 of 1,000 characters');
    await expectAccessible(page, frame, 'review-offered');

    // an empty request: an error in words, announced (role alert), nothing sent
    await clickUntil(frame.getByRole('button', { name: 'Send the request' }), frame.getByRole('alert'));
    expect(await frame.getByRole('alert').innerText()).toContain('Write why you ask for a review first.');
    expect(await box.getAttribute('aria-invalid')).toBe('true');
    await expectAccessible(page, frame, 'review-error');

    // the live count, and the limit
    await box.fill('x'.repeat(1200));
    expect((await box.inputValue()).length).toBe(1000);
    await box.fill('');
    await box.pressSequentially('Section 3 compares ');
    expect(await frame.locator('#f-appeal-count').innerText()).toBe('19 of 1,000 characters');
    await page.keyboard.type('hashing and counters.');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await frame.getByRole('heading', { name: 'Review requested' }).waitFor();
    expect(await frame.locator('#review').innerText()).toContain('Section 3 compares hashing and counters.');
    await expect.poll(() => frame.locator('#status').innerText()).toBe('Review requested. Your instructor will look at your work.');
    expect(await frame.getByRole('alert').count()).toBe(0);
    await expectAccessible(page, frame, 'review-requested');

    // the instructor overrides it over MCP; the player shows it and tells the host again
    await storeCalibration(resultId, {
      report_id: '01a21800-0000-7000-8000-000000000001',
      cohen_kappa: 0.82,
      false_pass_rate: 0.05,
      created_at: '2026-11-26T10:00:00Z',
    });
    const queue = (await ok(author, 'list_reviews', { tenant: 'acme', status: 'open' })).reviews as { id: string; result_id: string }[];
    const review = queue.find((r) => r.result_id === resultId)!;
    await ok(author, 'resolve_review', {
      review_id: review.id,
      decision: 'override',
      passed: true,
      score: 85,
      reason: 'Section 3 does discuss the trade-offs.',
    });
    await frame.getByRole('heading', { name: 'Reviewed by your instructor' }).waitFor({ timeout: 20_000 });
    await frame.getByRole('heading', { name: 'Passed' }).waitFor();
    const box2 = await frame.locator('#outcome').innerText();
    expect(box2).toContain('Score 85 out of 100');
    expect(box2).toContain('Your instructor changed the verdict above.');
    expect(box2).toContain('their verdict and score replace the automatic grading shown below');
    expect(box2).toContain('Their reason: Section 3 does discuss the trade-offs.');
    expect(box2).toContain('Automatic grading: checked against work graded by instructors (agreement κ 0.82, false passes 5%).');
    expect(box2).not.toMatch(/teacher@acme/);
    const again = await received(page, 'svc:verdict', { review: 'overridden' });
    expect(again).toMatchObject({ v: 1, result_id: resultId, status: 'passed', score: 85 });
    await received(page, 'svc:progress', { completed_count: 1 });
    await expectAccessible(page, frame, 'reviewed');
    await page.context().close();

    // coming back: the outcome is shown on load, nothing offered again
    const back = await open('rev-ada');
    await back.frame.getByRole('heading', { name: 'Reviewed by your instructor' }).waitFor();
    expect(await back.frame.getByRole('button', { name: 'Ask for a review' }).count()).toBe(0);
    await back.page.context().close();
  });

  it('an upheld request: "the verdict stands" with the reason; review upheld to the host; uncalibrated grading said so', async () => {
    const { page, frame } = await open('rev-grace');
    await failOnce(frame);
    const resultId = (await received(page, 'svc:verdict', { status: 'failed' })).result_id as string;
    await askWithKeyboard(page, frame, 'Please look at the notebook link.');
    await frame.getByRole('heading', { name: 'Review requested' }).waitFor();
    await storeCalibration(resultId, { status: 'uncalibrated' });
    const queue = (await ok(author, 'list_reviews', { tenant: 'acme', status: 'open' })).reviews as { id: string; result_id: string }[];
    await ok(author, 'resolve_review', {
      review_id: queue.find((r) => r.result_id === resultId)!.id,
      decision: 'uphold',
      reason: 'The note itself must hold the trade-offs.',
    });
    await frame.getByRole('heading', { name: 'Reviewed by your instructor' }).waitFor({ timeout: 20_000 });
    const text = await frame.locator('#outcome').innerText();
    expect(text).toContain('Your instructor looked again: the verdict stands.');
    expect(text).toContain('Their reason: The note itself must hold the trade-offs.');
    expect(text).toContain('Automatic grading: not yet checked against work graded by instructors.');
    expect(await received(page, 'svc:verdict', { review: 'upheld' })).toMatchObject({ status: 'failed', score: 0 });
    expect((await messages(page)).filter((m) => m.type === 'svc:error')).toEqual([]);
    await expectAccessible(page, frame, 'review-upheld');
    await page.context().close();
  });
});
