/**
 * The player's public entry point: what another surface (the LTI tool, src/lti/) may use to serve
 * the same player page as `/embed/v1/play` — its HTML (`playerPage`, with a handed session in
 * `PlayerConfig.session`), its CSP (`playerCsp`) and its bundled assets (`playerAssets`, served
 * under `/embed/v1/`). The plugin itself is `routes.ts`, mounted by the app.
 */
export { playerAssets, type PlayerAssets } from './build.ts';
export { playerCsp, playerPage } from './page.ts';
export type { PlayerConfig, PlayerPreview, PreviewLearner } from './protocol.ts';
