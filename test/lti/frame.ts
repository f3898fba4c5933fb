/** The tool inside the test LMS's course page, for the LTI browser tests. */
import type { Frame, Page } from 'playwright-core';

/**
 * The LMS page's activity iframe, once the launch has answered in it (the player or a refusal).
 * Up to 60 s: login → LMS → launch is three navigations, slow on a loaded CI machine (a 20 s wait
 * timed out there once at load average 12).
 */
export async function toolFrame(page: Page): Promise<Frame> {
  const frame = await (await page.waitForSelector('iframe[title="Activity"]', { state: 'attached' })).contentFrame();
  await frame!.waitForURL(/\/lti\/v1\/launch$/, { waitUntil: 'domcontentloaded', timeout: 60_000 });
  return frame!;
}

/** In the player of the "Write a design note" activity in `frame`: paste `text`, submit, wait for the verdict heading `verdict`. */
export async function submitDesignNote(frame: Frame, text: string, verdict: RegExp | string): Promise<void> {
  await frame.getByRole('heading', { level: 1, name: 'Write a design note' }).waitFor({ timeout: 20_000 });
  await frame.getByLabel('Pasted text').check();
  await frame.getByLabel('Your text (Markdown welcome)').fill(text);
  await frame.getByRole('button', { name: /Submit/ }).click();
  await frame.getByRole('heading', { name: verdict }).waitFor({ timeout: 30_000 });
}
