/**
 * move_unit / move_lesson / move_activity (issue #16) through the MCP SDK client: to another
 * parent of the same tenant at a position, with migration 0030's ordering guarantees — 20
 * concurrent moves leave every parent numbered 1..n, no record lost, no deadlock; what hangs
 * below a moved record follows it (program ids; learners' results keep resolving, with their new
 * lesson and unit in the Results API). Refusals (another tenant, one's own descendant, another
 * program with learner results, a position out of range, a learner, another tenant's author)
 * are `isError` results naming the problem, with nothing written. Races (PostgreSQL, forced with
 * a second connection, migration 0131): a create racing the delete of its parent says "not found";
 * a create racing a move of its parent lands in the parent's new program; a first submission
 * racing a move of its activity is recorded in the new lesson and program, one racing an archive
 * is refused.
 */
import { describe, expect, it } from 'vitest';
import { expectError } from '../embed/fixtures.ts';
import { backend } from '../helpers/harness.ts';
import { connect, contentSnapshot, fails, ok, type Structured } from './helpers.ts';
import { get, importTree, learnerSession, submit, useLifecycleWorld } from './lifecycle-world.ts';

const x = useLifecycleWorld();

/** Titles of the children of each parent, in position order, checking positions are 1..n. */
async function layout(table: 'units' | 'lessons' | 'activities', parentIds: string[]): Promise<string[][]> {
  const column = { units: 'program_id', lessons: 'unit_id', activities: 'lesson_id' }[table];
  const rows = await x.w.t.db.query<{ parent: string; titles: string[]; positions: number[] }>(
    `select ${column} as parent, array_agg(title order by position) as titles, array_agg(position order by position) as positions
       from ${table} where ${column} = any($1::uuid[]) group by ${column}`,
    [parentIds],
  );
  const byParent = new Map(rows.map((r) => [r.parent, r]));
  return parentIds.map((id) => {
    const r = byParent.get(id);
    if (r) expect(r.positions, `${table} of ${id}`).toEqual(r.positions.map((_, i) => i + 1));
    return r?.titles ?? [];
  });
}

/** Every parent of every content table is numbered 1..n; lessons and activities carry their parent's program. */
async function invariants() {
  const [bad] = await x.w.t.db.query<{ gaps: number; programs: number }>(
    `select (select count(*)::int from (
               select program_id as p, position, row_number() over (partition by program_id order by position) as rn from units
               union all select unit_id, position, row_number() over (partition by unit_id order by position) from lessons
               union all select lesson_id, position, row_number() over (partition by lesson_id order by position) from activities) s
             where position <> rn) as gaps,
            (select count(*)::int from lessons l join units u on u.id = l.unit_id where l.program_id <> u.program_id)
          + (select count(*)::int from activities a join lessons l on l.id = a.lesson_id where a.program_id <> l.program_id) as programs`,
  );
  expect(bad).toEqual({ gaps: 0, programs: 0 });
}

describe('moves', () => {
  it('an activity to another lesson, at a position: both lessons close up and make room', async () => {
    const p = await importTree(x.author, 'acme');
    const [l11, l12] = p.units[0].lessons;
    const l22 = p.units[1].lessons[1];
    const moved = await ok(x.author, 'move_activity', { id: l11.activities[0].id, lesson_id: l22.id, position: 1 });
    expect(moved).toMatchObject({ lesson_id: l22.id, position: 1, program_id: p.id });
    expect(await layout('activities', [l11.id, l12.id, l22.id])).toEqual([['U1.L1.A2'], ['U1.L2.A1', 'U1.L2.A2'], ['U1.L1.A1', 'U2.L2.A1', 'U2.L2.A2']]);
    // within its lesson, and without a position: last
    expect(await ok(x.author, 'move_activity', { id: moved.id, lesson_id: l22.id })).toMatchObject({ position: 3 });
    expect(await layout('activities', [l22.id])).toEqual([['U2.L2.A1', 'U2.L2.A2', 'U1.L1.A1']]);
  });

  it('a unit to another program, with its lessons and activities', async () => {
    const p1 = await importTree(x.author, 'acme');
    const p2 = await importTree(x.author, 'acme', 1);
    const u = p1.units[0];
    const moved = await ok(x.author, 'move_unit', { id: u.id, program_id: p2.id, position: 1 });
    expect(moved).toMatchObject({ program_id: p2.id, position: 1 });
    expect(await layout('units', [p1.id, p2.id])).toEqual([['U2'], ['U1', 'U1']]);
    const [row] = await x.w.t.db.query<{ lessons: number; activities: number }>(
      `select (select count(*)::int from lessons where unit_id = $1 and program_id = $2) as lessons,
              (select count(*)::int from activities a join lessons l on l.id = a.lesson_id where l.unit_id = $1 and a.program_id = $2) as activities`,
      [u.id, p2.id],
    );
    expect(row).toEqual({ lessons: 2, activities: 4 });
    // a lesson into a unit of another program, then back
    const lesson = p1.units[1].lessons[0];
    expect(await ok(x.author, 'move_lesson', { id: lesson.id, unit_id: u.id, position: 3 })).toMatchObject({ program_id: p2.id, position: 3 });
    expect(await ok(x.author, 'move_lesson', { id: lesson.id, unit_id: p1.units[1].id, position: 1 })).toMatchObject({ program_id: p1.id });
    await invariants();
  });

  it('20 concurrent moves: every parent stays 1..n, nothing lost, no deadlock', async () => {
    const programs = [await importTree(x.author, 'acme', 3, 3, 2), await importTree(x.author, 'acme', 3, 3, 2)];
    const units = programs.flatMap((p) => p.units);
    const lessons = units.flatMap((u: Structured) => u.lessons);
    const activities = lessons.flatMap((l: Structured) => l.activities);
    const before = await x.w.t.db.query(
      'select count(*)::int as n from units union all select count(*)::int from lessons union all select count(*)::int from activities',
    );
    let seed = 16;
    const pick = <T>(list: T[]): T => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return list[seed % list.length]!;
    };
    const calls = Array.from({ length: 20 }, (_, i) => {
      if (i % 4 === 0) return { name: 'move_unit', arguments: { id: pick(units).id, program_id: pick(programs).id, position: 1 } };
      if (i % 2 === 0) return { name: 'move_lesson', arguments: { id: pick(lessons).id, unit_id: pick(units).id, position: 1 } };
      return { name: 'move_activity', arguments: { id: pick(activities).id, lesson_id: pick(lessons).id } };
    });
    const results = await Promise.all(calls.map((c) => x.author.callTool(c)));
    for (const r of results) expect(r.isError ? (r.content as { text: string }[])[0]!.text : 'moved').toBe('moved');
    expect(
      await x.w.t.db.query('select count(*)::int as n from units union all select count(*)::int from lessons union all select count(*)::int from activities'),
    ).toEqual(before);
    await invariants();
  });
});

describe("learners' results follow a move within the program", () => {
  it('the Results API shows the new lesson and unit; another program is refused, nothing written', async () => {
    const p = await importTree(x.author, 'acme');
    const other = await importTree(x.author, 'acme', 1, 1, 1);
    const a = p.units[0].lessons[0].activities[0];
    const learner = await learnerSession(x.w, 'mover-1');
    const judged = await submit(x.w, learner, a.id);
    expect(judged.body).toMatchObject({ status: 'passed' });
    const result = async () => (await get(x.w, `/v1/activity-results/${judged.body.result_id}`, x.apiKey)).body;

    const target = p.units[1].lessons[1];
    await ok(x.author, 'move_activity', { id: a.id, lesson_id: target.id });
    expect(await result()).toMatchObject({ activity_id: a.id, lesson_id: target.id, unit_id: p.units[1].id, program_id: p.id });
    const before = await result();
    await ok(x.author, 'move_lesson', { id: target.id, unit_id: p.units[0].id, position: 1 });
    const after = await result();
    expect(after).toMatchObject({ lesson_id: target.id, unit_id: p.units[0].id });
    expect(after.updated_at > before.updated_at).toBe(true); // sync consumers see the new unit

    const snapshot = await contentSnapshot(x.w.t);
    expect(await fails(x.author, 'move_activity', { id: a.id, lesson_id: other.units[0].lessons[0].id })).toBe(
      `activity ${a.id} cannot move to another program: learners have results on it; move it within its program, or archive it`,
    );
    expect(await fails(x.author, 'move_unit', { id: p.units[0].id, program_id: other.id })).toBe(
      `unit ${p.units[0].id} cannot move to another program: learners have results on an activity in it; move it within its program, or archive it`,
    );
    // the rule is the database's: the service's own role (CLI, console) is refused too
    await expect(x.w.t.db.query('update units set program_id = $1 where id = $2', [other.id, p.units[0].id])).rejects.toMatchObject({ code: 'SVP03' });
    expect(await contentSnapshot(x.w.t)).toEqual(snapshot);
  });
});

describe('refusals: isError naming the problem, nothing written', () => {
  it("another tenant, one's own descendant, out of range, unknown ids, a learner, another tenant's author", async () => {
    const p = await importTree(x.author, 'acme', 2, 2, 1);
    const g = await importTree(x.author, 'globex', 1, 1, 1);
    const lesson = p.units[0].lessons[0];
    const snapshot = await contentSnapshot(x.w.t);
    const unknown = '01234567-89ab-7def-8123-456789abcdef';

    expect(await fails(x.author, 'move_lesson', { id: lesson.id, unit_id: g.units[0].id })).toBe(
      `lesson ${lesson.id} cannot move to another tenant: unit ${g.units[0].id} belongs to another tenant than the lesson`,
    );
    expect(await fails(x.outsider, 'move_lesson', { id: g.units[0].lessons[0].id, unit_id: p.units[0].id })).toBe(`unit ${p.units[0].id} not found`);
    expect(await fails(x.outsider, 'move_lesson', { id: lesson.id, unit_id: g.units[0].id })).toBe(`lesson ${lesson.id} not found`);
    expect(await fails(x.author, 'move_unit', { id: p.units[0].id, program_id: lesson.activities[0].id })).toBe(
      `program ${lesson.activities[0].id} not found (that id is an activity)`,
    );
    expect(await fails(x.author, 'move_lesson', { id: lesson.id, unit_id: lesson.id })).toBe(`unit ${lesson.id} not found (that id is a lesson)`);
    expect(await fails(x.author, 'move_activity', { id: unknown, lesson_id: lesson.id })).toBe(`activity ${unknown} not found`);
    expect(await fails(x.author, 'move_activity', { id: lesson.activities[0].id, lesson_id: unknown })).toBe(`lesson ${unknown} not found`);
    expect(await fails(x.author, 'move_lesson', { id: lesson.id, unit_id: p.units[1].id, position: 9 })).toBe(
      `position 9 is out of range: unit ${p.units[1].id} has 2 lessons, so give a position from 1 to 3`,
    );
    expect(await fails(x.author, 'move_lesson', { id: lesson.id, unit_id: p.units[0].id, position: 3 })).toBe(
      `position 3 is out of range: unit ${p.units[0].id} has 2 lessons, so give a position from 1 to 2`,
    );
    const asLearner = await connect(x.w.t, await learnerSession(x.w, 'mover-2'));
    try {
      expect(await fails(asLearner, 'move_lesson', { id: lesson.id, unit_id: p.units[1].id })).toBe('not allowed: you are not an author of that tenant');
    } finally {
      await asLearner.close();
    }
    expect(await contentSnapshot(x.w.t)).toEqual(snapshot);
  });
});

/**
 * Run `call` while another transaction (the service's own role, on its own connection) has run
 * `statements` (SQL text and parameters), uncommitted; once `call` waits for an advisory lock in
 * this database, that transaction commits. Returns what `call` returned. PostgreSQL only (PGlite
 * runs one transaction at a time).
 */
async function whileUncommitted<T>(statements: [string, unknown[]][], call: () => Promise<T>): Promise<T> {
  let pending: Promise<T> | undefined;
  await x.w.t.db.transaction(async (tx) => {
    for (const [sql, params] of statements) await tx.query(sql, params);
    pending = call();
    await expect
      .poll(
        async () => {
          const [row] = await x.w.t.db.query<{ n: number }>(
            `select count(*)::int as n from pg_locks
            where locktype = 'advisory' and not granted and database = (select oid from pg_database where datname = current_database())`,
          );
          return row!.n;
        },
        { message: 'the call waits for the order lock' },
      )
      .toBe(1);
  });
  return pending!;
}

/** The statement that takes the order locks of programs `a` and `b` (or of `a` alone), as a move does. */
const lockPrograms = (a: string, b = a): [string, unknown[]] => ['select svc.lock_programs_order($1, $2)', [a, b]];

const racing = describe.skipIf(backend !== 'postgres');
const TWO_CONNECTIONS = `PostgreSQL: two connections; ${backend === 'postgres' ? 'running' : 'skipped: PGlite runs one transaction at a time'}`;

racing(`a create racing the delete of its parent (${TWO_CONNECTIONS})`, () => {
  it('says the parent was not found', async () => {
    const p = await importTree(x.author, 'acme', 1, 1, 1);
    const lesson = p.units[0].lessons[0];
    // the create reads the lesson (still there for it), then waits for the program's order lock
    const result = (await whileUncommitted([lockPrograms(p.id), ['delete from lessons where id = $1', [lesson.id]]], () =>
      x.author.callTool({
        name: 'create_activity',
        arguments: { lesson_id: lesson.id, title: 'Late', kind: 'document', spec: 'x', rubric: [{ criterion: 'c' }] },
      }),
    )) as { isError?: boolean; content: { text: string }[] };
    expect(result.isError).toBe(true);
    expect(result.content[0]!.text).toBe(`lesson ${lesson.id} not found`);
  });
});

racing(`a create racing a move of its parent to another program (${TWO_CONNECTIONS})`, () => {
  // The create reads its parent in the old program and waits for that program's order lock,
  // which the move holds; once the move commits, the record is created in the new program.
  it.each([
    {
      create: 'create_activity',
      parent: (p: Structured) => p.units[0].lessons[0],
      move: (parentId: string, q: Structured): [string, unknown[]] => [
        'update lessons set unit_id = $2, position = null where id = $1',
        [parentId, q.units[0].id],
      ],
      args: (parentId: string) => ({ lesson_id: parentId, title: 'Racer', kind: 'document', spec: 'x', rubric: [{ criterion: 'c' }] }),
    },
    {
      create: 'create_lesson',
      parent: (p: Structured) => p.units[0],
      move: (parentId: string, q: Structured): [string, unknown[]] => ['update units set program_id = $2, position = null where id = $1', [parentId, q.id]],
      args: (parentId: string) => ({ unit_id: parentId, title: 'Racer' }),
    },
  ])('$create lands in the program its parent moved to', async ({ create, parent, move, args }) => {
    const p = await importTree(x.author, 'acme', 1, 1, 1);
    const q = await importTree(x.author, 'acme', 1, 1, 1);
    const parentId = parent(p).id as string;
    const created = await whileUncommitted([lockPrograms(p.id, q.id), move(parentId, q)], () => ok(x.author, create, args(parentId)));
    expect(created.program_id).toBe(q.id);
    await invariants();
  });
});

racing(`a first submission racing a move or an archive of its activity (${TWO_CONNECTIONS})`, () => {
  /** The activity's lesson, program and archived state, and those of its results. */
  const stateOf = async (activityId: string) =>
    x.w.t.db.query<Record<string, unknown>>(
      `select a.lesson_id, a.program_id, a.archived, r.lesson_id as result_lesson_id, r.program_id as result_program_id
         from activities a left join activity_results r on r.tenant_id = a.tenant_id and r.activity_id = a.id
        where a.id = $1`,
      [activityId],
    );

  it('a move to another program commits first: the result is recorded in the new lesson and program', async () => {
    const p = await importTree(x.author, 'acme', 1, 1, 1);
    const q = await importTree(x.author, 'acme', 1, 1, 1);
    const a = p.units[0].lessons[0].activities[0];
    const target = q.units[0].lessons[0];
    const learner = await learnerSession(x.w, 'racer-move');
    const judged = await whileUncommitted(
      [lockPrograms(p.id, q.id), ['update activities set lesson_id = $2, position = null where id = $1', [a.id, target.id]]],
      () => submit(x.w, learner, a.id),
    );
    expect(judged.status).toBe(200);
    expect(await stateOf(a.id)).toEqual([{ lesson_id: target.id, program_id: q.id, archived: false, result_lesson_id: target.id, result_program_id: q.id }]);
  });

  it.each([
    { archive: 'archive_activity (its order lock first, then the update)', table: 'activities', locked: true, target: (l: Structured) => l.activities[0].id },
    { archive: 'a console archiving the lesson (no lock taken first)', table: 'lessons', locked: false, target: (l: Structured) => l.id },
  ])('$archive commits first: the submission is refused (409 archived), nothing recorded', async ({ table, locked, target }) => {
    const p = await importTree(x.author, 'acme', 1, 1, 1);
    const lesson = p.units[0].lessons[0];
    const a = lesson.activities[0];
    const learner = await learnerSession(x.w, `racer-archive-${table}`);
    const archive: [string, unknown[]] = [`update ${table} set archived_at = now() where id = $1`, [target(lesson)]];
    const judged = await whileUncommitted(locked ? [lockPrograms(p.id), archive] : [archive], () => submit(x.w, learner, a.id));
    expectError(judged, 409, 'archived');
    expect(judged.body.error.message).toBe(`activity ${a.id} is archived: it no longer accepts submissions`);
    expect(await stateOf(a.id)).toEqual([{ lesson_id: lesson.id, program_id: p.id, archived: true, result_lesson_id: null, result_program_id: null }]);
  });

  it('a submission not yet committed: a move to another program waits for it, then refuses', async () => {
    const p = await importTree(x.author, 'acme', 1, 1, 1);
    const q = await importTree(x.author, 'acme', 1, 1, 1);
    const a = p.units[0].lessons[0].activities[0];
    await learnerSession(x.w, 'racer-first');
    const [learner] = await x.w.t.db.query<{ tenant_id: string; user_id: string }>(
      `select t.id as tenant_id, u.id as user_id
         from tenants t, users u join auth.identities i on i.user_id = u.auth_user_id
        where t.slug = 'acme' and i.provider_id = 'racer-first'`,
    );
    // the judge's step 1, statement by statement: the activity's program locked (shared), its result
    const moveText = await whileUncommitted(
      [
        ['select svc.lock_activity_program($1, $2)', [a.id, learner!.tenant_id]],
        [
          `insert into activity_results (tenant_id, activity_id, lesson_id, program_id, user_id, status)
           values ($1, $2, $3, $4, $5, 'in_progress')`,
          [learner!.tenant_id, a.id, p.units[0].lessons[0].id, p.id, learner!.user_id],
        ],
      ],
      () => fails(x.author, 'move_activity', { id: a.id, lesson_id: q.units[0].lessons[0].id }),
    );
    expect(moveText).toBe(`activity ${a.id} cannot move to another program: learners have results on it; move it within its program, or archive it`);
    expect(await stateOf(a.id)).toEqual([
      { lesson_id: p.units[0].lessons[0].id, program_id: p.id, archived: false, result_lesson_id: p.units[0].lessons[0].id, result_program_id: p.id },
    ]);
  });
});
