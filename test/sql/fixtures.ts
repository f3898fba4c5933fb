/**
 * SQL-level fixtures: a fresh migrated database (the suite's backend), seeded as its owner with
 * two tenants, four users (author of A, learner of A, author of B, member of nothing), content in
 * A, B and the catalog, and one learner result; plus `as(who, fn)`, which runs `fn` in a
 * transaction as the `authenticated` role with that user's JWT claims — the way the authoring
 * surface runs every tool call — and always rolls it back, so cases do not disturb each other.
 */
import { expect } from 'vitest';
import type { Db, Queryable } from '../../src/db/index.ts';
import { freshDb, useFixture } from '../helpers/harness.ts';

export type Who = 'authorA' | 'learnerA' | 'authorB' | 'nobody' | 'noClaims';

export interface Fixture {
  db: Db;
  url?: string;
  drop: () => Promise<void>;
  /** auth.users ids (the JWT `sub`) by name. */
  subs: Record<Exclude<Who, 'noClaims'>, string>;
  ids: Record<string, string>;
}

/** A deterministic id of the seed (`n`: its last three hex digits). */
const id = (n: string) => `00000000-0000-7000-8000-000000000${n}`;

/** The seed's users (auth.users ids, the JWT `sub`) by name. */
const SUBS: Fixture['subs'] = { authorA: id('0a1'), learnerA: id('0a2'), authorB: id('0b1'), nobody: id('0c1') };

/** The seed's tenants and content records by name (a record's title is its name). */
const IDS: Record<string, string> = {
  tenantA: id('00a'),
  tenantB: id('00b'),
  PA: id('101'),
  PB: id('102'),
  PC: id('103'),
  UA: id('201'),
  UB: id('202'),
  UC: id('203'),
  LA: id('301'),
  LB: id('302'),
  LC: id('303'),
  AA1: id('401'),
  AA2: id('402'),
  AB: id('403'),
  AC: id('404'),
};

/**
 * `insert into <table> (id, <parentColumn>, title)` of `[name, parent]` records: the id of each is
 * `IDS[name]`, its title its name, under `IDS[parent]` (null: a program of the catalog).
 */
const records = (table: string, parentColumn: string, rows: [name: string, parent: string | null][]) =>
  `insert into ${table} (id, ${parentColumn}, title) values
    ${rows.map(([name, parent]) => `('${IDS[name]}', ${parent === null ? 'null' : `'${IDS[parent]}'`}, '${name}')`).join(',\n    ')};`;

/** The seed, as SQL: one program → unit → lesson in A, in B and in the catalog (C), two activities in A's. */
export const SEED_SQL = `
  insert into tenants (id, slug, name) values
    ('${IDS.tenantA}', 'a', 'Tenant A'),
    ('${IDS.tenantB}', 'b', 'Tenant B');
  insert into auth.users (id, email) values
    ('${SUBS.authorA}', 'author@a.test'),
    ('${SUBS.learnerA}', 'learner@a.test'),
    ('${SUBS.authorB}', 'author@b.test'),
    ('${SUBS.nobody}', 'nobody@c.test');
  insert into users (id, auth_user_id) select id, id from auth.users;
  insert into memberships (tenant_id, user_id, role) values
    ('${IDS.tenantA}', '${SUBS.authorA}', 'author'),
    ('${IDS.tenantA}', '${SUBS.learnerA}', 'learner'),
    ('${IDS.tenantB}', '${SUBS.authorB}', 'author');
  ${records('programs', 'tenant_id', [
    ['PA', 'tenantA'],
    ['PB', 'tenantB'],
    ['PC', null],
  ])}
  ${records('units', 'program_id', [
    ['UA', 'PA'],
    ['UB', 'PB'],
    ['UC', 'PC'],
  ])}
  ${records('lessons', 'unit_id', [
    ['LA', 'UA'],
    ['LB', 'UB'],
    ['LC', 'UC'],
  ])}
  insert into activities (id, lesson_id, title, kind, spec) values
    ('${IDS.AA1}', '${IDS.LA}', 'AA1', 'document', 's'),
    ('${IDS.AA2}', '${IDS.LA}', 'AA2', 'document', 's'),
    ('${IDS.AB}', '${IDS.LB}', 'AB', 'document', 's'),
    ('${IDS.AC}', '${IDS.LC}', 'AC', 'document', 's');
  insert into activity_results (tenant_id, activity_id, lesson_id, program_id, user_id, status)
    values ('${IDS.tenantA}', '${IDS.AA1}', '${IDS.LA}', '${IDS.PA}', '${SUBS.learnerA}', 'completed');
`;

/** A fresh migrated database of the suite's backend with the seed in it; `drop()` removes it. */
export async function seeded(): Promise<Fixture> {
  const { db, url, drop } = await freshDb();
  await db.exec(SEED_SQL);
  return { db, url, drop, subs: { ...SUBS }, ids: { ...IDS } };
}

/** The seeded database of a test file: made before its tests (`seeded`), dropped after them. */
export function useSeeded(): Fixture {
  return useFixture(seeded, { release: (f) => f.drop() });
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
