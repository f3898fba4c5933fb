/**
 * Creating the embedded data folder (`SVC_DATA_DIR`, default `./.svc-data`), mode 0700, with its
 * parents — the one place both the secrets file (secrets.ts) and the folder's lock
 * (src/db/data-dir-lock.ts) make it. Throws `ConfigError` (a one-line message, exit 2) when it
 * cannot be: a file in its place, no permission.
 */
import { mkdirSync } from 'node:fs';
import { ConfigError } from './parse.ts';

export function ensureDataDir(dataDir: string): void {
  try {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why =
      code === 'EEXIST' || code === 'ENOTDIR' ? 'a file is in its place' : code === 'EACCES' || code === 'EPERM' ? 'no permission' : (code ?? 'error');
    throw new ConfigError(`SVC_DATA_DIR: the data folder ${dataDir} cannot be created: ${why}`);
  }
}
