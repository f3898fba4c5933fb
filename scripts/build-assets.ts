/**
 * The non-TypeScript half of `npm run build` (after `tsc -p tsconfig.build.json` has compiled
 * src/ to dist/): copies the SQL migrations and writes the player's bundled browser assets to
 * dist/player/assets.json, so the compiled service neither reads src/ nor bundles at start-up.
 */
import { cp, rm, writeFile } from 'node:fs/promises';
import { bundleAssets } from '../src/player/build.ts';

const root = new URL('../', import.meta.url);
const dist = new URL('dist/', root);

await rm(new URL('migrations/', dist), { recursive: true, force: true });
await cp(new URL('src/migrations/', root), new URL('migrations/', dist), { recursive: true });
await writeFile(new URL('player/assets.json', dist), JSON.stringify(await bundleAssets()));
