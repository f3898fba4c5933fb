/**
 * import_program (bulk content injection) and external ids: a whole tree in one transaction,
 * all or nothing; idempotent by the caller's external_id (same content → the program already
 * imported, nothing written; other content → refused); duplicate external ids refused before any
 * write; concurrent identical imports write once. Also external ids on the create_* tools.
 */
import { describe, expect, it } from 'vitest';
import { backend, useApp } from '../helpers/harness.ts';
import { useAuthorClient, contentCounts, contentShape, fails, ok, type Structured } from './helpers.ts';

const t = useApp();
const client = useAuthorClient(t);

const rubric = [{ criterion: 'Explains the idea', weight: 2 }, { criterion: 'Gives an example' }];
/** A two-unit program with external ids at every level. */
const program = (externalId: string, extra: Record<string, unknown> = {}) => ({
  tenant: 'acme',
  external_id: externalId,
  title: 'Git basics',
  description: 'Version control',
  units: [
    {
      external_id: 'u-commits',
      title: 'Commits',
      lessons: [
        {
          external_id: 'l-first',
          title: 'First commit',
          body: '# git commit',
          activities: [
            { external_id: 'a-repo', title: 'Make a repo', kind: 'repo', spec: 'Push a repository', rubric, pass_threshold: 60 },
            { external_id: 'a-explain', title: 'Explain staging', kind: 'document', spec: 'Explain the index', rubric },
          ],
        },
        { external_id: 'l-log', title: 'Reading the log' },
      ],
    },
    { external_id: 'u-branches', title: 'Branches', description: 'Working apart', lessons: [] },
  ],
  ...extra,
});

/** Expect an invalid-arguments `isError` result whose text matches, and nothing written. */
async function expectInvalid(args: Record<string, unknown>, message: RegExp) {
  const before = await contentCounts(t);
  const text = await fails(client, 'import_program', args);
  expect(text).toMatch(/^Invalid arguments for tool import_program/);
  expect(text).toMatch(message);
  expect(await contentCounts(t)).toEqual(before);
}

describe('import_program', () => {
  it('writes the whole tree in order and answers an outline that maps external ids to ids', async () => {
    const before = await contentCounts(t);
    const imported = await ok(client, 'import_program', program('git-1'));
    expect(imported).toMatchObject({
      created: true,
      external_id: 'git-1',
      title: 'Git basics',
      description: 'Version control',
      counts: { units: 2, lessons: 2, activities: 2 },
    });
    expect(imported).not.toHaveProperty('import_digest');
    expect(imported.units.map((u: Structured) => [u.external_id, u.position])).toEqual([
      ['u-commits', 1],
      ['u-branches', 2],
    ]);
    expect(imported.units[0].lessons[0].activities.map((a: Structured) => [a.external_id, a.position])).toEqual([
      ['a-repo', 1],
      ['a-explain', 2],
    ]);
    expect(await contentCounts(t)).toEqual({
      programs: before.programs + 1,
      units: before.units + 2,
      lessons: before.lessons + 2,
      activities: before.activities + 2,
    });

    const tree = await ok(client, 'get_program', { id: imported.id, depth: 'full' });
    const filled = rubric.map((r) => ({ weight: 1, ...r })); // the default weight is stored
    expect(contentShape(tree.units)).toEqual([
      {
        title: 'Commits',
        description: null,
        lessons: [
          {
            title: 'First commit',
            body: '# git commit',
            activities: [
              { title: 'Make a repo', kind: 'repo', spec: 'Push a repository', rubric: filled },
              { title: 'Explain staging', kind: 'document', spec: 'Explain the index', rubric: filled },
            ],
          },
          { title: 'Reading the log', body: null, activities: [] },
        ],
      },
      { title: 'Branches', description: 'Working apart', lessons: [] },
    ]);
    const activity = tree.units[0].lessons[0].activities[0];
    expect(activity).toMatchObject({ external_id: 'a-repo', pass_threshold: 60, program_id: imported.id, tenant_id: imported.tenant_id });
    expect(tree.units[0].lessons[0].activities[1].pass_threshold).toBe(70); // the default
    expect(imported.units[0].lessons[0].activities[0].id).toBe(activity.id);
  });

  it('is idempotent: the same external_id and content (in any key order) writes nothing', async () => {
    const first = await ok(client, 'import_program', program('git-2'));
    const before = await contentCounts(t);
    const { units, tenant, ...rest } = program('git-2');
    const reordered = { units, ...rest, tenant }; // other key order, same content
    const again = await ok(client, 'import_program', reordered);
    expect(again).toMatchObject({ created: false, id: first.id, counts: first.counts });
    expect(again.units).toEqual(first.units);
    expect(await contentCounts(t)).toEqual(before);
  });

  it('refuses the same external_id with other content, and writes nothing', async () => {
    const first = await ok(client, 'import_program', program('git-3'));
    const before = await contentCounts(t);
    expect(await fails(client, 'import_program', program('git-3', { title: 'Git basics, revised' }))).toBe(
      `external_id already used: program ${first.id} of acme has external_id "git-3" and other content; ` +
        'delete it first (delete_program) or import under another external_id',
    );
    expect(await contentCounts(t)).toEqual(before);
    // a program made with create_program under that id is "other content" too
    await ok(client, 'create_program', { tenant: 'acme', title: 'Hand made', external_id: 'hand-made' });
    expect(await fails(client, 'import_program', program('hand-made'))).toMatch(/^external_id already used: program .* has external_id "hand-made"/);
  });

  it('is all or nothing: a value the database refuses deep in the tree leaves nothing behind', async () => {
    const before = await contentCounts(t);
    const bad = program('git-bad');
    bad.units[0]!.lessons[0]!.activities![1]!.spec = 'Explain the index\u0000';
    expect(await fails(client, 'import_program', bad)).toMatch(/^invalid value/);
    expect(await contentCounts(t)).toEqual(before);
    const [row] = await t.db.query<{ n: number }>(`select count(*)::int as n from programs where external_id = 'git-bad'`);
    expect(row!.n).toBe(0);
    // and the same import, corrected, then works under that external_id
    expect((await ok(client, 'import_program', program('git-bad'))).created).toBe(true);
  });

  it('refuses duplicate external ids in the tree before writing, saying where', async () => {
    const dup = program('git-dup');
    dup.units[1]!.external_id = 'u-commits';
    await expectInvalid(dup, /duplicate external_id "u-commits" \(first used at units\[0\]\).*at units\[1\]\.external_id/s);
    const dupActivity = program('git-dup');
    dupActivity.units[0]!.lessons[0]!.activities![1]!.external_id = 'a-repo';
    await expectInvalid(dupActivity, /duplicate external_id "a-repo"/);
  });

  it('refuses bad input anywhere in the tree as invalid arguments', async () => {
    const noExternalId: Record<string, unknown> = program('x');
    delete noExternalId.external_id;
    await expectInvalid(noExternalId, /external_id/);
    const badKind = program('git-kind');
    (badKind.units[0]!.lessons[0]!.activities![0] as Structured).kind = 'video';
    await expectInvalid(badKind, /expected one of .*at units\[0\]\.lessons\[0\]\.activities\[0\]\.kind/s);
    const extra = program('git-extra');
    (extra.units[0]!.lessons[0] as Structured).position = 3;
    await expectInvalid(extra, /Unrecognized key.*position/s);
    const tooMany = { ...program('git-big'), units: [{ title: 'U', lessons: Array.from({ length: 20_001 }, () => ({ title: 'l' })) }] };
    await expectInvalid(tooMany, /too many records|5000/);
  });

  it(`two identical imports at once write one program (${backend})`, async () => {
    const before = await contentCounts(t);
    const [a, b] = await Promise.all([ok(client, 'import_program', program('git-race')), ok(client, 'import_program', program('git-race'))]);
    expect(a.id).toBe(b.id);
    expect([a.created, b.created].sort()).toEqual([false, true]);
    expect((await contentCounts(t)).programs).toBe(before.programs + 1);
  });
});

describe('external ids on the create tools', () => {
  it('are stored, returned, and unique per tenant (programs) or per program (the rest)', async () => {
    const p = await ok(client, 'create_program', { tenant: 'acme', title: 'P', external_id: 'p-ext' });
    expect(p.external_id).toBe('p-ext');
    expect(await fails(client, 'create_program', { tenant: 'acme', title: 'P2', external_id: 'p-ext' })).toBe(
      'external_id already used: another program of this tenant has it',
    );
    const u = await ok(client, 'create_unit', { program_id: p.id, title: 'U', external_id: 'same' });
    expect(await fails(client, 'create_unit', { program_id: p.id, title: 'U2', external_id: 'same' })).toBe(
      'external_id already used: another unit of this program has it',
    );
    const l = await ok(client, 'create_lesson', { unit_id: u.id, title: 'L', external_id: 'same' }); // another record type: fine
    await ok(client, 'create_activity', { lesson_id: l.id, title: 'A', kind: 'site', spec: 's', rubric, external_id: 'same' });
    const other = await ok(client, 'create_program', { tenant: 'acme', title: 'Other' });
    expect((await ok(client, 'create_unit', { program_id: other.id, title: 'U', external_id: 'same' })).external_id).toBe('same');
    // instantiate keeps the children's external ids, not the program's (unique per tenant)
    const copy = await ok(client, 'instantiate_program', { program_id: p.id, tenant: 'acme' });
    expect(copy.external_id).toBeNull();
    const tree = await ok(client, 'get_program', { id: copy.id, depth: 'full' });
    expect(tree.units[0].external_id).toBe('same');
    expect(tree.units[0].lessons[0].activities[0].external_id).toBe('same');
  });
});
