/**
 * `activity_results.artifact_ids` (migration 0164), kept by a trigger on `artifacts`, on
 * PostgreSQL (skipped on PGlite: one connection, no concurrent writers): two transactions adding
 * artifacts to one result at once both land in its list, and after concurrent inserts and
 * deletions every result's list equals its artifacts in (created_at, id) order.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import type { Queryable } from '../../src/db/index.ts';
import { backend, useApp, useFixture } from '../helpers/harness.ts';
import { seedTenant } from './fixtures.ts';

const t = useApp();
const a = useFixture(() => seedTenant(t, 'alpha'));

/** Insert an artifact of result `resultId` (copying the result's activity and learner); returns its id. */
async function addArtifact(q: Queryable, resultId: string): Promise<string> {
  const [row] = await q.query<{ id: string }>(
    `insert into artifacts (tenant_id, result_id, activity_id, user_id, kind, content, verification)
     select tenant_id, id, activity_id, user_id, 'document', 'text', '{"status":"pending"}' from activity_results where id = $1
     returning id`,
    [resultId],
  );
  return row!.id;
}

/** Results of tenant `tenantId` whose kept list differs from their artifacts in (created_at, id) order. */
const drifted = (tenantId: string) =>
  t.db.query<{ id: string }>(
    `select r.id from activity_results r
      where r.tenant_id = $1
        and r.artifact_ids <> coalesce((select array_agg(x.id order by x.created_at, x.id) from artifacts x
                                          where x.tenant_id = r.tenant_id and x.result_id = r.id), '{}')`,
    [tenantId],
  );

describe.skipIf(backend !== 'postgres')('activity_results.artifact_ids', () => {
  it('two transactions adding artifacts to one result at once: both ids are kept', async () => {
    const result = a.resultIds[0]!;
    let second: Promise<string> | undefined;
    const first = await t.db.transaction(async (tx) => {
      const id = await addArtifact(tx, result); // holds the result's row lock until commit
      second = t.db.transaction((tx2) => addArtifact(tx2, result)); // its trigger waits for the lock
      await sleep(200);
      return id;
    });
    const other = await second!;
    const [row] = await t.db.query<{ artifact_ids: string[] }>(`select artifact_ids from activity_results where id = $1`, [result]);
    expect(row!.artifact_ids).toEqual(expect.arrayContaining([first, other]));
    expect(await drifted(a.id)).toEqual([]);
  });

  it('concurrent inserts and deletions: every result’s list equals its artifacts in (created_at, id) order', async () => {
    const targets = a.resultIds.slice(0, 2);
    const writer = async (w: number) => {
      for (let i = 0; i < 15; i++) {
        await t.db.transaction(async (tx) => {
          const result = targets[(w + i) % targets.length]!;
          await addArtifact(tx, result);
          if (i % 3 === 2) {
            await tx.query(`delete from artifacts where id = (select id from artifacts where result_id = $1 order by random() limit 1)`, [result]);
          }
          await tx.query('select pg_sleep(0.005)');
        });
      }
    };
    await Promise.all([writer(0), writer(1), writer(2)]);
    expect(await drifted(a.id)).toEqual([]);
    const [{ n }] = (await t.db.query<{ n: number }>(`select count(*)::int as n from artifacts where result_id = any($1::uuid[])`, [targets])) as [
      { n: number },
    ];
    expect(n).toBeGreaterThan(20);
  });
});
