/**
 * One migrated embedded database for the whole suite: PGlite's initdb and the migrations cost
 * seconds per database, and the PGlite suite opens one or more per test file. The first
 * `migratedSnapshot()` of a run opens PGlite, migrates it and dumps its data directory (a tarball,
 * ~40 MB) into the OS temp folder; every later in-memory database starts from that dump
 * (`openPglite(undefined, snapshot)`, PGlite's `loadDataDir`).
 *
 * The file's name carries a hash of the PGlite version and of every migration's name and text, so
 * a changed migration or PGlite makes a new dump and an old one is never used. Writers race
 * safely: each writes its own file and renames it into place (rename is atomic on one file system).
 */
import { createHash } from 'node:crypto';
import { readdir, readFile, rename, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { migrate } from '../../src/db/index.ts';
import { openPglite } from '../../src/db/pglite.ts';

const MIGRATIONS = new URL('../../src/migrations/', import.meta.url);
const PGLITE_PACKAGE = new URL('../../node_modules/@electric-sql/pglite/package.json', import.meta.url);

/** sha256 (hex, 16 characters) of the PGlite version and the migrations (names and texts). */
async function snapshotKey(): Promise<string> {
  const hash = createHash('sha256');
  hash.update(await readFile(PGLITE_PACKAGE)); // its version (the package does not export package.json)
  for (const name of (await readdir(MIGRATIONS)).filter((n) => n.endsWith('.sql')).sort()) {
    hash.update(`${name}\n`).update(await readFile(new URL(name, MIGRATIONS)));
  }
  return hash.digest('hex').slice(0, 16);
}

async function load(): Promise<Blob> {
  const file = join(tmpdir(), `svc-test-pglite-${await snapshotKey()}.tar`);
  try {
    return new Blob([await readFile(file)]);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const db = await openPglite();
  try {
    await migrate(db);
    const dump = await db.dumpDataDir();
    const mine = `${file}.${process.pid}`;
    await writeFile(mine, new Uint8Array(await dump.arrayBuffer()));
    await rename(mine, file);
    return dump;
  } finally {
    await db.close();
  }
}

let snapshot: Promise<Blob> | undefined;

/** The migrated data directory (a tarball) that in-memory test databases start from. */
export function migratedSnapshot(): Promise<Blob> {
  snapshot ??= load().catch((err) => {
    snapshot = undefined;
    throw err;
  });
  return snapshot;
}
