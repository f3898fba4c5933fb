/**
 * One process at a time may open an embedded PGlite folder (two would corrupt it).
 *
 * `lockDataDir` takes a proper-lockfile lock on the folder (kept fresh while held; stale after
 * the holder dies) and, for a server, writes `server.json` `{url, pid}` so the `svc` CLI can
 * send its commands to the running server instead of opening the folder itself.
 * Throws `DataDirBusyError` when another process holds the folder.
 */
import lockfile from 'proper-lockfile';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export class DataDirBusyError extends Error {}

export interface ServerInfo {
  url: string;
  pid: number;
}

export async function lockDataDir(dataDir: string): Promise<() => Promise<void>> {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  try {
    const release = await lockfile.lock(dataDir, { lockfilePath: join(dataDir, '.lock'), stale: 10_000, update: 2_000 });
    return async () => {
      rmSync(join(dataDir, 'server.json'), { force: true });
      await release();
    };
  } catch (err) {
    if ((err as { code?: string }).code === 'ELOCKED') {
      throw new DataDirBusyError(`the data folder ${dataDir} is in use by another process`);
    }
    throw err;
  }
}

export function writeServerInfo(dataDir: string, info: ServerInfo): void {
  writeFileSync(join(dataDir, 'server.json'), JSON.stringify(info) + '\n', { mode: 0o600 });
}

/** The running server's address if one holds the folder, else undefined. */
export function readServerInfo(dataDir: string): ServerInfo | undefined {
  try {
    return JSON.parse(readFileSync(join(dataDir, 'server.json'), 'utf8')) as ServerInfo;
  } catch {
    return undefined;
  }
}

export async function isDataDirLocked(dataDir: string): Promise<boolean> {
  return lockfile.check(dataDir, { lockfilePath: join(dataDir, '.lock'), stale: 10_000 });
}
