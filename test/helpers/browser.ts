/**
 * A real browser for page tests: Debian's `chromium` driven by playwright-core (Playwright's own
 * browser downloads do not work on this machine). `.ci/run` installs the Debian package.
 *
 * `CHROMIUM_PATH` overrides where the binary is looked for. When no browser is found,
 * `launchBrowser()` throws an error that says so and how to install it — the page tests fail
 * loudly rather than skip.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { AxeBuilder } from '@axe-core/playwright';

const CANDIDATES = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'];

/** The chromium binary to drive, or throws naming the fix. */
export function chromiumPath(): string {
  const found = [process.env.CHROMIUM_PATH, ...CANDIDATES].find((p): p is string => !!p && existsSync(p));
  if (!found) {
    throw new Error("NO BROWSER: page tests need Debian's chromium (apt-get install -y chromium) or CHROMIUM_PATH set to a Chrome/Chromium binary");
  }
  return found;
}

/** Launches headless chromium; close it in afterAll. */
export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath(),
    args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu'],
  });
}

/**
 * A page in a fresh browser context (no shared storage; axe-core's AxeBuilder needs a page made
 * from a context, not `browser.newPage()`). Close the context with `page.context().close()`.
 */
export async function newPage(browser: Browser, options: Parameters<Browser['newContext']>[0] = {}): Promise<Page> {
  const context: BrowserContext = await browser.newContext(options);
  return context.newPage();
}

/**
 * Accessibility check with axe-core (WCAG 2 A/AA rules). Returns the violations as
 * `"rule-id: help (n nodes)"` strings so a failing assertion reads well.
 */
export async function axeViolations(page: Page): Promise<string[]> {
  const result = await new AxeBuilder({ page }).withTags(['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']).analyze();
  return result.violations.map((v) => `${v.id}: ${v.help} (${v.nodes.length} nodes)`);
}

/**
 * Saves a full-page screenshot under `test-results/screenshots/<name>.png` (git-ignored) so a
 * person can look at what the test saw.
 */
export async function screenshot(page: Page, name: string): Promise<string> {
  const dir = join(process.cwd(), 'test-results', 'screenshots');
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}
