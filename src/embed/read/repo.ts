/**
 * Reading a learner's repository (`repo_url`) for the grader: a shallow clone over HTTP(S), or a
 * `.tar.gz` / `.tgz` / `.tar` archive, shown as a file tree, the README and the most relevant
 * files within the byte budget (repo-files.ts).
 *
 * The clone is `git clone --bare --depth 1 --single-branch --no-tags --filter=blob:limit=…`:
 * nothing is checked out (no filters, hooks or symlinks run or land on disk), and blobs over
 * `MAX_BLOB_BYTES` are not downloaded where the server supports partial clone (they are listed
 * as "over the size limit"; `rev-list --missing=print` finds them without fetching them).
 *
 * SSRF (DESIGN §5): the URL passes `refuseUrl`, its host is resolved and checked like the page
 * fetch, and git is pinned to the checked address (`http.curloptResolve`), so DNS cannot swap
 * in another one; redirects are refused (`http.followRedirects=false`); only the http(s)
 * transports are allowed (`GIT_ALLOW_PROTOCOL`), no credential helper, prompt, proxy, system or
 * user configuration is used. The clone is killed when its folder outgrows `maxBytes` or the
 * read outlives `timeoutMs`. An archive is fetched within `maxBytes` and unpacked as a stream
 * (`tar-stream`) within four times that (`untar`). Every failure throws `Unreadable` with a short reason.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import tarStream from 'tar-stream';
import { fetchResource, FetchRefused, refuseUrl, resolveAllowed, type FetchedResource } from '../../http/outbound.ts';
import { humanSize, MAX_FILE_BYTES, repoText, type RepoFile } from './repo-files.ts';
import { fetchBounds, Unreadable, type ReadOptions } from './types.ts';

/** Blobs over this size are not downloaded (partial clone) nor shown. */
export const MAX_BLOB_BYTES = 1024 * 1024;

/** Read `url` as described in the header: `{detail, text}` for the artifact section. */
export async function readRepo(url: string, o: ReadOptions, budget: number): Promise<{ detail: string; text: string }> {
  const parsed = new URL(url);
  const refusal = refuseUrl(parsed, o.allowPrivate, o.isBlocked);
  if (refusal) throw new Unreadable(`the repository URL ${refusal}`);
  if (/\.(tar\.gz|tgz|tar)$/i.test(parsed.pathname)) return readArchive(url, o, budget);
  return readGit(parsed, o, budget);
}

interface RunResult {
  code: number | null;
  stdout: Buffer;
  stderr: string;
}

/** The environment of every git command: nothing from ours, no prompts, no config files. */
function gitEnv(home: string, allowProtocols: string): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: home,
    LC_ALL: 'C',
    GIT_TERMINAL_PROMPT: '0',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_ALLOW_PROTOCOL: allowProtocols,
    GIT_LFS_SKIP_SMUDGE: '1',
    GIT_NO_REPLACE_OBJECTS: '1',
  };
}

/** Run git; resolves with its exit code and output. `stdin` is written then closed. */
function git(args: string[], env: NodeJS.ProcessEnv, options: { signal: AbortSignal; stdin?: string; cwd?: string; maxStdout?: number }): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn('git', args, { env, cwd: options.cwd, stdio: ['pipe', 'pipe', 'pipe'], signal: options.signal, killSignal: 'SIGKILL' });
    const out: Buffer[] = [];
    let outSize = 0;
    let err = '';
    child.stdout.on('data', (c: Buffer) => {
      outSize += c.length;
      if (outSize > (options.maxStdout ?? 64 * 1024 * 1024)) child.kill('SIGKILL');
      else out.push(c);
    });
    child.stderr.on('data', (c: Buffer) => {
      if (err.length < 8192) err += c.toString('utf8');
    });
    child.on('error', (e) => ((e as Error).name === 'AbortError' ? resolve({ code: null, stdout: Buffer.alloc(0), stderr: 'aborted' }) : reject(e)));
    child.on('close', (code) => resolve({ code, stdout: Buffer.concat(out), stderr: err }));
    child.stdin.on('error', () => {});
    child.stdin.end(options.stdin ?? '');
  });
}

/** Total size of the files under `dir`, in bytes. */
async function folderSize(dir: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true }).catch(() => [])) {
    if (entry.isFile())
      total += (await stat(join(entry.parentPath ?? (entry as unknown as { path: string }).path, entry.name)).catch(() => ({ size: 0 }))).size;
  }
  return total;
}

/** The first `fatal:` line of git's stderr, shortened: a reason safe to show. */
function gitReason(stderr: string): string {
  const line = stderr.split('\n').find((l) => l.startsWith('fatal:')) ?? stderr.split('\n').find(Boolean) ?? 'unknown error';
  const text = line.replace(/^fatal:\s*/, '');
  if (/not found|404/i.test(text)) return 'the repository was not found';
  if (/authentication|username|401|403/i.test(text)) return 'the repository is not public';
  if (/redirect/i.test(text)) return 'the repository URL redirects elsewhere (give the final URL)';
  if (/dumb http|shallow/i.test(text)) return 'the server does not speak the smart HTTP git protocol';
  return text.slice(0, 160);
}

/**
 * Read a git repository over HTTP(S): resolve and pin its host (`resolveGitHost`), clone it bare
 * into a temporary folder (`cloneBare`), list its tree (`listTree`) and show it with the blobs
 * read on demand (`blobReader`). The folder is removed afterwards. Throws `Unreadable`.
 */
async function readGit(url: URL, o: ReadOptions, budget: number): Promise<{ detail: string; text: string }> {
  const target = await resolveGitHost(url, o);
  const work = await mkdtemp(join(tmpdir(), 'svc-repo-'));
  const signal = o.signal ? AbortSignal.any([o.signal, AbortSignal.timeout(o.timeoutMs)]) : AbortSignal.timeout(o.timeoutMs);
  try {
    const dir = join(work, 'repo.git');
    await cloneBare(url, target, work, dir, o.maxBytes, signal);
    // From here on no command may reach the network: no transport is allowed.
    const env = gitEnv(work, 'none');
    const run: GitRun = (args, stdin) => git(['-c', 'protocol.allow=never', '-C', dir, ...args], env, { signal, stdin });
    const head = (await run(['rev-parse', 'HEAD'])).stdout.toString().trim();
    if (!/^[0-9a-f]{40,64}$/.test(head)) throw new Unreadable('the repository has no commits');
    const { entries, missing, files } = await listTree(run);
    const { text, shown } = await repoText(`git repository, commit ${head}`, files, budget, blobReader(run, entries, missing));
    return { detail: `git ${head.slice(0, 12)}, ${files.length} files, ${shown.length} shown`, text };
  } catch (err) {
    if (err instanceof Unreadable) throw err;
    if (signal.aborted) throw new Unreadable('the repository could not be read in time');
    throw new Unreadable('the repository could not be read');
  } finally {
    await rm(work, { recursive: true, force: true }).catch(() => {});
  }
}

/** A git command in the cloned repository, offline (see `readGit`). */
type GitRun = (args: string[], stdin?: string) => Promise<RunResult>;

/** An entry of `git ls-tree -r`: mode, type (`blob`, `commit` for a submodule), object id, path. */
interface TreeEntry {
  mode: string;
  type: string;
  oid: string;
  path: string;
}

/** The address git is pinned to: `url`'s host resolved and checked (outbound.ts); else `Unreadable`. */
async function resolveGitHost(url: URL, o: ReadOptions): Promise<{ address: string; family: number }> {
  try {
    return await resolveAllowed(url, { allowPrivate: o.allowPrivate, timeoutMs: o.timeoutMs, lookup: o.lookup, isBlocked: o.isBlocked });
  } catch (err) {
    throw new Unreadable(
      err instanceof FetchRefused ? `the repository ${err.message.replace(/^the URL /, 'URL ')}` : 'the repository host could not be resolved',
    );
  }
}

/**
 * `git clone --bare --depth 1 …` of `url` into `dir` (inside `work`), pinned to `target`, with no
 * redirects, credentials, proxy or other transport. Killed when `work` grows over `maxBytes`.
 * Throws `Unreadable`: over the size limit, not in time (`signal`), or git's reason.
 */
async function cloneBare(
  url: URL,
  target: { address: string; family: number },
  work: string,
  dir: string,
  maxBytes: number,
  signal: AbortSignal,
): Promise<void> {
  const kill = new AbortController();
  const both = AbortSignal.any([signal, kill.signal]);
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const pin = host === target.address ? [] : ['-c', `http.curloptResolve=${host}:${port}:${target.family === 6 ? `[${target.address}]` : target.address}`];
  const cloneArgs = [
    '-c',
    'http.followRedirects=false',
    ...pin,
    '-c',
    'credential.helper=',
    '-c',
    'core.askPass=',
    '-c',
    'http.proxy=',
    '-c',
    'protocol.allow=never',
    '-c',
    `protocol.${url.protocol.slice(0, -1)}.allow=always`,
    'clone',
    '--bare',
    '--depth=1',
    '--single-branch',
    '--no-tags',
    '--quiet',
    `--filter=blob:limit=${MAX_BLOB_BYTES}`,
    '--',
    url.toString(),
    dir,
  ];
  let tooBig = false;
  const watch = setInterval(() => {
    void folderSize(work).then((size) => {
      if (size > maxBytes && !tooBig) {
        tooBig = true;
        kill.abort();
      }
    });
  }, 150);
  let clone: RunResult;
  try {
    clone = await git(cloneArgs, gitEnv(work, url.protocol.slice(0, -1)), { signal: both, cwd: work });
  } finally {
    clearInterval(watch);
  }
  if (tooBig || (clone.code === 0 && (await folderSize(work)) > maxBytes)) {
    throw new Unreadable(`the repository is over the size limit (${humanSize(maxBytes)})`);
  }
  if (signal.aborted) throw new Unreadable('the repository could not be cloned in time');
  if (clone.code !== 0) throw new Unreadable(`the repository could not be cloned: ${gitReason(clone.stderr)}`);
}

/**
 * The tree at HEAD: its entries, the object ids the partial clone left out (`missing`), and the
 * files for repo-files.ts with sizes and why some are skipped (submodule, symbolic link, over
 * `MAX_BLOB_BYTES`). Throws `Unreadable` when the tree cannot be listed.
 */
async function listTree(run: GitRun): Promise<{ entries: TreeEntry[]; missing: Set<string>; files: RepoFile[] }> {
  const listing = await run(['ls-tree', '-r', '-z', '--full-tree', 'HEAD']);
  if (listing.code !== 0) throw new Unreadable('the repository could not be listed');
  const entries = listing.stdout
    .toString('utf8')
    .split('\0')
    .filter(Boolean)
    .map((line) => {
      const [meta, path] = [line.slice(0, line.indexOf('\t')), line.slice(line.indexOf('\t') + 1)];
      const [mode, type, oid] = meta.split(' ');
      return { mode: mode!, type: type!, oid: oid!, path };
    });
  const missing = new Set(
    (await run(['rev-list', '--objects', '--missing=print', 'HEAD'])).stdout
      .toString()
      .split('\n')
      .filter((l) => l.startsWith('?'))
      .map((l) => l.slice(1).trim()),
  );
  const present = entries.filter((e) => e.type === 'blob' && !missing.has(e.oid));
  const sizes = new Map<string, number>();
  const check = await run(['cat-file', '--batch-check=%(objectname) %(objectsize)'], `${present.map((e) => e.oid).join('\n')}\n`);
  for (const line of check.stdout.toString().split('\n')) {
    const [oid, size] = line.split(' ');
    if (oid && size) sizes.set(oid, Number(size));
  }
  const files: RepoFile[] = entries.map((e) => ({
    path: e.path,
    size: sizes.get(e.oid),
    skipped:
      e.type === 'commit'
        ? 'submodule'
        : e.mode === '120000'
          ? 'symbolic link'
          : missing.has(e.oid)
            ? `over the size limit (${humanSize(MAX_BLOB_BYTES)})`
            : undefined,
  }));
  return { entries, missing, files };
}

/** The reader repo-files.ts calls: the bytes of the given paths, in one `git cat-file --batch`. */
function blobReader(run: GitRun, entries: TreeEntry[], missing: Set<string>): (paths: string[]) => Promise<Map<string, Uint8Array>> {
  const oidOf = new Map(entries.map((e) => [e.path, e.oid]));
  return async (paths) => {
    const result = new Map<string, Uint8Array>();
    const wanted = paths.map((p) => oidOf.get(p)).filter((oid): oid is string => Boolean(oid) && !missing.has(oid!));
    if (!wanted.length) return result;
    const out = (await run(['cat-file', '--batch'], `${wanted.join('\n')}\n`)).stdout;
    const byOid = new Map<string, Uint8Array>();
    let at = 0;
    while (at < out.length) {
      const eol = out.indexOf(10, at);
      if (eol < 0) break;
      const [oid, , size] = out.subarray(at, eol).toString().split(' ');
      const n = Number(size);
      if (!Number.isFinite(n)) break;
      byOid.set(oid!, out.subarray(eol + 1, eol + 1 + n));
      at = eol + 1 + n + 1;
    }
    for (const p of paths) {
      const bytes = byOid.get(oidOf.get(p) ?? '');
      if (bytes) result.set(p, bytes);
    }
    return result;
  };
}

/** A file of an archive: its path, its size, and its first `MAX_FILE_BYTES + 1` bytes. */
interface ArchiveFile {
  path: string;
  size: number;
  head: Buffer;
}

/**
 * The regular files of a tar archive, gzipped or not (`tar-stream`: ustar, GNU long names, pax
 * headers), read as a stream with the caps enforced on the way: at most `maxUnpacked` bytes
 * unpacked in all, and only the first `MAX_FILE_BYTES + 1` bytes of each file kept. Throws
 * `Unreadable` when the archive is damaged or unpacks to more than the cap.
 */
export async function untar(archive: Buffer, maxUnpacked: number): Promise<ArchiveFile[]> {
  const files: ArchiveFile[] = [];
  let unpacked = 0;
  const extract = tarStream.extract();
  const source = Readable.from([archive]);
  const gzipped = archive[0] === 0x1f && archive[1] === 0x8b;
  const piping = pipeline(gzipped ? [source, createGunzip(), extract] : [source, extract]).catch(() => {});
  try {
    for await (const entry of extract) {
      const { name, size = 0, type } = entry.header;
      unpacked += size;
      if (unpacked > maxUnpacked) throw new Unreadable(TOO_BIG);
      const head: Buffer[] = [];
      let kept = 0;
      for await (const chunk of entry as AsyncIterable<Buffer>) {
        if (kept <= MAX_FILE_BYTES) head.push(chunk.subarray(0, MAX_FILE_BYTES + 1 - kept));
        kept += chunk.length;
      }
      if (type === 'file' || type === 'contiguous-file') files.push({ path: name, size, head: Buffer.concat(head) });
    }
  } catch (err) {
    extract.destroy();
    throw err instanceof Unreadable ? err : new Unreadable(TOO_BIG);
  }
  await piping;
  return files;
}

const TOO_BIG = 'the repository archive is damaged or unpacks to more than the size limit';

async function readArchive(url: string, o: ReadOptions, budget: number): Promise<{ detail: string; text: string }> {
  let archive: FetchedResource;
  try {
    archive = await fetchResource(url, {
      ...fetchBounds(o),
      accept: () => true,
      acceptHeader: 'application/gzip, application/x-tar, application/octet-stream;q=0.5',
    });
  } catch (err) {
    throw new Unreadable(
      err instanceof FetchRefused ? `the repository archive could not be fetched: ${err.message}` : 'the repository archive could not be fetched',
    );
  }
  if (archive.truncated) throw new Unreadable(`the repository archive is over the size limit (${humanSize(o.maxBytes)})`);
  let entries = (await untar(archive.body, o.maxBytes * 4)).filter((e) => !e.path.endsWith('/'));
  // GitHub-style archives put everything under one top folder: drop it.
  const top = entries[0]?.path.split('/')[0];
  if (top && entries.every((e) => e.path.startsWith(`${top}/`))) entries = entries.map((e) => ({ ...e, path: e.path.slice(top.length + 1) }));
  const byPath = new Map(entries.map((e) => [e.path, e.head]));
  const files: RepoFile[] = entries.map((e) => ({
    path: e.path,
    size: e.size,
    skipped: e.size > MAX_BLOB_BYTES ? `over the size limit (${humanSize(MAX_BLOB_BYTES)})` : undefined,
  }));
  const { text, shown } = await repoText(`archive ${url}`, files, budget, async (paths) => new Map(paths.map((p) => [p, byPath.get(p)!])));
  return { detail: `archive, ${files.length} files, ${shown.length} shown`, text };
}
