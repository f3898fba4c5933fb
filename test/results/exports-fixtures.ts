/** Helpers of the export tests: bulk seeding, holding an export open, and reading an export's answer. */
import { type ClientRequest, type IncomingMessage, request } from 'node:http';
import zlib from 'node:zlib';
import type { Db } from '../../src/db/index.ts';

/**
 * `n` more learners with a result each on `activityId` (bulk SQL: auth users, users, results).
 * Returns nothing; ids are read back from the database by the tests.
 */
export async function bulkResults(db: Db, activityId: string, n: number): Promise<void> {
  await db.exec(`
    with a as (insert into auth.users (email) select 'bulk-' || gen_random_uuid() || '@example.test' from generate_series(1, ${n}) returning id),
         u as (insert into users (auth_user_id) select id from a returning id)
    insert into activity_results (tenant_id, activity_id, lesson_id, program_id, user_id, status, score)
    select act.tenant_id, act.id, act.lesson_id, act.program_id, u.id, 'in_progress', 50
    from u, activities act where act.id = '${activityId}'`);
}

/** The whole body of `res` as bytes. */
export async function bytes(res: Response): Promise<Buffer> {
  return Buffer.from(await res.arrayBuffer());
}

/** An ArrayBuffer of exactly `buf`'s bytes (hyparquet reads ArrayBuffers). */
export const arrayBufferOf = (buf: Buffer): ArrayBuffer => buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength) as ArrayBuffer;

/**
 * hyparquet's decompressors for what the exports write: ZSTD pages (Node's zlib; the server writes
 * ZSTD where Node has it, snappy otherwise, which hyparquet reads by itself).
 */
export const parquetCompressors = {
  ZSTD: (input: Uint8Array) => new Uint8Array(zlib.zstdDecompressSync(input)),
};

/** An export held open by `holdExport`: destroy it to disconnect. */
export type HeldExport = ClientRequest & { res: IncomingMessage; first: Buffer };

/**
 * Open the export at `url` with `key` and pause after its first chunk (backpressure then holds
 * it); resolves with the request, its response and that chunk, and rejects on any status but 200.
 * A 429 (the key's previous export, which the test ended, not yet released by the server: that
 * happens just after the client sees its end) is retried for up to 5 s. `onRequest` sees each
 * request made (to destroy them after a failed test).
 */
export async function holdExport(url: string, key: string, onRequest: (req: ClientRequest) => void = () => {}): Promise<HeldExport> {
  for (let waited = 0; ; waited += 50) {
    try {
      return await holdOnce(url, key, onRequest);
    } catch (err) {
      if (!String(err).endsWith('HTTP 429') || waited >= 5000) throw err;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

function holdOnce(url: string, key: string, onRequest: (req: ClientRequest) => void): Promise<HeldExport> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { authorization: `Bearer ${key}` } }, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        reject(new Error(`${url}: HTTP ${res.statusCode}`));
        return;
      }
      res.once('data', (first: Buffer) => {
        res.pause();
        resolve(Object.assign(req, { res, first }));
      });
    });
    req.on('error', reject);
    onRequest(req);
    req.end();
  });
}

/** How the transfer of `res` ends: `complete` (its end came) or `aborted` (cut, or an error). */
export const transferEnd = (res: IncomingMessage) =>
  new Promise<'complete' | 'aborted'>((resolve) => {
    res.on('aborted', () => resolve('aborted'));
    res.on('error', () => resolve('aborted'));
    res.on('end', () => resolve('complete'));
  });
