/**
 * An activity retired while a learner has it open (issue #16, content lifecycle), in a real
 * browser: the submission is refused with 409 `archived`, the player says so in words (an alert,
 * `svc:error` `archived` to the host), the submit button is disabled, nothing is stored, and the page stays accessible (axe, and a
 * screenshot of the state). Opened again, the activity is no longer shown to the learner.
 */
import { describe, expect, it } from 'vitest';
import { useFixture } from '../helpers/harness.ts';
import { countRows, seedActivity } from '../embed/fixtures.ts';
import { clickSettled, expectAccessible, expectNotShown, newPage, playerFrame, received, usePlayerWorld } from './fixtures.ts';

const { w, browser, partner } = usePlayerWorld();
const retired = useFixture(() => seedActivity(w.t, 'acme', { title: 'Write a retired note' }));

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
    await clickSettled(frame, frame.getByRole('button', { name: /Submit/ }));
    await frame.getByRole('alert').waitFor();
    expect(await frame.getByRole('alert').innerText()).toMatch(/This activity has been retired and no longer accepts submissions/);
    await received(page, 'svc:error', { code: 'archived' });
    expect(await frame.getByRole('button', { name: /Submit/ }).isDisabled()).toBe(true); // no later try can succeed
    expect(await countRows(w.t, 'artifacts', 'activity_id = $1', [retired.activityId])).toBe(0);
    await expectAccessible(page, frame, 'archived');
    await page.context().close();

    await expectNotShown(browser, partner, retired.activityId, 'late-learner', 'Write a retired note');
  });
});
