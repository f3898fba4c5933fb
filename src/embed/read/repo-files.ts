/**
 * Choosing and showing a repository's files within the grader's byte budget (used for git clones
 * and archives alike, src/embed/read/repo.ts).
 *
 * The text is: the file tree (every path with its size, at most `MAX_TREE_ENTRIES` lines), then
 * the README, then the most relevant files in rank order until the budget is spent. Rank:
 * source files first (by extension), entry points (`index`, `main`, `app`, `server`) and files
 * under `src/`, `lib/`, `app/` before others, shallow paths before deep ones. Never shown:
 * dependencies and build output (`node_modules/`, `vendor/`, `dist/`, `build/`, …), lock files,
 * minified files and source maps, binary files (by extension or a NUL byte), and files over the
 * per-file cap (listed in the tree with the reason).
 */

/** One file of a repository. `content` is undefined when it was not downloaded (over the size limit). */
export interface RepoFile {
  path: string;
  /** Size in bytes, when known. */
  size: number | undefined;
  /** Why the file is not shown, when known before reading (`over the size limit`, `symbolic link`). */
  skipped?: string;
}

export const MAX_TREE_ENTRIES = 400;
/** Largest part of one file shown, in bytes. */
export const MAX_FILE_BYTES = 48 * 1024;

const EXCLUDED_DIRS =
  /(^|\/)(node_modules|vendor|bower_components|dist|build|out|target|coverage|\.git|\.next|\.nuxt|\.cache|__pycache__|\.venv|venv|\.idea|\.vscode)\//;
const LOCK_FILES =
  /(^|\/)(package-lock\.json|npm-shrinkwrap\.json|yarn\.lock|pnpm-lock\.yaml|bun\.lockb|Cargo\.lock|poetry\.lock|Pipfile\.lock|Gemfile\.lock|composer\.lock|go\.sum)$/;
const MINIFIED = /\.(min\.(js|css)|map)$/i;
const BINARY_EXT =
  /\.(png|jpe?g|gif|webp|bmp|ico|icns|tiff?|psd|pdf|zip|gz|tgz|bz2|xz|7z|rar|jar|war|class|exe|dll|so|dylib|o|a|wasm|woff2?|ttf|otf|eot|mp3|mp4|m4a|wav|ogg|webm|mov|avi|sqlite|db|bin|pyc)$/i;
const SOURCE_EXT =
  /\.(js|mjs|cjs|jsx|ts|tsx|vue|svelte|py|rb|go|rs|java|kt|kts|scala|c|h|cc|cpp|hpp|cs|php|swift|m|html?|css|scss|sass|less|sql|sh|bash|ps1|lua|r|jl|ex|exs|erl|hs|ml|clj|dart|elm)$/i;
const TEXT_EXT =
  /\.(json|ya?ml|toml|ini|cfg|conf|md|markdown|txt|rst|adoc|xml|svg|csv|env\.example|gitignore|dockerignore)$|(^|\/)(Dockerfile|Makefile|Procfile|Gemfile|Rakefile|LICENSE)$/i;
const ENTRY_NAME = /(^|\/)(index|main|app|server|cli|__main__|lib|mod)\.[a-z]+$/i;
const README = /(^|\/)readme(\.[a-z]+)?$/i;

/** Why `path` is never shown, or undefined. */
export function excludedReason(path: string): string | undefined {
  if (EXCLUDED_DIRS.test(path)) return 'dependencies or build output';
  if (LOCK_FILES.test(path)) return 'lock file';
  if (MINIFIED.test(path)) return 'minified';
  if (BINARY_EXT.test(path)) return 'binary';
  return undefined;
}

/** Relevance of a path: higher is shown first. */
export function rank(path: string): number {
  let score = 0;
  if (SOURCE_EXT.test(path)) score += 4;
  else if (TEXT_EXT.test(path)) score += 1;
  if (ENTRY_NAME.test(path)) score += 2;
  if (/^(src|lib|app|public|static|pages|components)\//i.test(path)) score += 1;
  if (/(^|\/)(test|tests|__tests__|spec|e2e|fixtures?)\/|\.(test|spec)\.[a-z]+$/i.test(path)) score -= 1.5;
  if (/(^|\/)\.[^/]+$/.test(path)) score -= 1; // dotfiles
  score -= 0.5 * (path.split('/').length - 1);
  return score;
}

export const humanSize = (n: number | undefined) =>
  n === undefined ? '?' : n < 1024 ? `${n} B` : n < 1024 * 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / 1024 / 1024).toFixed(1)} MiB`;

/** True when `bytes` looks binary (a NUL byte in its first 8 KiB). */
export const isBinary = (bytes: Uint8Array) => bytes.subarray(0, 8192).includes(0);

/**
 * The order in which files are worth reading: README files first, then by `rank`, skipping
 * excluded and already-skipped files. Returns paths.
 */
export function readingOrder(files: RepoFile[]): string[] {
  const candidates = files.filter((f) => !f.skipped && !excludedReason(f.path));
  const readmes = candidates.filter((f) => README.test(f.path)).sort((a, b) => a.path.split('/').length - b.path.split('/').length);
  const others = candidates.filter((f) => !README.test(f.path)).sort((a, b) => rank(b.path) - rank(a.path) || a.path.localeCompare(b.path));
  return [...readmes.slice(0, 2), ...others].map((f) => f.path);
}

/**
 * The repository text within `budget` bytes. `read(paths)` returns the contents of the asked
 * files (at most `MAX_FILE_BYTES` + 1 bytes each is enough). Returns the text and the shown paths.
 */
export async function repoText(
  header: string,
  files: RepoFile[],
  budget: number,
  read: (paths: string[]) => Promise<Map<string, Uint8Array>>,
): Promise<{ text: string; shown: string[] }> {
  const byPath = new Map(files.map((f) => [f.path, f]));
  const tree = files
    .slice()
    .sort((a, b) => a.path.localeCompare(b.path))
    .slice(0, MAX_TREE_ENTRIES)
    .map((f) => {
      const why = f.skipped ?? excludedReason(f.path);
      return `  ${f.path} (${humanSize(f.size)}${why ? `, not shown: ${why}` : ''})`;
    });
  if (files.length > MAX_TREE_ENTRIES) tree.push(`  … and ${files.length - MAX_TREE_ENTRIES} more files`);
  let text = `${header}\nfile tree (${files.length} files):\n${tree.join('\n')}\n`;
  const shown: string[] = [];
  const order = readingOrder(files);
  // Read in small batches, in order, until the budget is spent.
  for (let i = 0; i < order.length && Buffer.byteLength(text) < budget - 200; i += 8) {
    const batch = order.slice(i, i + 8).filter((p) => (byPath.get(p)?.size ?? 0) <= 16 * 1024 * 1024);
    const contents = await read(batch);
    for (const path of batch) {
      const left = budget - Buffer.byteLength(text) - 200;
      if (left <= 0) break;
      const bytes = contents.get(path);
      if (!bytes || isBinary(bytes)) continue;
      const cap = Math.min(MAX_FILE_BYTES, left);
      const body = new TextDecoder().decode(bytes.subarray(0, cap));
      const cut = bytes.length > cap;
      text += `\n--- file ${path}${cut ? ` (first ${humanSize(cap)} of ${humanSize(bytes.length)})` : ''}\n${body}\n`;
      shown.push(path);
    }
  }
  if (shown.length < order.length) text += `\n(${order.length - shown.length} more files not shown: over the grader's input budget)\n`;
  return { text, shown };
}
