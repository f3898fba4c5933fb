/**
 * The bounded reads and search_content on a small program (issue #16): what each answers at
 * each depth, bad input (a depth not allowed, a 100 KB search string, unknown and foreign ids) as
 * `isError` results naming the problem, search within the caller's tenants only (another
 * tenant's content and the catalog never match), and honest tool names and annotations.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { useApp } from '../helpers/harness.ts';
import { contentSnapshot, useAuthorClient, fails, ok, type Structured } from './helpers.ts';

const t = useApp();
const a = useAuthorClient(t, 'acme');
const b = useAuthorClient(t, 'beta');
let x: { program: Structured; unit: Structured; lesson: Structured; activities: Structured[] };
const GHOST = '00000000-0000-7000-8000-000000000000';

beforeAll(async () => {
  const program = await ok(a, 'create_program', { tenant: 'acme', title: 'Web basics', description: 'HTML and CSS' });
  const unit = await ok(a, 'create_unit', { program_id: program.id, title: 'Flexbox layouts', description: 'Boxes' });
  const lesson = await ok(a, 'create_lesson', { unit_id: unit.id, title: 'Axes', body: '# Main axis and cross axis' });
  const activities = [
    await ok(a, 'create_activity', {
      lesson_id: lesson.id,
      title: 'Holy grail',
      kind: 'site',
      spec: 'Build a page with a header, 100%_wide footer and three columns using flexbox.',
      rubric: [{ criterion: 'Three columns' }],
    }),
    await ok(a, 'create_activity', {
      lesson_id: lesson.id,
      title: 'Explain justify-content',
      kind: 'document',
      spec: 'Explain the values.',
      rubric: [{ criterion: 'All values', weight: 2 }],
    }),
  ];
  x = { program, unit, lesson, activities };
  // another tenant's content and a catalog program with the same words: never found by acme's search
  const beta = await ok(b, 'create_program', { tenant: 'beta', title: 'Flexbox for beta' });
  await ok(b, 'create_unit', { program_id: beta.id, title: 'Flexbox secrets' });
  await t.db.query(`insert into programs (tenant_id, title) values (null, 'Flexbox catalog')`);
});

describe('get_program, get_unit, get_lesson, get_activity', () => {
  it('answer the record in full and an outline below it by default', async () => {
    const program = await ok(a, 'get_program', { id: x.program.id });
    expect(program).toMatchObject({ id: x.program.id, description: 'HTML and CSS', depth: 'outline', counts: { units: 1, lessons: 1, activities: 2 } });
    expect(program.units).toEqual([
      {
        id: x.unit.id,
        title: 'Flexbox layouts',
        position: 1,
        lessons: [
          {
            id: x.lesson.id,
            title: 'Axes',
            position: 1,
            activities: [
              { id: x.activities[0]!.id, title: 'Holy grail', position: 1, kind: 'site' },
              { id: x.activities[1]!.id, title: 'Explain justify-content', position: 2, kind: 'document' },
            ],
          },
        ],
      },
    ]);

    const unit = await ok(a, 'get_unit', { id: x.unit.id });
    expect(unit).toMatchObject({ ...x.unit, depth: 'outline', counts: { lessons: 1, activities: 2 } });
    expect(unit.lessons).toEqual([program.units[0].lessons[0]]);

    const lesson = await ok(a, 'get_lesson', { id: x.lesson.id });
    expect(lesson).toMatchObject({ ...x.lesson, body: '# Main axis and cross axis', counts: { activities: 2 } });
    expect(lesson.activities).toEqual(program.units[0].lessons[0].activities);

    expect(await ok(a, 'get_activity', { id: x.activities[1]!.id })).toEqual(x.activities[1]);
  });

  it('answer every record below in full at depth full', async () => {
    const program = await ok(a, 'get_program', { id: x.program.id, depth: 'full' });
    expect(program.depth).toBe('full');
    expect(program.units[0]).toMatchObject({ ...x.unit, updated_at: expect.any(String) });
    expect(program.units[0].lessons[0].activities).toEqual(x.activities);
    const lesson = await ok(a, 'get_lesson', { id: x.lesson.id, depth: 'full' });
    expect(lesson.activities).toEqual(x.activities);
    const unit = await ok(a, 'get_unit', { id: x.unit.id, depth: 'full' });
    expect(unit.lessons[0]).toMatchObject({ body: '# Main axis and cross axis', activities: x.activities });
  });

  it('refuse a depth that is not allowed, naming the field and the allowed values', async () => {
    for (const name of ['get_program', 'get_unit', 'get_lesson']) {
      for (const depth of ['everything', 'FULL', 3, null]) {
        const text = await fails(a, name, { id: x.program.id, depth });
        expect(text).toMatch(new RegExp(`^Invalid arguments for tool ${name}: [\\s\\S]*"outline"\\|"full"[\\s\\S]*→ at depth`));
      }
    }
    expect(await fails(a, 'get_activity', { id: x.activities[0]!.id, depth: 'full' })).toMatch(/Unrecognized key: "depth"/);
  });

  it('say "not found" for unknown ids, another tenant\'s ids and ids of another record type', async () => {
    const before = await contentSnapshot(t);
    for (const name of ['program', 'unit', 'lesson', 'activity']) {
      expect(await fails(a, `get_${name}`, { id: GHOST })).toBe(`${name} ${GHOST} not found`);
    }
    for (const [name, id] of [
      ['program', x.program.id],
      ['unit', x.unit.id],
      ['lesson', x.lesson.id],
      ['activity', x.activities[0]!.id],
    ]) {
      expect(await fails(b, `get_${name}`, { id })).toBe(`${name} ${id} not found`); // exactly like an id that does not exist
    }
    expect(await fails(a, 'get_unit', { id: x.lesson.id })).toBe(`unit ${x.lesson.id} not found (that id is a lesson)`);
    expect(await fails(a, 'get_activity', { id: x.unit.id })).toBe(`activity ${x.unit.id} not found (that id is a unit)`);
    expect(await fails(a, 'get_lesson', { id: 'not-a-uuid' })).toMatch(/^Invalid arguments for tool get_lesson: [\s\S]*→ at id/);
    expect(await contentSnapshot(t)).toEqual(before);
  });
});

describe('search_content', () => {
  it("finds titles of every record type and activity specs, within the caller's tenants only", async () => {
    const found = await ok(a, 'search_content', { query: 'FLEXBOX' });
    expect(found.results).toEqual([
      { record: 'unit', id: x.unit.id, program_id: x.program.id, tenant: 'acme', title: 'Flexbox layouts', position: 1, kind: null, snippet: null },
      {
        record: 'activity',
        id: x.activities[0]!.id,
        program_id: x.program.id,
        tenant: 'acme',
        title: 'Holy grail',
        position: 1,
        kind: 'site',
        snippet: expect.stringContaining('three columns using flexbox'),
      },
    ]);
    expect(found.next_cursor).toBeNull();
    // beta's author finds beta's content and nothing of acme's; nobody finds the catalog
    const beta = await ok(b, 'search_content', { query: 'flexbox' });
    expect(beta.results.map((r: Structured) => [r.record, r.title])).toEqual([
      ['program', 'Flexbox for beta'],
      ['unit', 'Flexbox secrets'],
    ]);
    expect(await fails(a, 'search_content', { query: 'flexbox', tenant: 'beta' })).toBe('tenant not found: beta');
  });

  it('takes %, _ and \\ literally', async () => {
    expect((await ok(a, 'search_content', { query: '100%_wide' })).results.map((r: Structured) => r.title)).toEqual(['Holy grail']);
    expect((await ok(a, 'search_content', { query: '%' })).results.map((r: Structured) => r.title)).toEqual(['Holy grail']);
    expect((await ok(a, 'search_content', { query: '_' })).results.map((r: Structured) => r.title)).toEqual(['Holy grail']);
    expect((await ok(a, 'search_content', { query: '\\' })).results).toEqual([]);
  });

  it('pages with an opaque cursor', async () => {
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await ok(a, 'search_content', { query: 'e', limit: 2, ...(cursor ? { cursor } : {}) });
      expect(page.results.length).toBeLessThanOrEqual(2);
      seen.push(...page.results.map((r: Structured) => `${r.record}:${r.title}`));
      cursor = page.next_cursor ?? undefined;
    } while (cursor);
    expect(seen).toEqual(['program:Web basics', 'unit:Flexbox layouts', 'lesson:Axes', 'activity:Holy grail', 'activity:Explain justify-content']);
    expect(await fails(a, 'search_content', { query: 'e', cursor: 'bm9wZQ' })).toMatch(/malformed cursor/);
  });

  it('refuses a page larger than the answer bound, pointing to a smaller limit', async () => {
    const title = `Zq${'x'.repeat(498)}`;
    const activities = Array.from({ length: 100 }, () => ({ title, kind: 'document', spec: 'S', rubric: [{ criterion: 'c' }] }));
    await ok(a, 'import_program', {
      tenant: 'acme',
      external_id: 'long-titles',
      title: 'Long titles',
      units: [{ title: 'U', lessons: [{ title: 'L', activities }] }],
    });
    expect(await fails(a, 'search_content', { query: 'Zqxxx', limit: 100 })).toMatch(
      /^answer too large: this page of matches is [\d,]+ characters, more than the 100,000 one answer may hold; ask for a smaller limit$/,
    );
    expect((await ok(a, 'search_content', { query: 'Zqxxx' })).results).toHaveLength(20);
  });

  it('refuses a 100 KB query, an empty one and a missing one, naming the field', async () => {
    const huge = await fails(a, 'search_content', { query: 'flexbox '.repeat(12_800) });
    expect(huge).toMatch(/^Invalid arguments for tool search_content: [\s\S]*200[\s\S]*→ at query/);
    expect(huge.length).toBeLessThan(2_000); // the query is not echoed back
    expect(await fails(a, 'search_content', { query: '   ' })).toMatch(/→ at query/);
    expect(await fails(a, 'search_content', {})).toMatch(/→ at query/);
  });
});

describe('names and annotations', () => {
  it('read correctly, and updates are destructive', async () => {
    const { tools } = await a.listTools();
    const byName = new Map(tools.map((tool) => [tool.name, tool]));
    expect(byName.get('update_activity')!.title).toBe('Update an activity');
    expect(byName.get('delete_activity')!.title).toBe('Delete an activity');
    expect(byName.get('update_unit')!.title).toBe('Update a unit');
    for (const name of ['update_program', 'update_unit', 'update_lesson', 'update_activity']) {
      expect(byName.get(name)!.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true, idempotentHint: true });
    }
    for (const name of ['get_program', 'get_unit', 'get_lesson', 'get_activity', 'search_content']) {
      expect(byName.get(name)!.annotations).toMatchObject({ readOnlyHint: true });
    }
    expect(byName.get('get_program')!.inputSchema.properties!.depth).toMatchObject({ enum: ['outline', 'full'], default: 'outline' });
  });
});
