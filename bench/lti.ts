/**
 * LTI launch benchmark (issue #22): from the LMS frame's login request to the activity shown in
 * the player, median of BENCH_LOADS (default 20) launches.
 *
 *   npm run bench:lti
 *   BENCH_LOADS=50 npm run bench:lti
 *
 * 1. The real app on a fresh PostgreSQL database (BENCH_PG, default postgres://postgres@127.0.0.1:5432),
 *    served as http://localhost:<q>; the loopback LMS of the tests (test/lti/lms.ts) on
 *    http://127.0.0.1:<p> (another site), registered for tenant `acme`, which has a `document` activity.
 * 2. Each launch: a fresh browser context (no cache, no storage, no cookie) opens the LMS's course
 *    page, whose iframe starts the third-party login. The time runs from the iframe's first request
 *    (`/lti/v1/login`, the top page's resource timing) to the launch frame's `svc-activity-shown`
 *    mark: the login and its 302, the LMS's authorization endpoint and its form post, the launch
 *    (state, cookie, the id_token against the LMS's keys — fetched once, then cached —, the
 *    learner, the session), the player page, its script and the activity read. Learners cycle
 *    through 5 subjects, so most launches find their user.
 * 3. Prints the figures and rewrites the "lti" section of bench/README.md, with the load average.
 */
import { launchBrowser } from '../test/helpers/browser.ts';
import { startApp } from '../test/helpers/harness.ts';
import { seedActivity } from '../test/embed/fixtures.ts';
import { asLocalhost, newPage } from '../test/player/fixtures.ts';
import { startTestLms } from '../test/lti/lms.ts';
import { BENCH_PG, lastRun, median, writeReadmeSection } from './common.ts';

process.env.TEST_DATABASE_URL ??= `${BENCH_PG}/postgres`;
const LOADS = Number(process.env.BENCH_LOADS ?? 20);

async function main() {
  const [t, lms, browser] = await Promise.all([startApp(), startTestLms(), launchBrowser()]);
  t.deps.config.baseUrl = asLocalhost(t.url);
  await t.op('tenant.create', { slug: 'acme' });
  await t.op('lti.platforms.add', { tenant: 'acme', ...lms.registration });
  const doc = await seedActivity(t, 'acme');
  const shown: number[] = [];
  try {
    for (let i = 0; i < LOADS; i++) {
      const page = await newPage(browser);
      await page.goto(`${lms.origin}/course?${new URLSearchParams({ activity: doc.activityId, sub: `bench-${i % 5}`, tool: asLocalhost(t.url) })}`);
      const frame = await (await page.waitForSelector('iframe[title="Activity"]', { state: 'attached' })).contentFrame();
      await frame!.waitForURL(/\/lti\/v1\/launch$/, { timeout: 20_000 });
      await frame!.waitForFunction(() => performance.getEntriesByName('svc-activity-shown').length > 0, undefined, { timeout: 20_000 });
      const shownAt = await frame!.evaluate(() => performance.timeOrigin + performance.getEntriesByName('svc-activity-shown')[0]!.startTime);
      const loginAt = await page.evaluate(() => {
        const entry = (performance.getEntriesByType('resource') as PerformanceResourceTiming[]).find((e) => e.name.includes('/lti/v1/login'));
        return performance.timeOrigin + (entry ? entry.startTime : performance.getEntriesByType('navigation')[0]!.duration);
      });
      shown.push(shownAt - loginAt);
      await page.context().close();
    }
  } finally {
    await browser.close();
    await lms.close();
    await t.close();
  }

  const f = (ms: number) => `${ms.toFixed(0)} ms`;
  const body =
    `${lastRun('shared by the server, PostgreSQL, chromium and the loopback LMS; each launch in a fresh browser context (cold cache).')}\n\n` +
    `| what | figure |\n|---|---|\n| login → activity shown in the player, median of ${LOADS} | **${f(median(shown))}** (min ${f(Math.min(...shown))}, max ${f(Math.max(...shown))}) |`;
  console.log(body);
  writeReadmeSection('lti', '## LTI launch — `npm run bench:lti`', body);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
