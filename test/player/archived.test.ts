/**
 * An activity retired while a learner has it open (issue #16, content lifecycle), in a real
 * browser: the submission is refused with 409 `archived`, the player says so in words (an alert,
 * `svc:error` `archived` to the host), the submit button is disabled, nothing is stored, and the page stays accessible (axe, and a
 * screenshot of the state). Opened again, the activity is no longer shown to the learner.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser } from 'playwright-core';
import { launchBrowser } from '../helpers/browser.ts';
import { countRows, seedActivity, startEmbedWorld, type EmbedWorld, type SeededActivity } from '../embed/fixtures.ts';
import { asLocalhost, expectAccessible, newPage, playerFrame, received, startPartner, type Partner } from './fixtures.ts';

let w: EmbedWorld;
let partner: Partner;
let browser: Browser;
let retired: SeededActivity;

beforeAll(async () => {
  [w, browser] = await Promise.all([startEmbedWorld(), launchBrowser()]);
  partner = await startPartner(asLocalhost(w.t.url), w.idp);
  await w.t.op('embed.origins.add', { tenant: 'acme', origin: partner.origin });
  retired = await seedActivity(w.t, 'acme', { title: 'Write a retired note' });
});
afterAll(async () => {
  await browser?.close();
  await partner?.close();
  await w?.close();
});

describe('an activity archived while the learner has it open', () => {
  it('refuses the submission in words, tells the host, stores nothing; reopened, it is gone', async () => {
    const page = await newPage(browser);
    await page.goto(partner.url({ activity: retired.activityId, sub: 'late-learner' }));
    const frame = await playerFrame(page);
    await frame.getByRole('heading', { level: 1, name: 'Write a retired note' }).waitFor();

    // What archive_activity stores (src/authoring; the trigger of migration 0110 derives `archived`).
    await w.t.db.query('update activities set archived_at = now() where id = $1', [retired.activityId]);

    await frame.getByLabel('Pasted text').check();
    await frame.getByLabel('Your text (Markdown welcome)').fill('A note written just too late.');
    await frame.getByRole('button', { name: /Submit/ }).click();
    await frame.getByRole('alert').waitFor();
    expect(await frame.getByRole('alert').innerText()).toMatch(/This activity has been retired and no longer accepts submissions/);
    await received(page, 'svc:error', { code: 'archived' });
    expect(await frame.getByRole('button', { name: /Submit/ }).isDisabled()).toBe(true); // no later try can succeed
    expect(await countRows(w.t, 'artifacts', 'activity_id = $1', [retired.activityId])).toBe(0);
    await expectAccessible(page, frame, 'archived');
    await page.context().close();

    const again = await newPage(browser);
    await again.goto(partner.url({ activity: retired.activityId, sub: 'late-learner' }));
    const reopened = await playerFrame(again);
    await reopened.getByRole('alert').waitFor();
    expect(await reopened.getByRole('alert').innerText()).toMatch(/This activity is not available here/);
    expect(await reopened.getByText('Write a retired note').count()).toBe(0);
    await received(again, 'svc:error', { code: 'not_found' });
    await again.context().close();
  });
});
