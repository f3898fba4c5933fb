/**
 * The row-level security of the content tables, tested in SQL as the `authenticated` role with
 * JWT claims (never as the owner or a superuser), on the suite's backend: who reads what, who
 * writes where, which columns can change, and what the role cannot touch at all. The authoring
 * tools add no authorization of their own, so these policies are the whole rule.
 */
import { describe, expect, it } from 'vitest';
import type { Queryable } from '../../src/db/index.ts';
import { as, expectSqlState, titles, useSeeded, type Who } from './fixtures.ts';

const f = useSeeded();

describe('the session of a caller', () => {
  it('is the authenticated role, not a superuser and not the owner', async () => {
    const [row] = await as(f, 'authorA', (tx) =>
      tx.query<{ me: string; superuser: boolean; bypass: boolean; uid: string }>(
        `select current_user as me, r.rolsuper as superuser, r.rolbypassrls as bypass, auth.uid()::text as uid
           from pg_roles r where r.rolname = current_user`,
      ),
    );
    expect(row).toEqual({ me: 'authenticated', superuser: false, bypass: false, uid: f.subs.authorA });
  });

  it('maps the token to the tenants it may write and read', async () => {
    const sets = async (who: Who) =>
      as(f, who, async (tx) => ({
        author: (await tx.query<{ id: string }>('select public.current_author_tenant_ids() as id')).map((r) => r.id),
        member: (await tx.query<{ id: string }>('select public.current_member_tenant_ids() as id order by 1')).map((r) => r.id),
      }));
    expect(await sets('authorA')).toEqual({ author: [f.ids.tenantA], member: [f.ids.tenantA] });
    expect(await sets('learnerA')).toEqual({ author: [], member: [f.ids.tenantA] });
    expect(await sets('authorB')).toEqual({ author: [f.ids.tenantB], member: [f.ids.tenantB] });
    expect(await sets('nobody')).toEqual({ author: [], member: [] });
    expect(await sets('noClaims')).toEqual({ author: [], member: [] });
  });
});

describe('reads', () => {
  const visible: Record<Who, Record<string, string[]>> = {
    authorA: { programs: ['PA', 'PC'], units: ['UA', 'UC'], lessons: ['LA', 'LC'], activities: ['AA1', 'AA2', 'AC'] },
    learnerA: { programs: ['PA', 'PC'], units: ['UA', 'UC'], lessons: ['LA', 'LC'], activities: ['AA1', 'AA2', 'AC'] },
    authorB: { programs: ['PB', 'PC'], units: ['UB', 'UC'], lessons: ['LB', 'LC'], activities: ['AB', 'AC'] },
    nobody: { programs: ['PC'], units: ['UC'], lessons: ['LC'], activities: ['AC'] },
    noClaims: { programs: ['PC'], units: ['UC'], lessons: ['LC'], activities: ['AC'] },
  };
  it.each(Object.keys(visible) as Who[])('%s sees its tenants and the catalog, nothing else', async (who) => {
    const seen = await as(f, who, async (tx) => ({
      programs: await titles(tx, 'programs'),
      units: await titles(tx, 'units'),
      lessons: await titles(tx, 'lessons'),
      activities: await titles(tx, 'activities'),
    }));
    expect(seen).toEqual(visible[who]);
  });

  it('archived content (migration 0110) is hidden from learners with everything under it; authors see it', async () => {
    await f.db.query('update units set archived_at = now() where id = $1', [f.ids.UA]);
    try {
      const seen = (who: Who) =>
        as(f, who, async (tx) => ({ units: await titles(tx, 'units'), lessons: await titles(tx, 'lessons'), activities: await titles(tx, 'activities') }));
      expect(await seen('learnerA')).toEqual({ units: ['UC'], lessons: ['LC'], activities: ['AC'] });
      expect(await seen('authorA')).toEqual({ units: ['UA', 'UC'], lessons: ['LA', 'LC'], activities: ['AA1', 'AA2', 'AC'] });
    } finally {
      await f.db.query('update units set archived_at = null where id = $1', [f.ids.UA]);
    }
    expect(await as(f, 'learnerA', (tx) => titles(tx, 'activities'))).toEqual(['AA1', 'AA2', 'AC']);
  });

  it('tenants, memberships and users: only the caller own', async () => {
    const seen = await as(f, 'learnerA', async (tx) => ({
      tenants: (await tx.query<{ slug: string }>('select slug from tenants')).map((r) => r.slug),
      memberships: (await tx.query<{ role: string }>('select role from memberships')).map((r) => r.role),
      users: (await tx.query<{ id: string }>('select id from users')).map((r) => r.id),
    }));
    expect(seen).toEqual({ tenants: ['a'], memberships: ['learner'], users: [f.subs.learnerA] });
  });

  it("learners' work (results, artifacts, progress): learners read their own rows; authors of the tenant read and override them (migrations 0090, 0142)", async () => {
    const results = (who: Who) => as(f, who, (tx) => tx.query<{ user_id: string }>('select user_id from activity_results'));
    expect((await results('learnerA')).map((r) => r.user_id)).toEqual([f.subs.learnerA]);
    expect((await results('authorA')).map((r) => r.user_id)).toEqual([f.subs.learnerA]);
    expect(await results('authorB')).toEqual([]);
    expect(await results('noClaims')).toEqual([]);
    // a learner changes nothing (no update policy of theirs); another tenant's author neither
    const touched = (who: Who) => as(f, who, (tx) => tx.query<{ id: string }>(`update activity_results set status = status returning id`));
    expect(await touched('learnerA')).toEqual([]);
    expect(await touched('authorB')).toEqual([]);
    expect(await touched('authorA')).toHaveLength(1);
    // only the columns an override changes
    await expectSqlState(
      as(f, 'authorA', (tx) => tx.query(`update activity_results set user_id = user_id`)),
      '42501',
    );
    await expectSqlState(
      as(f, 'authorA', (tx) => tx.query(`update artifacts set content = content`)),
      '42501',
    );
    await expectSqlState(
      as(f, 'learnerA', (tx) => tx.query(`delete from activity_results`)),
      '42501',
    );
  });

  it.each(['api_keys', 'tenant_idps', 'auth.users', 'auth.sessions', 'auth.refresh_tokens'])('%s is not readable at all (no grant)', async (table) => {
    await expectSqlState(
      as(f, 'authorA', (tx) => tx.query(`select 1 from ${table} limit 1`)),
      '42501',
    );
  });

  it('the anon role reads no content', async () => {
    await expectSqlState(
      f.db.transaction(async (tx) => {
        await tx.query('set local role anon');
        await tx.query('select 1 from programs limit 1');
      }),
      '42501',
    );
  });
});

describe('inserts', () => {
  const insertProgram = (tenant: string | null) => (tx: Queryable) =>
    tx.query<{ id: string }>(`insert into programs (tenant_id, title) values ($1, 'new') returning id`, [tenant]);

  it('an author writes a program into their tenant', async () => {
    const rows = await as(f, 'authorA', insertProgram(f.ids.tenantA));
    expect(rows).toHaveLength(1);
  });

  it.each([
    ['learnerA', 'tenantA'],
    ['authorB', 'tenantA'],
    ['nobody', 'tenantA'],
    ['noClaims', 'tenantA'],
    ['authorA', 'tenantB'],
  ] as [Who, string][])('%s cannot write a program into %s', async (who, tenant) => {
    await expectSqlState(as(f, who, insertProgram(f.ids[tenant]!)), '42501');
  });

  it('nobody signed in writes into the catalog', async () => {
    await expectSqlState(as(f, 'authorA', insertProgram(null)), '42501');
  });

  it('a child takes its tenant from its parent, whatever the insert says', async () => {
    const [unit] = await as(f, 'authorA', (tx) =>
      tx.query<{ tenant_id: string }>(`insert into units (tenant_id, program_id, title) values ($1, $2, 'planted') returning tenant_id`, [
        f.ids.tenantB,
        f.ids.PA,
      ]),
    );
    expect(unit!.tenant_id).toBe(f.ids.tenantA);
  });

  it('a parent of another tenant is not found (P0002), not merely refused', async () => {
    await expectSqlState(
      as(f, 'authorA', (tx) => tx.query(`insert into units (program_id, title) values ($1, 'x')`, [f.ids.PB])),
      'P0002',
    );
    await expectSqlState(
      as(f, 'authorA', (tx) => tx.query(`insert into activities (lesson_id, title, kind, spec) values ($1, 'x', 'site', 's')`, [f.ids.LB])),
      'P0002',
    );
  });

  const children = [
    ['units', `insert into units (program_id, title) values ($1, 'x')`, 'PA', 'PC'],
    ['lessons', `insert into lessons (unit_id, title) values ($1, 'x')`, 'UA', 'UC'],
    ['activities', `insert into activities (lesson_id, title, kind, spec) values ($1, 'x', 'site', 's')`, 'LA', 'LC'],
  ] as const;
  it.each(children)('%s: an author adds children; a learner, and anyone under the catalog, cannot', async (_table, sql, parent, catalogParent) => {
    expect(await as(f, 'authorA', (tx) => tx.query(`${sql} returning id`, [f.ids[parent]]))).toHaveLength(1);
    await expectSqlState(
      as(f, 'learnerA', (tx) => tx.query(sql, [f.ids[parent]])),
      '42501',
    );
    await expectSqlState(
      as(f, 'authorA', (tx) => tx.query(sql, [f.ids[catalogParent]])),
      '42501',
    );
  });
});

/** A rename and a delete of row `id` of `table`, answering the ids of the rows they wrote. */
const writes = {
  changes: (table: string, id: string) => (tx: Queryable) => tx.query(`update ${table} set title = 'renamed' where id = $1 returning id`, [id]),
  deletes: (table: string, id: string) => (tx: Queryable) => tx.query(`delete from ${table} where id = $1 returning id`, [id]),
};

describe('updates and deletes: one row where the caller authors the tenant; elsewhere no row (RLS), no error', () => {
  it.each([
    ['authorA', 'changes', 'programs', 'PA', 1],
    ['authorA', 'changes', 'activities', 'AA2', 1],
    ['learnerA', 'changes', 'programs', 'PA', 0],
    ['learnerA', 'changes', 'activities', 'AA1', 0],
    ['authorB', 'changes', 'programs', 'PA', 0],
    ['nobody', 'changes', 'lessons', 'LA', 0],
    ['authorA', 'changes', 'programs', 'PB', 0],
    ['authorA', 'changes', 'units', 'UC', 0],
    ['authorA', 'deletes', 'activities', 'AA2', 1],
    ['learnerA', 'deletes', 'programs', 'PA', 0],
    ['authorB', 'deletes', 'activities', 'AA2', 0],
    ['nobody', 'deletes', 'units', 'UA', 0],
    ['authorA', 'deletes', 'programs', 'PB', 0],
    ['authorA', 'deletes', 'programs', 'PC', 0],
  ] as [Who, keyof typeof writes, string, string, number][])('%s %s %s %s: %i row(s)', async (who, write, table, id, rows) => {
    expect(await as(f, who, writes[write](table, f.ids[id]!))).toHaveLength(rows);
  });
});

describe('updates', () => {
  it.each([
    ['programs', 'tenant_id', 'PA'],
    ['programs', 'source_program_id', 'PA'],
    ['programs', 'external_id', 'PA'],
    ['units', 'tenant_id', 'UA'],
    ['activities', 'program_id', 'AA1'],
    ['programs', 'archived', 'PA'],
    ['units', 'archived', 'UA'],
    ['activities', 'archived', 'AA1'],
  ])('%s.%s cannot be changed by anyone (column grant)', async (table, column, id) => {
    const value = column === 'archived' ? true : f.ids.PB;
    await expectSqlState(
      as(f, 'authorA', (tx) => tx.query(`update ${table} set ${column} = $1 where id = $2`, [value, f.ids[id]])),
      '42501',
    );
  });

  // The parent columns may change (a move, migration 0110), but only to a parent the caller sees.
  it.each([
    ['units', 'program_id', 'UA'],
    ['lessons', 'unit_id', 'LA'],
    ['activities', 'lesson_id', 'AA1'],
  ])("%s.%s to another tenant's record is not found (P0002)", async (table, column, id) => {
    await expectSqlState(
      as(f, 'authorA', (tx) => tx.query(`update ${table} set ${column} = $1 where id = $2`, [f.ids.PB, f.ids[id]])),
      'P0002',
    );
  });
});

describe('deletes', () => {
  // PostgreSQL 15 reports a RESTRICT foreign key as 23503, newer versions (PGlite) as 23001
  it("content with a learner's result cannot be deleted, even by its author (FK restrict)", async () => {
    await expectSqlState(as(f, 'authorA', writes.deletes('activities', f.ids.AA1)), ['23001', '23503']);
    await expectSqlState(as(f, 'authorA', writes.deletes('programs', f.ids.PA)), ['23001', '23503']);
  });
});
