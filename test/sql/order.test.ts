/**
 * The order rules of migration 0030 in SQL, for every writer — the owner here, the authoring
 * tools elsewhere: append, insert-and-shift, move, close gaps (one row or many per statement,
 * not when the parent goes too), out of range → SVP01, one position per parent (deferred unique
 * constraint). On PostgreSQL, two real connections show that the per-program lock makes a
 * concurrent insert wait and take the next position — and that without the lock the constraint
 * refuses the duplicate at commit.
 */
import postgres from 'postgres';
import { describe, expect, it } from 'vitest';
import type { Queryable } from '../../src/db/index.ts';
import { backend, freshDb } from '../helpers/harness.ts';
import { as, claimsOf, expectSqlState, SEED_SQL, useSeeded } from './fixtures.ts';

const f = useSeeded();

const ROLLBACK = Symbol('rollback');
/** Run `fn` as the owner in a transaction that is rolled back. */
async function owner<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
  let out: T | undefined;
  await f.db
    .transaction(async (tx) => {
      out = await fn(tx);
      throw ROLLBACK;
    })
    .catch((err) => {
      if (err !== ROLLBACK) throw err;
    });
  return out as T;
}

const order = async (tx: Queryable, lessonId: string) =>
  (await tx.query<{ t: string }>(`select title || position as t from activities where lesson_id = $1 order by position`, [lessonId])).map((r) => r.t);

async function addActivities(tx: Queryable, lessonId: string, titles: string[]) {
  for (const title of titles) {
    await tx.query(`insert into activities (lesson_id, title, kind, spec) values ($1, $2, 'document', 's')`, [lessonId, title]);
  }
}

describe('every writer obeys the order rules (here: the owner, no RLS)', () => {
  it('appends, inserts and shifts, moves, and closes gaps', async () => {
    const seen = await owner(async (tx) => {
      const lesson = f.ids.LC; // a catalog lesson: tenant_id is null
      await addActivities(tx, lesson, ['b', 'c']);
      await tx.query(`insert into activities (lesson_id, title, kind, spec, position) values ($1, 'a', 'document', 's', 2)`, [lesson]);
      const afterInsert = await order(tx, lesson);
      await tx.query(`update activities set position = 4 where lesson_id = $1 and title = 'a'`, [lesson]);
      const afterMove = await order(tx, lesson);
      await tx.query(`delete from activities where lesson_id = $1 and title in ('AC', 'c')`, [lesson]); // two rows, one statement
      return { afterInsert, afterMove, afterDelete: await order(tx, lesson) };
    });
    expect(seen).toEqual({
      afterInsert: ['AC1', 'a2', 'b3', 'c4'],
      afterMove: ['AC1', 'b2', 'c3', 'a4'],
      afterDelete: ['b1', 'a2'],
    });
  });

  it('refuses a position out of range (SVP01) on insert and on update', async () => {
    await expectSqlState(
      owner((tx) => tx.query(`insert into activities (lesson_id, title, kind, spec, position) values ($1, 'x', 'document', 's', 4)`, [f.ids.LA])),
      'SVP01',
    );
    await expectSqlState(
      owner((tx) => tx.query(`update activities set position = 3 where id = $1`, [f.ids.AA1])),
      'SVP01',
    );
  });

  it('a duplicate position cannot be committed (deferred unique constraint)', async () => {
    const [row] = await f.db.query<{ n: number }>(
      `select count(*)::int as n from pg_constraint where conname in ('units_position_key', 'lessons_position_key', 'activities_position_key')
          and condeferrable and condeferred`,
    );
    expect(row!.n).toBe(3);
    // with the move trigger off (as the owner, rolled back), a plain update makes a duplicate: refused
    await expectSqlState(
      f.db.transaction(async (tx) => {
        await tx.query(`alter table activities disable trigger activities_move`);
        await tx.query(`update activities set position = 1 where id = $1`, [f.ids.AA2]);
        await tx.query(`set constraints all immediate`);
      }),
      '23505',
    );
  });

  it('deleting a parent removes its children without renumbering them', async () => {
    const left = await owner(async (tx) => {
      await tx.query(`delete from units where id = $1`, [f.ids.UC]);
      return (await tx.query<{ n: number }>(`select count(*)::int as n from activities where lesson_id = $1`, [f.ids.LC]))[0]!.n;
    });
    expect(left).toBe(0);
  });

  it('an author through RLS gets the same rules', async () => {
    const seen = await as(f, 'authorA', async (tx) => {
      await tx.query(`insert into activities (lesson_id, title, kind, spec, position) values ($1, 'top', 'document', 's', 1)`, [f.ids.LA]);
      return order(tx, f.ids.LA);
    });
    expect(seen).toEqual(['top1', 'AA12', 'AA23']);
  });
});

describe.skipIf(backend !== 'postgres')(
  `two connections at once (PostgreSQL only; ${backend === 'postgres' ? 'running' : 'skipped: PGlite is one connection'})`,
  () => {
    /** Two sessions as the author of A on their own connections, each in an open transaction. */
    async function twoSessions(url: string) {
      const a = postgres(url, { max: 1, onnotice: () => {} });
      const b = postgres(url, { max: 1, onnotice: () => {} });
      const begin = async (sql: postgres.Sql) => {
        const tx = await sql.reserve();
        await tx.unsafe('begin');
        await tx.unsafe('set local role authenticated');
        await tx.unsafe(`select set_config('request.jwt.claims', $1, true)`, [JSON.stringify(claimsOf(f.subs.authorA))]);
        return tx;
      };
      const [ta, tb] = [await begin(a), await begin(b)];
      return {
        ta,
        tb,
        close: async () => {
          ta.release();
          tb.release();
          await a.end();
          await b.end();
        },
      };
    }
    const append = (tx: postgres.ReservedSql, lessonId: string, title: string) =>
      tx.unsafe(`insert into activities (lesson_id, title, kind, spec) values ($1, $2, 'document', 's') returning position`, [lessonId, title]);

    it('with the lock: the second insert waits for the first and takes the next position', async () => {
      const s = await twoSessions(f.url!);
      try {
        expect((await append(s.ta, f.ids.LA, 'first'))[0]!.position).toBe(3);
        let secondDone = false;
        const second = append(s.tb, f.ids.LA, 'second').then((rows) => {
          secondDone = true;
          return rows;
        });
        await new Promise((r) => setTimeout(r, 300));
        expect(secondDone, 'the second insert waits for the lock').toBe(false);
        await s.ta.unsafe('commit');
        expect((await second)[0]!.position).toBe(4);
        await s.tb.unsafe('commit');
      } finally {
        await s.close();
      }
      const [row] = await f.db.query<{ p: number[] }>(`select array_agg(position order by position) as p from activities where lesson_id = $1`, [f.ids.LA]);
      expect(row!.p).toEqual([1, 2, 3, 4]);
    });

    it('without the lock (replaced by a no-op), the unique constraint refuses the duplicate at commit', async () => {
      const other = await freshDb();
      try {
        const g = { ...f, db: other.db, url: other.url };
        await other.db.exec(SEED_SQL);
        await other.db.exec(`create or replace function svc.lock_program_order(program uuid) returns void language sql as $$ select null::void $$`);
        const s = await twoSessions(g.url!);
        try {
          expect((await append(s.ta, f.ids.LA, 'first'))[0]!.position).toBe(3);
          expect((await append(s.tb, f.ids.LA, 'second'))[0]!.position).toBe(3); // same count, no lock
          await s.ta.unsafe('commit');
          await expectSqlState(s.tb.unsafe('commit'), '23505');
        } finally {
          await s.close();
        }
      } finally {
        await other.drop();
      }
    });
  },
);
