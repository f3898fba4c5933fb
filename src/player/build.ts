/**
 * The player's browser code, built once per process when the player plugin registers: esbuild
 * bundles `client/player.ts` and `client/loader.ts` (plain TypeScript, no framework) into one
 * minified IIFE each, in memory; `client/player.css` is served as written. Each asset gets a
 * content hash, so the page can link `player.js?v=<hash>` for long caching. Budget: the player
 * script ≤ 30 KB gzipped (checked in test/player/page.test.ts, measured in bench/player.ts).
 *
 * The compiled service (`npm run build` → dist/) carries them prebuilt in `dist/player/assets.json`
 * (written by scripts/build-assets.ts), so production start-up does not bundle.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

export interface Asset {
  body: string;
  /** sha256 of the body, 16 hex digits. */
  hash: string;
}

export interface PlayerAssets {
  player: Asset;
  loader: Asset;
  css: Asset;
}

const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));
const asset = (body: string): Asset => ({ body, hash: createHash('sha256').update(body).digest('hex').slice(0, 16) });

async function bundle(entry: string): Promise<string> {
  const out = await build({
    entryPoints: [here(entry)],
    bundle: true,
    minify: true,
    format: 'iife',
    platform: 'browser',
    target: ['es2020'],
    write: false,
    legalComments: 'none',
    logLevel: 'silent',
  });
  return out.outputFiles[0]!.text;
}

/** Bundle the assets from their sources (what `npm run build` writes to dist/player/assets.json). */
export async function bundleAssets(): Promise<PlayerAssets> {
  const [player, loader, css] = await Promise.all([bundle('./client/player.ts'), bundle('./client/loader.ts'), readFile(here('./client/player.css'), 'utf8')]);
  return { player: asset(player), loader: asset(loader), css: asset(css) };
}

/** The prebuilt assets next to this module (the compiled service), or undefined (the sources). */
async function prebuilt(): Promise<PlayerAssets | undefined> {
  try {
    return JSON.parse(await readFile(here('./assets.json'), 'utf8')) as PlayerAssets;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

let built: Promise<PlayerAssets> | undefined;

/** The assets: prebuilt when compiled, else bundled on the first call; later calls share the result. */
export function playerAssets(): Promise<PlayerAssets> {
  built ??= (async () => (await prebuilt()) ?? bundleAssets())();
  built.catch(() => (built = undefined));
  return built;
}
