/** Helpers of the export tests: bulk seeding, and reading an export's answer. */
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
