/**
 * Real content through the tools: The Odin Project "Foundations" and "JavaScript" courses
 * (../shared/data/odin, CC BY-NC-SA 4.0, not copied into this repository), each with one
 * import_program call; read back through the bounded reads, each tree intact and in source order. (The full-stack
 * path, one call per record and in bulk, is odin-full-stack.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import { useApp } from '../helpers/harness.ts';
import { importOdinBulk, loadOdin, ODIN_MISSING, odinAvailable, readProgram } from '../helpers/odin.ts';
import { useAuthorClient, contentShape, type Structured } from './helpers.ts';

const COURSES = [
  ['odin-foundations.json', [8, 46, 45, 244]],
  ['odin-javascript.json', [8, 41, 39, 201]],
] as const;

describe.skipIf(!odinAvailable())(`Odin courses imported with import_program (${odinAvailable() ? 'data present' : ODIN_MISSING})`, () => {
  const t = useApp();
  const client = useAuthorClient(t);

  it.each(COURSES)('%s: read back intact and in order', async (file, sizes) => {
    const source = loadOdin(file);
    const imported = await importOdinBulk(client, 'acme', source);
    expect(imported.created).toBe(true);
    const tree = await readProgram(client, imported.id);
    const lessons = tree.units.flatMap((u: Structured) => u.lessons);
    const activities = lessons.flatMap((l: Structured) => l.activities);
    expect([tree.units.length, lessons.length, activities.length, activities.flatMap((a: Structured) => a.rubric).length]).toEqual(sizes);
    expect(tree).toMatchObject({ id: imported.id, title: source.title, description: source.description, external_id: source.id });
    expect(contentShape(tree.units)).toEqual(contentShape(source.units as unknown as Structured[]));
    expect(activities.map((a: Structured) => a.external_id)).toEqual(source.units.flatMap((u) => u.lessons.flatMap((l) => l.activities.map((a) => a.id))));
  });
});
