/**
 * The player page's HTML: a static shell (lang, title, a live region, the main landmark) that
 * links the bundled script and styles by content hash, and hands the script its configuration in
 * a JSON data block (never executed; `<` escaped so no value can close the element).
 */
import { htmlPage } from '../http/html-page.ts';
import type { PlayerAssets } from './build.ts';
import type { PlayerConfig } from './protocol.ts';

/** The page for `config`. */
export function playerPage(config: PlayerConfig, assets: PlayerAssets): string {
  const json = JSON.stringify(config).replace(/</g, '\\u003c');
  return htmlPage({
    title: 'Activity',
    head: [
      `<link rel="stylesheet" href="player.css?v=${assets.css.hash}">`,
      `<script type="application/json" id="svc-config">${json}</script>`,
      `<script src="player.js?v=${assets.player.hash}" defer></script>`,
    ].join('\n'),
    body: [
      '<div id="status" class="visually-hidden" role="status" aria-live="polite"></div>',
      '<main id="app" aria-busy="true"><p>Loading the activity…</p></main>',
    ].join('\n'),
  });
}
