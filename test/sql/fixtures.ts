/**
 * SQL-level fixtures: a fresh migrated database (the suite's backend), seeded as its owner with
 * two tenants, four users (author of A, learner of A, author of B, member of nothing), content in
 * A, B and the catalog, and one learner result; plus `as(who, fn)`, which runs `fn` in a
 * transaction as the `authenticated` role with that user's JWT claims — the way the authoring
 * surface runs every tool call — and always rolls it back, so cases do not disturb each other.
 */
import { expect } from 'vitest';
import type { Db, Queryable } from '../../src/db/index.ts';
import { freshDb } from '../helpers/harness.ts';

export type Who = 'authorA' | 'learnerA' | 'authorB' | 'nobody' | 'noClaims';

export interface Fixture {
  db: Db;
  url?: string;
  drop: () => Promise<void>;
  /** auth.users ids (the JWT `sub`) by name. */
  subs: Record<Exclude<Who, 'noClaims'>, string>;
  ids: Record<string, string>;
}

/** The seed, as SQL (deterministic ids). */
export const SEED_SQL = `
  insert into tenants (id, slug, name) values
    ('00000000-0000-7000-8000-00000000000a', 'a', 'Tenant A'),
    ('00000000-0000-7000-8000-00000000000b', 'b', 'Tenant B');
  insert into auth.users (id, email) values
    ('00000000-0000-7000-8000-0000000000a1', 'author@a.test'),
    ('00000000-0000-7000-8000-0000000000a2', 'learner@a.test'),
    ('00000000-0000-7000-8000-0000000000b1', 'author@b.test'),
    ('00000000-0000-7000-8000-0000000000c1', 'nobody@c.test');
  insert into users (id, auth_user_id) select id, id from auth.users;
  insert into memberships (tenant_id, user_id, role) values
    ('00000000-0000-7000-8000-00000000000a', '00000000-0000-7000-8000-0000000000a1', 'author'),
    ('00000000-0000-7000-8000-00000000000a', '00000000-0000-7000-8000-0000000000a2', 'learner'),
    ('00000000-0000-7000-8000-00000000000b', '00000000-0000-7000-8000-0000000000b1', 'author');
  insert into programs (id, tenant_id, title) values
    ('00000000-0000-7000-8000-000000000101', '00000000-0000-7000-8000-00000000000a', 'PA'),
    ('00000000-0000-7000-8000-000000000102', '00000000-0000-7000-8000-00000000000b', 'PB'),
    ('00000000-0000-7000-8000-000000000103', null, 'PC');
  insert into units (id, program_id, title) values
    ('00000000-0000-7000-8000-000000000201', '00000000-0000-7000-8000-000000000101', 'UA'),
    ('00000000-0000-7000-8000-000000000202', '00000000-0000-7000-8000-000000000102', 'UB'),
    ('00000000-0000-7000-8000-000000000203', '00000000-0000-7000-8000-000000000103', 'UC');
  insert into lessons (id, unit_id, title) values
    ('00000000-0000-7000-8000-000000000301', '00000000-0000-7000-8000-000000000201', 'LA'),
    ('00000000-0000-7000-8000-000000000302', '00000000-0000-7000-8000-000000000202', 'LB'),
    ('00000000-0000-7000-8000-000000000303', '00000000-0000-7000-8000-000000000203', 'LC');
  insert into activities (id, lesson_id, title, kind, spec) values
    ('00000000-0000-7000-8000-000000000401', '00000000-0000-7000-8000-000000000301', 'AA1', 'document', 's'),
    ('00000000-0000-7000-8000-000000000402', '00000000-0000-7000-8000-000000000301', 'AA2', 'document', 's'),
    ('00000000-0000-7000-8000-000000000403', '00000000-0000-7000-8000-000000000302', 'AB', 'document', 's'),
    ('00000000-0000-7000-8000-000000000404', '00000000-0000-7000-8000-000000000303', 'AC', 'document', 's');
  insert into activity_results (tenant_id, activity_id, lesson_id, program_id, user_id, status)
    values ('00000000-0000-7000-8000-00000000000a', '00000000-0000-7000-8000-000000000401', '00000000-0000-7000-8000-000000000301',
            '00000000-0000-7000-8000-000000000101', '00000000-0000-7000-8000-0000000000a2', 'completed');
`;

export async function seeded(): Promise<Fixture> {
  const { db, url, drop } = await freshDb();
  await db.exec(SEED_SQL);
  const id = (n: string) => `00000000-0000-7000-8000-000000000${n}`;
  return {
    db,
    url,
    drop,
    subs: { authorA: id('0a1'), learnerA: id('0a2'), authorB: id('0b1'), nobody: id('0c1') },
    ids: {
      tenantA: id('00a'), tenantB: id('00b'),
      PA: id('101'), PB: id('102'), PC: id('103'),
      UA: id('201'), UB: id('202'), UC: id('203'),
      LA: id('301'), LB: id('302'), LC: id('303'),
      AA1: id('401'), AA2: id('402'), AB: id('403'), AC: id('404'),
    },
  };
}

const ROLLBACK = Symbol('rollback');

/** The JWT claims the identity platform would mint for `sub` (null: a token without `sub`). */
export const claimsOf = (sub: string | null) => ({ ...(sub ? { sub } : {}), role: 'authenticated', aud: 'authenticated' });

/**
 * Run `fn` as `who` — `set local role authenticated` and `request.jwt.claims` — in a transaction
 * that is always rolled back. Returns what `fn` returns; a database error propagates.
 */
export async function as<T>(f: Fixture, who: Who, fn: (tx: Queryable) => Promise<T>): Promise<T> {
  let out: T | undefined;
  await f.db
    .transaction(async (tx) => {
      await tx.query('set local role authenticated');
      await tx.query(`select set_config('request.jwt.claims', $1, true)`, [JSON.stringify(claimsOf(who === 'noClaims' ? null : f.subs[who]))]);
      out = await fn(tx);
      throw ROLLBACK;
    })
    .catch((err) => {
      if (err !== ROLLBACK) throw err;
    });
  return out as T;
}

/** Expect `promise` to fail with SQLSTATE `code` (or one of `code`). */
export async function expectSqlState(promise: Promise<unknown>, code: string | string[]): Promise<void> {
  const err = await promise.then(
    () => undefined,
    (e: { code?: string }) => e,
  );
  expect(err, `expected SQLSTATE ${code}`).toBeDefined();
  expect([code].flat()).toContain((err as { code?: string }).code);
}

/** Titles of a table's rows the caller can see, sorted. */
export async function titles(tx: Queryable, table: string): Promise<string[]> {
  return (await tx.query<{ title: string }>(`select title from ${table} order by title`)).map((r) => r.title);
}
