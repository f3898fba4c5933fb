/**
 * What the player refuses, in a real browser, and bad input: each case fails if its protection is
 * removed.
 * - a partner origin not in the tenant's list cannot frame the player (CSP frame-ancestors: the
 *   browser refuses it) — the loader says so in the page and sends `svc:error`;
 * - a third frame (of the partner's own origin) posting a forged `svc:auth` is ignored (the player
 *   accepts messages from its parent window only);
 * - an activity of another tenant: a readable message and `svc:error` `not_found`;
 * - an expired IdP token: `svc:error` `unauthorized`, then a re-handshake (`svc:auth-expiring` →
 *   a new token) and the activity;
 * - bad input: no tenant, a token that is not a JWT, a URL that is not http(s), a file over the
 *   size limit — a readable message in the player and `svc:error` to the host.
 */
import { describe, expect, it } from 'vitest';
import { useFixture, useServer } from '../helpers/harness.ts';
import { countRows, seedActivity } from '../embed/fixtures.ts';
import {
  asLocalhost,
  clickSettled,
  expectAccessible,
  expectNotShown,
  messages,
  newPage,
  playerFrame,
  received,
  startPartner,
  usePlayerWorld,
} from './fixtures.ts';
import { MAX_CONTENT_BYTES } from '../../src/embed/judge.ts';

const { w, browser, partner } = usePlayerWorld();
/** A partner site `acme` does not list. */
const stranger = useServer(() => startPartner(asLocalhost(w.t.url), w.idp));
const foreign = useFixture(async () => {
  await w.t.op('tenant.create', { slug: 'globex' });
  return seedActivity(w.t, 'globex', { title: 'Globex only' });
});
const site = useFixture(() => seedActivity(w.t, 'acme', { kind: 'site', title: 'Publish a page' }));

describe('refusals', () => {
  it('a partner origin not in the list cannot frame the player', async () => {
    const page = await newPage(browser);
    await page.goto(stranger.url({ activity: w.doc.activityId, sub: 'stranger', timeout: 3000 }));
    const error = await received(page, 'svc:error', { code: 'player_unavailable' });
    expect(error.message).toMatch(/not be allowed to embed it/);
    expect(await page.getByRole('alert').innerText()).toMatch(/could not be loaded here/);
    // The browser refused the frame: the player never ran, never spoke, never asked for a token.
    expect(page.frames().some((f) => f.url().includes('/embed/v1/play'))).toBe(false);
    expect((await messages(page)).map((m) => m.type)).toEqual(['svc:error']);
    await page.context().close();
  });

  it('ignores a forged svc:auth from a third frame of the same page', async () => {
    const page = await newPage(browser);
    await page.goto(partner.url({ activity: w.doc.activityId, sub: 'honest', evil: true }));
    const frame = await playerFrame(page);
    await frame.getByRole('heading', { level: 1, name: 'Write a design note' }).waitFor();
    await page.waitForTimeout(1500); // the advert frame posts every 100 ms meanwhile
    expect(await countRows(w.t, 'auth.identities', `provider_id = 'mallory'`)).toBe(0);
    expect(await countRows(w.t, 'auth.identities', `provider_id = 'honest'`)).toBe(1);
    await page.context().close();
  });

  it('an activity of another tenant is not shown: a readable message and svc:error', async () => {
    await expectNotShown(browser, partner, foreign.activityId, 'curious', 'Globex only');
  });

  it('an expired IdP token gives svc:error, then a re-handshake shows the activity', async () => {
    const page = await newPage(browser);
    await page.goto(partner.url({ activity: w.doc.activityId, sub: 'late', mode: 'expired-first' }));
    const frame = await playerFrame(page);
    await frame.getByRole('heading', { level: 1, name: 'Write a design note' }).waitFor();
    const said = (await messages(page)).filter((m) => m.type !== 'svc:resize');
    expect(said.slice(0, 3).map((m) => m.type)).toEqual(['svc:ready', 'svc:error', 'svc:auth-expiring']);
    expect(said[1]).toMatchObject({ code: 'unauthorized' });
    expect(await frame.getByRole('alert').count()).toBe(0); // the error is gone once signed in
    await page.context().close();
  });
});

describe('bad input', () => {
  it('a token that is not a JWT: a readable message and svc:error, without a loop', async () => {
    const page = await newPage(browser);
    await page.goto(partner.url({ activity: w.doc.activityId, sub: 'garbled', mode: 'garbage' }));
    const frame = await playerFrame(page);
    await frame.getByRole('alert').waitFor();
    expect(await frame.getByRole('alert').innerText()).toMatch(/Your sign-in was not accepted/);
    await received(page, 'svc:error', { code: 'unauthorized' });
    // One retry with a fresh token (a second svc:auth-expiring), then no more: no loop.
    const asked = async () => (await messages(page)).filter((m) => m.type === 'svc:auth-expiring').length;
    await expect.poll(asked).toBe(2);
    await page.waitForTimeout(1000);
    expect(await asked()).toBe(2);
    await expectAccessible(page, frame, 'error');
    await page.context().close();
  });

  it('no tenant: a readable message and svc:error', async () => {
    const page = await newPage(browser);
    await page.goto(partner.url({ activity: w.doc.activityId, tenant: '' }));
    const frame = await playerFrame(page);
    expect(await frame.getByRole('alert').innerText()).toMatch(/not told which organisation/);
    await received(page, 'svc:error', { code: 'invalid_request' });
    await page.context().close();
  });

  it('a URL that is not http(s): a readable message and svc:error, nothing submitted', async () => {
    const page = await newPage(browser);
    await page.goto(partner.url({ activity: site.activityId, sub: 'ftp-fan' }));
    const frame = await playerFrame(page);
    await frame.getByLabel('Address of your page').fill('ftp://example.com/me');
    await clickSettled(frame, frame.getByRole('button', { name: 'Submit for grading' }));
    expect(await frame.getByRole('alert').innerText()).toMatch(/starts with http:\/\/ or https:\/\//);
    await received(page, 'svc:error', { code: 'invalid_request' });
    expect(await countRows(w.t, 'artifacts', 'activity_id = $1', [site.activityId])).toBe(0);
    await page.context().close();
  });

  it('a file over the size limit: a readable message and svc:error, nothing submitted', async () => {
    const page = await newPage(browser);
    await page.goto(partner.url({ activity: w.doc.activityId, sub: 'big-file' }));
    const frame = await playerFrame(page);
    await frame.getByLabel('A file').check();
    await frame
      .getByLabel('File (PDF, Markdown, HTML or text)')
      .setInputFiles({ name: 'note.md', mimeType: 'text/markdown', buffer: Buffer.alloc(MAX_CONTENT_BYTES, 'a') });
    await clickSettled(frame, frame.getByRole('button', { name: 'Submit for grading' }));
    expect(await frame.getByRole('alert').innerText()).toMatch(/The file is too large/);
    await received(page, 'svc:error', { code: 'invalid_request' });
    expect(
      await countRows(
        w.t,
        'artifacts',
        `user_id = (select user_id from auth.identities i join users u on u.auth_user_id = i.user_id where i.provider_id = 'big-file')`,
      ),
    ).toBe(0);
    await page.context().close();
  });
});
