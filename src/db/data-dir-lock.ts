/**
 * One process at a time may open an embedded PGlite folder (two would corrupt it).
 *
 * `lockDataDir` takes a proper-lockfile lock on the folder (`.lock`, a directory made atomically
 * and touched every 2 s while held; stale 10 s after its last touch) and, for a server, writes
 * `server.json` `{url, pid}` so the `svc` CLI can send its commands to the running server instead
 * of opening the folder itself. Throws `DataDirBusyError` when another process holds the folder.
 *
 * A holder that was killed (kill -9, OOM) cannot remove its lock, and proper-lockfile alone
 * refuses the folder until the lock is stale — ~10 s, in which a supervisor's quick restarts all
 * fail (issue #11). So the holder also writes `.lock-holder` `{pid, host, boot, pidns}`; a
 * newcomer that finds the folder locked takes the lock over at once when that record proves the
 * holder gone: same host, same boot (`/proc/sys/kernel/random/boot_id`) and same PID namespace
 * (`/proc/self/ns/pid`) — so the PID means the same process — and no process with that PID
 * (`kill(pid, 0)` → ESRCH). Anything less certain (no record, another host or container, a PID
 * in use again) leaves the lock to proper-lockfile's staleness: a live holder is never displaced.
 * Taking and taking over the lock, and writing the record, happen under a short gate lock on the
 * record (`.lock-holder.lock`), so two newcomers cannot both take over one dead holder's lock.
 */
import lockfile from 'proper-lockfile';
import { ensureDataDir } from '../config/data-dir.ts';
import { readFileSync, readlinkSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';

export class DataDirBusyError extends Error {}

export interface ServerInfo {
  url: string;
  pid: number;
}

/** Who holds a folder's lock: a process, named so that another process can tell whether it still runs. */
interface Holder {
  pid: number;
  host: string;
  boot: string | null;
  pidns: string | null;
}

const STALE_MS = 10_000;
/** The gate is held for milliseconds; waiting this long covers a gate left by a process killed inside it (stale after 10 s). */
const GATE_RETRIES = { retries: 25, factor: 1, minTimeout: 500 };

const held = new Set<string>();

const lockPath = (dataDir: string) => join(dataDir, '.lock');
const holderPath = (dataDir: string) => join(dataDir, '.lock-holder');

/** Text of a /proc file or link, or null where there is none (not Linux). */
function procText(read: () => string): string | null {
  try {
    return read().trim();
  } catch {
    return null;
  }
}

function self(): Holder {
  return {
    pid: process.pid,
    host: hostname(),
    boot: procText(() => readFileSync('/proc/sys/kernel/random/boot_id', 'utf8')),
    pidns: procText(() => readlinkSync('/proc/self/ns/pid')),
  };
}

function readHolder(dataDir: string): Holder | undefined {
  try {
    return JSON.parse(readFileSync(holderPath(dataDir), 'utf8')) as Holder;
  } catch {
    return undefined;
  }
}

/** True only when `holder` certainly names a process that no longer runs (see the header). */
function holderIsGone(dataDir: string, holder: Holder | undefined): boolean {
  const me = self();
  if (!holder || holder.host !== me.host || holder.boot !== me.boot || holder.pidns !== me.pidns) return false;
  if (holder.pid === me.pid) return !held.has(dataDir);
  try {
    process.kill(holder.pid, 0);
    return false;
  } catch (err) {
    return (err as { code?: string }).code === 'ESRCH';
  }
}

const busy = (dataDir: string) => new DataDirBusyError(`the data folder ${dataDir} is in use by another process`);
const isLocked = (err: unknown) => (err as { code?: string }).code === 'ELOCKED';

export async function lockDataDir(dataDir: string): Promise<() => Promise<void>> {
  ensureDataDir(dataDir);
  const options = { lockfilePath: lockPath(dataDir), stale: STALE_MS, update: 2_000 };
  const openGate = await lockfile.lock(holderPath(dataDir), { realpath: false, stale: STALE_MS, retries: GATE_RETRIES }).catch((err) => {
    throw isLocked(err) ? busy(dataDir) : err;
  });
  let release: () => Promise<void>;
  try {
    release = await lockfile.lock(dataDir, options).catch(async (err) => {
      if (!isLocked(err) || !holderIsGone(dataDir, readHolder(dataDir))) throw isLocked(err) ? busy(dataDir) : err;
      rmSync(lockPath(dataDir), { recursive: true, force: true });
      return lockfile.lock(dataDir, options);
    });
    writeFileSync(holderPath(dataDir), `${JSON.stringify(self())}\n`, { mode: 0o600 });
    held.add(dataDir);
  } finally {
    await openGate();
  }
  return async () => {
    rmSync(join(dataDir, 'server.json'), { force: true });
    rmSync(holderPath(dataDir), { force: true });
    held.delete(dataDir);
    await release();
  };
}

/** Publish the server's address; written aside and renamed, so a reader never sees half a file. */
export function writeServerInfo(dataDir: string, info: ServerInfo): void {
  const file = join(dataDir, 'server.json');
  writeFileSync(`${file}.tmp`, `${JSON.stringify(info)}\n`, { mode: 0o600 });
  renameSync(`${file}.tmp`, file);
}

/** The running server's address if one holds the folder, else undefined. */
export function readServerInfo(dataDir: string): ServerInfo | undefined {
  try {
    return JSON.parse(readFileSync(join(dataDir, 'server.json'), 'utf8')) as ServerInfo;
  } catch {
    return undefined;
  }
}

/** True while a live process holds the folder (a dead holder's lock does not count). */
export async function isDataDirLocked(dataDir: string): Promise<boolean> {
  return (await lockfile.check(dataDir, { lockfilePath: lockPath(dataDir), stale: STALE_MS })) && !holderIsGone(dataDir, readHolder(dataDir));
}
