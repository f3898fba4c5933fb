/** The authoring tools through the MCP SDK's client: listing, CRUD, pages, instantiation (order: positions.test.ts). */
import { describe, expect, it } from 'vitest';
import { useApp, useFixture } from '../helpers/harness.ts';
import { contentCounts, fails, ok, useAuthor } from './helpers.ts';

const t = useApp();
const author = useAuthor(t, 'acme');
const client = useFixture(async () => author.client);

const ALL_TOOLS = [
  'whoami',
  'list_tenants',
  'list_programs',
  'get_program',
  'get_unit',
  'get_lesson',
  'get_activity',
  'search_content',
  'create_program',
  'update_program',
  'delete_program',
  'create_unit',
  'update_unit',
  'delete_unit',
  'create_lesson',
  'update_lesson',
  'delete_lesson',
  'create_activity',
  'update_activity',
  'delete_activity',
  'instantiate_program',
  'import_program',
  'archive_program',
  'archive_unit',
  'archive_lesson',
  'archive_activity',
  'unarchive_program',
  'unarchive_unit',
  'unarchive_lesson',
  'unarchive_activity',
  'move_unit',
  'move_lesson',
  'move_activity',
  'add_calibration_example',
  'list_calibration_examples',
  'delete_calibration_example',
  'run_calibration',
  'get_calibration_report',
  'set_grading',
  'override_verdict',
  'list_reviews',
  'resolve_review',
];

describe('tools/list', () => {
  it('shows the 42 tools with schemas, descriptions and annotations', async () => {
    const { tools } = await client.listTools();
    expect(tools.map((x) => x.name).sort()).toEqual([...ALL_TOOLS].sort());
    for (const tool of tools) {
      expect(tool.description, tool.name).toBeTruthy();
      expect(tool.title, tool.name).toBeTruthy();
      expect(tool.outputSchema?.type, tool.name).toBe('object');
      expect(tool.inputSchema.additionalProperties, `${tool.name} input is strict`).toBe(false);
      for (const [field, schema] of Object.entries(tool.inputSchema.properties ?? {})) {
        expect((schema as { description?: string }).description, `${tool.name}.${field} is described`).toBeTruthy();
      }
      const a = tool.annotations!;
      if (/^(whoami|list_|get_|search_)/.test(tool.name)) expect(a.readOnlyHint, tool.name).toBe(true);
      else expect(a.readOnlyHint, tool.name).toBe(false);
      // updates overwrite what they change (a graded activity's spec and rubric), moves rewrite two parents' order: destructive too
      // an override or a resolved review overwrites a learner's verdict (audited, not idempotent)
      if (/^(update_|delete_|move_|override_|resolve_)/.test(tool.name)) expect(a.destructiveHint, tool.name).toBe(true);
      else if (!a.readOnlyHint) expect(a.destructiveHint, tool.name).toBe(false);
      if (/^(update_|delete_|import_|archive_|unarchive_|move_)/.test(tool.name)) expect(a.idempotentHint, tool.name).toBe(true);
      if (/^(create_|instantiate_|override_|resolve_)/.test(tool.name)) expect(a.idempotentHint, tool.name).toBe(false);
    }
    const create = tools.find((x) => x.name === 'create_activity')!;
    expect(create.inputSchema.required?.sort()).toEqual(['kind', 'lesson_id', 'rubric', 'spec', 'title']);
  });
});

describe('whoami and list_tenants', () => {
  it('tell who the caller is and where they may write', async () => {
    const me = await ok(client, 'whoami');
    expect(me).toEqual({
      user_id: author.user.id,
      email: author.email,
      svc_user_id: expect.any(String),
      memberships: [{ tenant: 'acme', tenant_id: author.tenant.id, role: 'author' }],
    });
    const [row] = await t.db.query<{ id: string }>('select id from users where auth_user_id = $1', [author.user.id]);
    expect(me.svc_user_id).toBe(row!.id);
    const { tenants } = await ok(client, 'list_tenants');
    expect(tenants).toEqual([{ id: author.tenant.id, slug: 'acme', name: 'Tenant acme', role: 'author' }]);
  });
});

describe('create, read, update, delete', () => {
  it('runs the full cycle on all four record types', async () => {
    const program = await ok(client, 'create_program', { tenant: 'acme', title: 'Web basics', description: 'HTML & CSS' });
    expect(program).toMatchObject({ tenant_id: author.tenant.id, title: 'Web basics', description: 'HTML & CSS', source_program_id: null });
    expect(program.id).toMatch(/^[0-9a-f-]{36}$/);

    const unit = await ok(client, 'create_unit', { program_id: program.id, title: 'HTML' });
    expect(unit).toMatchObject({ program_id: program.id, tenant_id: author.tenant.id, position: 1, description: null });
    const lesson = await ok(client, 'create_lesson', { unit_id: unit.id, title: 'Elements', body: '# Elements' });
    expect(lesson).toMatchObject({ unit_id: unit.id, program_id: program.id, tenant_id: author.tenant.id, position: 1 });
    const activity = await ok(client, 'create_activity', {
      lesson_id: lesson.id,
      title: 'Build a page',
      kind: 'site',
      spec: 'Publish a page with three headings.',
      rubric: [{ criterion: 'Has three headings', weight: 2 }, { criterion: 'Is valid HTML' }],
    });
    expect(activity).toMatchObject({
      lesson_id: lesson.id,
      program_id: program.id,
      tenant_id: author.tenant.id,
      kind: 'site',
      pass_threshold: 70,
      position: 1,
      rubric: [
        { criterion: 'Has three headings', weight: 2 },
        { criterion: 'Is valid HTML', weight: 1 },
      ],
    });

    // update: only the fields given change; null clears a text field
    const renamed = await ok(client, 'update_program', { id: program.id, title: 'Web foundations', description: null });
    expect(renamed).toMatchObject({ id: program.id, title: 'Web foundations', description: null });
    expect(renamed.updated_at > program.updated_at || renamed.updated_at === program.updated_at).toBe(true);
    expect(await ok(client, 'update_unit', { id: unit.id, description: 'Markup' })).toMatchObject({ title: 'HTML', description: 'Markup' });
    expect(await ok(client, 'update_lesson', { id: lesson.id, body: 'new body', position: 1 })).toMatchObject({ body: 'new body', position: 1 });
    const changed = await ok(client, 'update_activity', {
      id: activity.id,
      kind: 'repo',
      pass_threshold: 85,
      rubric: [{ criterion: 'Tests pass', weight: 0 }],
    });
    expect(changed).toMatchObject({ kind: 'repo', pass_threshold: 85, spec: activity.spec, rubric: [{ criterion: 'Tests pass', weight: 0 }] });

    const tree = await ok(client, 'get_program', { id: program.id, depth: 'full' });
    expect(tree.title).toBe('Web foundations');
    expect(tree.units[0].lessons[0].activities[0]).toMatchObject({ id: activity.id, kind: 'repo' });

    // delete, bottom up and then the cascade from the top
    expect(await ok(client, 'delete_activity', { id: activity.id })).toMatchObject({ id: activity.id });
    expect(await fails(client, 'delete_activity', { id: activity.id })).toBe(`activity ${activity.id} not found`);
    expect(await ok(client, 'delete_lesson', { id: lesson.id })).toMatchObject({ id: lesson.id });
    const unit2 = await ok(client, 'create_unit', { program_id: program.id, title: 'CSS' });
    const lesson2 = await ok(client, 'create_lesson', { unit_id: unit2.id, title: 'Selectors' });
    expect(await ok(client, 'delete_unit', { id: unit.id })).toMatchObject({ id: unit.id });
    expect(await ok(client, 'delete_program', { id: program.id })).toMatchObject({ id: program.id });
    expect(await fails(client, 'get_program', { id: program.id })).toBe(`program ${program.id} not found`);
    const [left] = await t.db.query<{ n: number }>('select count(*)::int as n from lessons where id = $1', [lesson2.id]);
    expect(left!.n).toBe(0);
  });

  it('names a missing parent as not found and writes nothing', async () => {
    const before = await contentCounts(t);
    const ghost = '0190a8b4-0000-7000-8000-000000000000';
    expect(await fails(client, 'create_unit', { program_id: ghost, title: 'x' })).toBe(`program ${ghost} not found`);
    expect(await fails(client, 'create_lesson', { unit_id: ghost, title: 'x' })).toBe(`unit ${ghost} not found`);
    expect(await fails(client, 'create_activity', { lesson_id: ghost, title: 'x', kind: 'document', spec: 's', rubric: [{ criterion: 'c' }] })).toBe(
      `lesson ${ghost} not found`,
    );
    expect(await fails(client, 'update_unit', { id: ghost, title: 'x' })).toBe(`unit ${ghost} not found`);
    expect(await fails(client, 'create_program', { tenant: 'nowhere', title: 'x' })).toBe('tenant not found: nowhere');
    expect(await contentCounts(t)).toEqual(before);
  });

  it('refuses to delete an activity that has learner results', async () => {
    const program = await ok(client, 'create_program', { tenant: 'acme', title: 'Graded' });
    const unit = await ok(client, 'create_unit', { program_id: program.id, title: 'U' });
    const lesson = await ok(client, 'create_lesson', { unit_id: unit.id, title: 'L' });
    const activity = await ok(client, 'create_activity', {
      lesson_id: lesson.id,
      title: 'A',
      kind: 'document',
      spec: 'Write',
      rubric: [{ criterion: 'c' }],
    });
    await t.db.query(
      `insert into activity_results (tenant_id, activity_id, lesson_id, program_id, user_id, status, score)
       select $1, $2, $3, $4, u.id, 'completed', 90 from users u where u.auth_user_id = $5`,
      [author.tenant.id, activity.id, lesson.id, program.id, author.user.id],
    );
    expect(await fails(client, 'delete_activity', { id: activity.id })).toBe(`activity ${activity.id} cannot be deleted: it has learner results`);
    expect(await fails(client, 'delete_program', { id: program.id })).toBe(`program ${program.id} cannot be deleted: an activity in it has learner results`);
    const [row] = await t.db.query<{ n: number }>('select count(*)::int as n from activities where id = $1', [activity.id]);
    expect(row!.n).toBe(1);
  });
});

describe('list_programs', () => {
  it('pages with an opaque cursor and filters by tenant', async () => {
    const created = [];
    for (let i = 0; i < 5; i++) created.push(await ok(client, 'create_program', { tenant: 'acme', title: `Paged ${i}` }));
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await ok(client, 'list_programs', { tenant: 'acme', limit: 2, ...(cursor ? { cursor } : {}) });
      expect(page.programs.length).toBeLessThanOrEqual(2);
      for (const p of page.programs) {
        expect(p.tenant).toBe('acme');
        seen.push(p.id);
      }
      cursor = page.next_cursor ?? undefined;
      pages++;
    } while (cursor);
    const [all] = await t.db.query<{ ids: string[] }>(`select array_agg(id::text order by created_at, id) as ids from programs where tenant_id = $1`, [
      author.tenant.id,
    ]);
    expect(seen).toEqual(all!.ids);
    expect(pages).toBeGreaterThanOrEqual(3);
    expect(seen).toEqual(expect.arrayContaining(created.map((p) => p.id)));
    expect(await fails(client, 'list_programs', { cursor: 'bm9wZQ' })).toMatch(/malformed cursor/);
  });
});

describe('list_tenants', () => {
  it('pages by slug with an opaque cursor', async () => {
    for (const slug of ['t-a', 't-b', 't-c', 't-d']) {
      await t.op('tenant.create', { slug });
      await t.op('author.grant', { tenant: slug, email: author.email });
    }
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await ok(client, 'list_tenants', { limit: 2, ...(cursor ? { cursor } : {}) });
      expect(page.tenants.length).toBeLessThanOrEqual(2);
      seen.push(...page.tenants.map((x: { slug: string; role: string }) => `${x.slug}:${x.role}`));
      cursor = page.next_cursor ?? undefined;
    } while (cursor);
    expect(seen).toEqual(['acme:author', 't-a:author', 't-b:author', 't-c:author', 't-d:author']);
    expect(await fails(client, 'list_tenants', { cursor: 'eyJ4IjoxfQ' })).toMatch(/malformed cursor/);
  });
});

describe('instantiate_program', () => {
  async function insertCatalogProgram(): Promise<string> {
    const [p] = await t.db.query<{ id: string }>(
      `insert into programs (tenant_id, title, description) values (null, 'Catalog: Git', 'Version control') returning id`,
    );
    // units in reverse creation order (the second inserted at position 1) to prove the copy follows positions
    const [u2] = await t.db.query<{ id: string }>(`insert into units (program_id, title) values ($1, 'Branches') returning id`, [p!.id]);
    const [u1] = await t.db.query<{ id: string }>(`insert into units (program_id, title, position) values ($1, 'Commits', 1) returning id`, [p!.id]);
    const [l1] = await t.db.query<{ id: string }>(`insert into lessons (unit_id, title, body) values ($1, 'First commit', 'git commit') returning id`, [
      u1!.id,
    ]);
    await t.db.query(`insert into lessons (unit_id, title) values ($1, 'Merging')`, [u2!.id]);
    await t.db.query(
      `insert into activities (lesson_id, title, kind, spec, rubric, pass_threshold) values
         ($1, 'Make a repo', 'repo', 'Push a repo', '[{"criterion":"Has commits","weight":1}]', 60),
         ($1, 'Explain', 'document', 'Explain staging', '[{"criterion":"Mentions the index","weight":3}]', 70)`,
      [l1!.id],
    );
    return p!.id;
  }

  it('copies a catalog program into the caller tenant', async () => {
    const catalogId = await insertCatalogProgram();
    const listed = await ok(client, 'list_programs', {});
    expect(listed.programs.find((p: any) => p.id === catalogId)).toMatchObject({ tenant: null, tenant_id: null });

    const copy = await ok(client, 'instantiate_program', { program_id: catalogId, tenant: 'acme' });
    expect(copy).toMatchObject({
      tenant_id: author.tenant.id,
      title: 'Catalog: Git',
      description: 'Version control',
      source_program_id: catalogId,
      counts: { units: 2, lessons: 2, activities: 2 },
    });
    const source = await ok(client, 'get_program', { id: catalogId, depth: 'full' });
    const tree = await ok(client, 'get_program', { id: copy.id, depth: 'full' });
    const shape = (p: any) =>
      p.units.map((u: any) => ({
        title: u.title,
        lessons: u.lessons.map((l: any) => ({
          title: l.title,
          body: l.body,
          activities: l.activities.map((a: any) => ({ title: a.title, kind: a.kind, spec: a.spec, rubric: a.rubric, pass_threshold: a.pass_threshold })),
        })),
      }));
    expect(shape(tree)).toEqual(shape(source));
    expect(tree.units.map((u: any) => u.title)).toEqual(['Commits', 'Branches']);
    expect(tree.units.map((u: any) => u.position)).toEqual([1, 2]);
    for (const u of tree.units) {
      expect(u.tenant_id).toBe(author.tenant.id);
      for (const l of u.lessons) {
        expect(l).toMatchObject({ tenant_id: author.tenant.id, program_id: copy.id, unit_id: u.id });
        for (const a of l.activities) expect(a).toMatchObject({ tenant_id: author.tenant.id, program_id: copy.id, lesson_id: l.id });
      }
    }
    // the catalog is read-only for tenant authors
    expect(await fails(client, 'update_program', { id: catalogId, title: 'mine' })).toBe('not allowed: you are not an author of that tenant');
    expect(await fails(client, 'create_unit', { program_id: catalogId, title: 'mine' })).toBe('not allowed: you are not an author of that tenant');
  });

  it('copies a program of a tenant the caller only reads (learner there) into one they author', async () => {
    await t.op('tenant.create', { slug: 'gamma' });
    const [source] = await t.db.query<{ id: string }>(
      `with p as (insert into programs (tenant_id, title) select id, 'Gamma course' from tenants where slug = 'gamma' returning id),
            u as (insert into units (program_id, title) select id, 'G1' from p returning id)
       select (select id from p) as id`,
    );
    expect(await fails(client, 'instantiate_program', { program_id: source!.id, tenant: 'acme' })).toBe(`program ${source!.id} not found`);
    await t.db.query(
      `insert into memberships (tenant_id, user_id, role) select t.id, u.id, 'learner' from tenants t, users u where t.slug = 'gamma' and u.auth_user_id = $1`,
      [author.user.id],
    );
    const copy = await ok(client, 'instantiate_program', { program_id: source!.id, tenant: 'acme' });
    expect(copy).toMatchObject({ tenant_id: author.tenant.id, source_program_id: source!.id, counts: { units: 1, lessons: 0, activities: 0 } });
    expect(await fails(client, 'instantiate_program', { program_id: copy.id, tenant: 'gamma' })).toBe('not allowed: you are not an author of that tenant');
  });

  it('copies the caller own program with a new title', async () => {
    const program = await ok(client, 'create_program', { tenant: 'acme', title: 'Original' });
    const unit = await ok(client, 'create_unit', { program_id: program.id, title: 'U' });
    await ok(client, 'create_lesson', { unit_id: unit.id, title: 'L' });
    const copy = await ok(client, 'instantiate_program', { program_id: program.id, tenant: 'acme', title: 'Copy' });
    expect(copy).toMatchObject({ title: 'Copy', source_program_id: program.id, counts: { units: 1, lessons: 1, activities: 0 } });
    const tree = await ok(client, 'get_program', { id: copy.id, depth: 'full' });
    expect(tree.units[0].lessons[0].title).toBe('L');
    expect(tree.units[0].id).not.toBe(unit.id);
  });
});
