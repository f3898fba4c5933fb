/**
 * The player page's HTML: a static shell (lang, title, a live region, the main landmark) that
 * links the bundled script and styles by content hash, and hands the script its configuration in
 * a JSON data block (never executed; `<` escaped so no value can close the element).
 */
import { htmlPage } from '../http/html-page.ts';
import type { PlayerAssets } from './build.ts';
import type { PlayerConfig } from './protocol.ts';

/** The page's CSP, framed by `ancestors` (a `frame-ancestors` source list). */
export const playerCsp = (ancestors: string) =>
  `default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' https: data:; connect-src 'self'; ` +
  `base-uri 'none'; form-action 'none'; frame-ancestors ${ancestors}`;

/**
 * The page for `config`; `assetBase` is where the assets are served from, relative to the page
 * (`''` under `/embed/v1`; `/embed/v1/` for a page served elsewhere, such as an LTI launch).
 */
export function playerPage(config: PlayerConfig, assets: PlayerAssets, assetBase = ''): string {
  const json = JSON.stringify(config).replace(/</g, '\\u003c');
  return htmlPage({
    title: 'Activity',
    head: [
      `<link rel="stylesheet" href="${assetBase}player.css?v=${assets.css.hash}">`,
      `<script type="application/json" id="svc-config">${json}</script>`,
      `<script src="${assetBase}player.js?v=${assets.player.hash}" defer></script>`,
    ].join('\n'),
    body: [
      '<div id="status" class="visually-hidden" role="status" aria-live="polite"></div>',
      '<main id="app" aria-busy="true"><p>Loading the activity…</p></main>',
    ].join('\n'),
  });
}
