/**
 * Player benchmark (issue #13): the size of the player's script (minified, gzipped) and the time
 * from the iframe's load to the activity shown, median of BENCH_LOADS (default 20) loads.
 *
 *   npm run bench:player
 *   BENCH_LOADS=50 npm run bench:player
 *
 * 1. The real app on a fresh PostgreSQL database (BENCH_PG, default postgres://postgres@127.0.0.1:5432),
 *    the loopback test IdP and model, a tenant with a `document` activity, served as
 *    http://localhost:<q>; a partner page on http://127.0.0.1:<p> (another site) mounts the player.
 * 2. Each load: a fresh browser context (no cache, no storage) opens the partner page; the time is
 *    the player frame's `svc-activity-shown` performance mark, which is relative to the frame's
 *    navigation start: loading the page and its script, `svc:ready`, the host's `getToken()` and
 *    `svc:auth`, the session exchange, the activity read and its rendering. The handshake part
 *    (to the session's answer) is reported beside it.
 * 3. Prints the figures and rewrites the "player" section of bench/README.md, with the machine's
 *    load average.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { gzipSync } from 'node:zlib';
import { playerAssets } from '../src/player/build.ts';
import { launchBrowser } from '../test/helpers/browser.ts';
import { startEmbedWorld } from '../test/embed/fixtures.ts';
import { asLocalhost, newPage, playerFrame, startPartner } from '../test/player/fixtures.ts';
import { BENCH_PG, median } from './common.ts';

process.env.TEST_DATABASE_URL ??= `${BENCH_PG}/postgres`;
const LOADS = Number(process.env.BENCH_LOADS ?? 20);

async function main() {
  const load1 = loadavg()[0]!;
  const assets = await playerAssets();
  const size = {
    raw: Buffer.byteLength(assets.player.body),
    gzip: gzipSync(assets.player.body).length,
    loaderGzip: gzipSync(assets.loader.body).length,
    cssGzip: gzipSync(assets.css.body).length,
  };

  const [w, browser] = await Promise.all([startEmbedWorld(), launchBrowser()]);
  const partner = await startPartner(asLocalhost(w.t.url), w.idp);
  await w.t.op('embed.origins.add', { tenant: 'acme', origin: partner.origin });
  const shown: number[] = [];
  const handshake: number[] = [];
  try {
    for (let i = 0; i < LOADS; i++) {
      const page = await newPage(browser);
      await page.goto(partner.url({ activity: w.doc.activityId, sub: `bench-${i % 5}` }));
      const frame = await playerFrame(page);
      await frame.waitForFunction(() => performance.getEntriesByName('svc-activity-shown').length > 0);
      const t = await frame.evaluate(() => ({
        shown: performance.getEntriesByName('svc-activity-shown')[0]!.startTime,
        session: (performance.getEntriesByType('resource') as PerformanceResourceTiming[]).find((e) => e.name.endsWith('/v1/embed/session'))!.responseEnd,
      }));
      shown.push(t.shown);
      handshake.push(t.session);
      await page.context().close();
    }
  } finally {
    await browser.close();
    await partner.close();
    await w.close();
  }

  const when = new Date().toISOString().slice(0, 16);
  const f = (ms: number) => `${ms.toFixed(0)} ms`;
  const lines = [
    `| player script (minified) | ${(size.raw / 1024).toFixed(1)} KB, **${(size.gzip / 1024).toFixed(1)} KB gzipped** (budget 30 KB) |`,
    `| loader \`svc-embed.js\` / styles, gzipped | ${(size.loaderGzip / 1024).toFixed(1)} KB / ${(size.cssGzip / 1024).toFixed(1)} KB |`,
    `| iframe load → activity shown, median of ${LOADS} | **${f(median(shown))}** (min ${f(Math.min(...shown))}, max ${f(Math.max(...shown))}) |`,
    `| of which iframe load → session (handshake done), median | ${f(median(handshake))} |`,
  ];
  const section = `<!-- player:start -->\nLast run: ${when}Z, ${cpus().length} cores shared by the server, PostgreSQL, chromium and the test IdP; 1-minute load average before the run: ${load1.toFixed(2)} (a shared machine: figures are noisy). Each load in a fresh browser context (cold cache).\n\n| what | figure |\n|---|---|\n${lines.join('\n')}\n<!-- player:end -->`;
  console.log(section);
  const readmePath = new URL('./README.md', import.meta.url);
  const readme = readFileSync(readmePath, 'utf8');
  if (readme.includes('<!-- player:start -->')) writeFileSync(readmePath, readme.replace(/<!-- player:start -->[\s\S]*<!-- player:end -->/, section));
  else console.log('bench/README.md has no player section markers; not written');
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
