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
 * 3. Grades back (AGS): BENCH_SCORES (default 20) learners each launch (over HTTP, the claim
 *    carrying a line item of the LMS's services, test/lti/lms-services.ts) and submit a passing note
 *    to `/v1/embed/judge` (the loopback model grades at once). The time runs from the judge's answer
 *    with the verdict (committed) to the LMS receiving the FullyGraded score: the outbox trigger, the
 *    NOTIFY, the delivery job on the queue, the service token (cached after the first), the POST.
 * 4. Prints the figures and rewrites the "lti" section of bench/README.md, with the load average.
 */
import { launchBrowser } from '../test/helpers/browser.ts';
import { startApp } from '../test/helpers/harness.ts';
import { seedActivity } from '../test/embed/fixtures.ts';
import { asLocalhost, newPage } from '../test/player/fixtures.ts';
import { startTestLms, type TestLms } from '../test/lti/lms.ts';
import { addLmsServices, type LmsServices } from '../test/lti/lms-services.ts';
import { testJudge, type TestApp } from '../test/helpers/harness.ts';
import { startTestModel } from '../test/helpers/test-model.ts';
import { BENCH_PG, lastRun, median, writeReadmeSection } from './common.ts';

process.env.TEST_DATABASE_URL ??= `${BENCH_PG}/postgres`;
const LOADS = Number(process.env.BENCH_LOADS ?? 20);
const SCORES = Number(process.env.BENCH_SCORES ?? 20);
const PASS = '# Design note\n\nThe problem: long URLs. Two designs: hashing vs counters; trade-offs discussed.';

/** Launch `activity` as `sub` over HTTP with the AGS claim for `lineitem`; the learner's session token. */
async function httpLaunch(t: TestApp, lms: TestLms, services: LmsServices, activity: string, sub: string, lineitem: string): Promise<string> {
  const res = await fetch(
    `${t.url}/lti/v1/login?${new URLSearchParams({ iss: lms.issuer, login_hint: sub, target_link_uri: `${t.url}/lti/v1/launch`, client_id: lms.clientId })}`,
    { redirect: 'manual' },
  );
  const auth = new URL(res.headers.get('location')!);
  const claims = {
    ...lms.launchClaims({ activity, sub, nonce: auth.searchParams.get('nonce')! }),
    'https://purl.imsglobal.org/spec/lti-ags/claim/endpoint': services.agsClaim({ lineitem }),
  };
  const page = await fetch(`${t.url}/lti/v1/launch`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: res.headers.get('set-cookie')!.split(';')[0]! },
    body: new URLSearchParams({ id_token: await lms.idToken(claims), state: auth.searchParams.get('state')! }),
  });
  const html = await page.text();
  return JSON.parse(/<script type="application\/json" id="svc-config">([\s\S]*?)<\/script>/.exec(html)![1]!.replace(/\\u003c/g, '<')).session.access_token;
}

/** Verdict → FullyGraded score at the LMS, in ms, for `n` learners (header, step 3). */
async function scoreLatencies(t: TestApp, lms: TestLms, activity: string, n: number): Promise<number[]> {
  const services = addLmsServices(lms, () => t.url);
  const item = services.addLineItem({ scoreMaximum: 100, label: 'Design note', resourceId: activity });
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const sub = `score-${i}`;
    const token = await httpLaunch(t, lms, services, activity, sub, item.id);
    const res = await fetch(`${t.url}/v1/embed/judge`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ tenant: 'acme', activity_id: activity, artifact: { kind: 'document', content: PASS } }),
    });
    const verdict = (await res.json()) as { status: string };
    const verdictAt = Date.now();
    if (verdict.status !== 'passed') throw new Error(`bench: expected a pass, got ${verdict.status}`);
    for (const deadline = Date.now() + 30_000; ; ) {
      const got = services.scores.find((s) => s.score.userId === sub && s.score.gradingProgress === 'FullyGraded');
      if (got) {
        out.push(got.at - verdictAt);
        break;
      }
      if (Date.now() > deadline) throw new Error(`bench: no score for ${sub} within 30 s`);
      await new Promise((r) => setTimeout(r, 5));
    }
  }
  return out;
}

async function main() {
  const model = await startTestModel();
  const [t, lms, browser] = await Promise.all([startApp({ judge: testJudge(model.baseUrl, { timeoutMs: 30_000 }) }), startTestLms(), launchBrowser()]);
  t.deps.config.baseUrl = asLocalhost(t.url);
  await t.op('tenant.create', { slug: 'acme' });
  await t.op('lti.platforms.add', { tenant: 'acme', ...lms.registration });
  const doc = await seedActivity(t, 'acme');
  const shown: number[] = [];
  let scored: number[] = [];
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
    scored = await scoreLatencies(t, lms, doc.activityId, SCORES);
  } finally {
    await model.close();
    await browser.close();
    await lms.close();
    await t.close();
  }

  const f = (ms: number) => `${ms.toFixed(0)} ms`;
  const body =
    `${lastRun('shared by the server, PostgreSQL, chromium and the loopback LMS; each launch in a fresh browser context (cold cache).')}\n\n` +
    `| what | figure |\n|---|---|\n| login → activity shown in the player, median of ${LOADS} | **${f(median(shown))}** (min ${f(Math.min(...shown))}, max ${f(Math.max(...shown))}) |\n` +
    `| verdict → score at the LMS (FullyGraded received), median of ${SCORES} | **${f(median(scored))}** (min ${f(Math.min(...scored))}, max ${f(Math.max(...scored))}) |`;
  console.log(body);
  writeReadmeSection('lti', '## LTI launch — `npm run bench:lti`', body);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
