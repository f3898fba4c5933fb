/**
 * The Odin Project "Full Stack JavaScript" path (../shared/data/odin, CC BY-NC-SA 4.0, not copied
 * into this repository): 34 units, 151 lessons, 146 activities, 666 rubric criteria, imported
 * through the tools twice — one call per record (create_program/unit/lesson/activity), then as
 * one import_program call — and read back intact and in order through the bounded reads
 * (get_program's outline, get_unit, get_lesson), on the suite's backend. A repeated bulk import is a no-op.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { backend, useApp } from '../helpers/harness.ts';
import { importOdin, importOdinBulk, loadOdin, ODIN_MISSING, odinAvailable, readProgram, type OdinProgram } from '../helpers/odin.ts';
import { contentCounts, useAuthorClient, contentShape, type Structured } from './helpers.ts';

const FILE = 'odin-full-stack-javascript.json';
const present = odinAvailable(FILE);

describe.skipIf(!present)(`Odin full-stack path through the tools (${present ? 'data present' : ODIN_MISSING})`, () => {
  const t = useApp();
  const client = useAuthorClient(t, 'acme');
  let source: OdinProgram;
  let perRecord: Structured;

  beforeAll(() => {
    source = loadOdin(FILE);
  });

  const sizes = (tree: Structured) => {
    const lessons = tree.units.flatMap((u: Structured) => u.lessons);
    const activities = lessons.flatMap((l: Structured) => l.activities);
    return [tree.units.length, lessons.length, activities.length, activities.flatMap((a: Structured) => a.rubric).length];
  };
  const positionsAreContiguous = (tree: Structured) => {
    const ok1n = (rows: Structured[]) => rows.every((r, i) => r.position === i + 1);
    return ok1n(tree.units) && tree.units.every((u: Structured) => ok1n(u.lessons) && u.lessons.every((l: Structured) => ok1n(l.activities)));
  };

  it('one call per record: 332 calls, read back intact and in order', async () => {
    let calls = 0;
    const started = performance.now();
    const report = await importOdin(client, 'acme', source, () => calls++);
    const elapsed = performance.now() - started;
    perRecord = await readProgram(client, report.programId);
    console.log(`[odin full stack, ${backend}] ${calls} calls in ${elapsed.toFixed(0)} ms (${(elapsed / calls).toFixed(1)} ms/call)`);
    expect(calls).toBe(1 + 34 + 151 + 146);
    expect(sizes(perRecord)).toEqual([34, 151, 146, 666]);
    expect(contentShape(perRecord.units)).toEqual(contentShape(source.units as unknown as Structured[]));
    expect(positionsAreContiguous(perRecord)).toBe(true);
  });

  it('one import_program call: the same program, with the source ids as external ids', async () => {
    const before = await contentCounts(t);
    const started = performance.now();
    const imported = await importOdinBulk(client, 'acme', source);
    const elapsed = performance.now() - started;
    console.log(`[odin full stack, ${backend}] import_program in ${elapsed.toFixed(0)} ms`);
    expect(imported).toMatchObject({ created: true, external_id: source.id, title: source.title, counts: { units: 34, lessons: 151, activities: 146 } });
    expect(await contentCounts(t)).toEqual({
      programs: before.programs + 1,
      units: before.units + 34,
      lessons: before.lessons + 151,
      activities: before.activities + 146,
    });
    // the outline maps every source id to ours, in order
    expect(imported.units.map((u: Structured) => u.external_id)).toEqual(source.units.map((u) => u.id));
    expect(imported.units.flatMap((u: Structured) => u.lessons.flatMap((l: Structured) => l.activities.map((a: Structured) => a.external_id)))).toEqual(
      source.units.flatMap((u) => u.lessons.flatMap((l) => l.activities.map((a) => a.id))),
    );

    const tree = await readProgram(client, imported.id);
    expect(sizes(tree)).toEqual([34, 151, 146, 666]);
    expect(contentShape(tree.units)).toEqual(contentShape(source.units as unknown as Structured[]));
    expect(contentShape(tree.units)).toEqual(contentShape(perRecord.units));
    expect(positionsAreContiguous(tree)).toBe(true);
    expect(tree.units[0].lessons[0].external_id).toBe(source.units[0]!.lessons[0]!.id);

    // the same import again: nothing written, the same program answered
    const again = await importOdinBulk(client, 'acme', source);
    expect(again).toMatchObject({ created: false, id: imported.id, counts: imported.counts });
    expect(again.units).toEqual(imported.units);
    expect((await contentCounts(t)).activities).toBe(before.activities + 146);
  });
});
