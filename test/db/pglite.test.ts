/**
 * The embedded database's memory and crash-restart settings (issue #24, src/db/pglite.ts):
 * PostgreSQL's buffer pool is 16MB, not initdb's 128MB; PGlite's WebAssembly stays on V8's
 * baseline compiler (TurboFan's ~600 MB compile of one PostgreSQL function made every start peak
 * near 1 GiB); a database on a data folder checkpoints while it runs (single-user PostgreSQL has
 * no checkpointer, so a restart after kill -9 replayed everything written since the start).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openPglite, SHARED_BUFFERS, type PgliteDb } from '../../src/db/pglite.ts';
import { backend } from '../helpers/harness.ts';
import { ROOT } from '../helpers/server-process.ts';

describe.runIf(backend === 'pglite')('the embedded database (PGlite)', () => {
  const dirs: string[] = [];
  const opened: PgliteDb[] = [];
  /** A database in a new data folder, checkpointing by `policy` (tight bounds, so the test is quick). */
  async function onFolder(policy: { everyMs: number; walBytes: number; maxAgeMs: number }): Promise<PgliteDb> {
    const dir = mkdtempSync(join(tmpdir(), 'svc-test-pglite-'));
    dirs.push(dir);
    const db = await openPglite(join(dir, 'pgdata'), undefined, policy);
    opened.push(db);
    await db.exec('create table filler (id serial primary key, t text)');
    return db;
  }
  const redo = async (db: PgliteDb) => (await db.query<{ redo: string }>('select redo_lsn::text as redo from pg_control_checkpoint()'))[0]!.redo;
  /** About `kib` KiB of WAL. */
  const write = (db: PgliteDb, kib: number) => db.exec(`insert into filler (t) select repeat('x', 1000) from generate_series(1, ${kib})`);

  afterAll(async () => {
    await Promise.all(opened.map((db) => db.close().catch(() => {})));
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  it('runs PostgreSQL with a 16MB buffer pool', async () => {
    const db = await onFolder({ everyMs: 60_000, walBytes: 2 ** 30, maxAgeMs: 3_600_000 });
    expect(SHARED_BUFFERS).toBe('16MB');
    expect(await db.query('show shared_buffers')).toEqual([{ shared_buffers: '16MB' }]);
  });

  it('checkpoints once enough WAL is written, and not before', async () => {
    const db = await onFolder({ everyMs: 100, walBytes: 4 * 2 ** 20, maxAgeMs: 3_600_000 });
    const before = await redo(db);
    await write(db, 256); // ~0.3 MiB: under the bound
    await new Promise((r) => setTimeout(r, 500));
    expect(await redo(db)).toBe(before);
    await write(db, 8192); // ~9 MiB
    await expect.poll(() => redo(db), { timeout: 5000 }).not.toBe(before);
  });

  it('checkpoints what was written once the last checkpoint is old enough', async () => {
    const db = await onFolder({ everyMs: 100, walBytes: 2 ** 30, maxAgeMs: 500 });
    await db.exec('checkpoint');
    const before = await redo(db);
    await new Promise((r) => setTimeout(r, 800));
    expect(await redo(db)).toBe(before); // nothing written: no checkpoint
    await write(db, 16);
    await expect.poll(() => redo(db), { timeout: 5000 }).not.toBe(before);
  });

  it('keeps WebAssembly on the baseline compiler (no TurboFan tier-up)', async () => {
    // A process that opens an in-memory database and runs enough queries for V8 to tier up its
    // hottest functions (it did so within the migrations of every start), tracing each compile.
    const script = `
      const { openPglite } = await import('./src/db/pglite.ts');
      const db = await openPglite();
      await db.exec('create table t (id serial primary key, a text, b jsonb)');
      for (let i = 0; i < 1500; i++) {
        await db.query('insert into t (a, b) values ($1, $2)', ['x' + i, JSON.stringify({ i })]);
        await db.query("select id, a, b->>'i' as i from t where id > $1 order by id limit 20", [i]);
      }
      await db.close();`;
    const child = spawn(process.execPath, ['--trace-wasm-compilation-times', '--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    const code = await new Promise((resolve) => child.once('exit', resolve));
    expect(code, output.slice(-2000)).toBe(0);
    expect(output).toContain('using Liftoff');
    expect(output.split('\n').filter((line) => line.includes('using TurboFan'))).toEqual([]);
  }, 120_000);
});
