/**
 * Large programs stay within the answer bound (issue #16, 100,000 characters): a program of
 * 20 units × 10 lessons × 10 activities (2,221 records), generated here and written with
 * import_program, through the SDK client.
 * - import_program's answer (and an idempotent replay's) leaves out the id map that would not fit,
 *   with the counts and a note naming the reads that give the ids;
 * - get_program's outline, too large, is answered shallow: the units with their counts and a note,
 *   and each unit then reads as an outline; the program resource reads the same;
 * - a unit too large for its outline (1 unit × 100 lessons × 10 activities) answers its lessons only;
 * - a program too large even shallow (1,000 empty units) is refused, and its resource is -32602.
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { beforeAll, describe, expect, it } from 'vitest';
import { useApp } from '../helpers/harness.ts';
import { fails, useAuthorClient, type Structured } from './helpers.ts';

const LIMIT = 100_000;
const t = useApp();
const client = useAuthorClient(t, 'acme');

/** import_program arguments of a generated program: `units` × `lessons` × `activities`, every record with an external id. */
function generated(externalId: string, units: number, lessons: number, activities: number) {
  const range = (n: number) => Array.from({ length: n }, (_, i) => i + 1);
  return {
    tenant: 'acme',
    external_id: externalId,
    title: `Generated ${units}×${lessons}×${activities}`,
    units: range(units).map((u) => ({
      external_id: `u${u}`,
      title: `Unit ${u}`,
      lessons: range(lessons).map((l) => ({
        external_id: `u${u}-l${l}`,
        title: `Lesson ${u}.${l}`,
        activities: range(activities).map((a) => ({
          external_id: `u${u}-l${l}-a${a}`,
          title: `Activity ${u}.${l}.${a}`,
          kind: 'document',
          spec: `Write up step ${a} of lesson ${u}.${l}.`,
          rubric: [{ criterion: 'Complete', weight: 1 }],
        })),
      })),
    })),
  };
}

/** Call a tool; its whole result must fit in LIMIT characters. */
async function call(name: string, args: Record<string, unknown>): Promise<CallToolResult> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  expect(JSON.stringify(result).length, `${name} ${JSON.stringify(args).slice(0, 100)}`).toBeLessThanOrEqual(LIMIT);
  return result;
}

/** Call a tool that must succeed within LIMIT; its structuredContent. */
async function read(name: string, args: Record<string, unknown>): Promise<Structured> {
  const result = await call(name, args);
  if (result.isError) throw new Error(`${name} failed: ${JSON.stringify(result.content)}`);
  return result.structuredContent as Structured;
}

describe('a program of 20 units × 10 lessons × 10 activities', () => {
  const args = generated('large-1', 20, 10, 10);
  let program: Structured;

  beforeAll(async () => {
    program = await read('import_program', args);
  });

  it('import_program answers the program and its counts without the id map, with a note', () => {
    expect(program).toMatchObject({ title: args.title, created: true, counts: { units: 20, lessons: 200, activities: 2000 } });
    expect(program).not.toHaveProperty('units');
    expect(program.note).toMatch(
      /^the id map is left out: it would make this answer [\d,]+ characters, more than the 100,000 .*get_program.*get_unit.*search_content/,
    );
  });

  it('an idempotent replay answers within the bound too', async () => {
    const again = await read('import_program', args);
    expect(again).toMatchObject({ id: program.id, created: false, counts: { units: 20, lessons: 200, activities: 2000 } });
    expect(again).not.toHaveProperty('units');
    expect(again.note).toMatch(/id map is left out/);
  });

  it('get_program answers shallow: the units in order with their counts, and a note; each unit reads as an outline', async () => {
    const outline = await read('get_program', { id: program.id });
    expect(outline).toMatchObject({ id: program.id, depth: 'shallow', counts: { units: 20, lessons: 200, activities: 2000 } });
    expect(outline.note).toMatch(
      /^The outline is too large for one answer \([\d,]+ characters\), so only the units are listed, each with its counts: read each with get_unit/,
    );
    expect(outline.units).toHaveLength(20);
    outline.units.forEach((u: Structured, i: number) => {
      expect(u).toEqual({ id: expect.any(String), title: `Unit ${i + 1}`, position: i + 1, counts: { lessons: 10, activities: 100 } });
    });
    const unit = await read('get_unit', { id: outline.units[19].id });
    expect(unit).toMatchObject({ title: 'Unit 20', external_id: 'u20', depth: 'outline', counts: { lessons: 10, activities: 100 } });
    expect(unit.lessons[9].activities[9]).toEqual({ id: expect.any(String), title: 'Activity 20.10.10', position: 10, kind: 'document' });
  });

  it('the program resource reads the same shallow outline', async () => {
    const result = await client.readResource({ uri: `svc://programs/${program.id}` });
    expect(JSON.stringify(result).length).toBeLessThanOrEqual(LIMIT);
    const outline = JSON.parse((result.contents[0] as { text: string }).text) as Structured;
    expect(outline).toMatchObject({ id: program.id, depth: 'shallow', counts: { units: 20 } });
    expect(outline.units[0]).toEqual({ id: expect.any(String), title: 'Unit 1', position: 1, counts: { lessons: 10, activities: 100 } });
  });

  it('get_program at depth full is still refused', async () => {
    expect(await fails(client, 'get_program', { id: program.id, depth: 'full' })).toMatch(/^answer too large: program \S+ at depth full/);
  });
});

it('a unit too large for its outline answers its lessons only, each with its counts', async () => {
  const imported = await read('import_program', generated('large-unit', 1, 100, 10));
  const outline = await read('get_program', { id: imported.id });
  expect(outline.depth).toBe('shallow');
  const unit = await read('get_unit', { id: outline.units[0].id });
  expect(unit).toMatchObject({ depth: 'shallow', counts: { lessons: 100, activities: 1000 } });
  expect(unit.note).toMatch(/only the lessons are listed, each with its counts: read each with get_lesson, and what lies under it with get_activity/);
  expect(unit.lessons[99]).toEqual({ id: expect.any(String), title: 'Lesson 1.100', position: 100, counts: { activities: 10 } });
});

it('a program too large even shallow is refused, and its resource is -32602 with the same message', async () => {
  const imported = await read('import_program', generated('many-units', 1_000, 0, 0));
  expect(imported.counts).toEqual({ units: 1000, lessons: 0, activities: 0 });
  const text = await fails(client, 'get_program', { id: imported.id });
  expect(text).toMatch(/^answer too large: program \S+ at depth outline \(even with its units only\) is [\d,]+ characters.*search_content/);
  const err = await client.readResource({ uri: `svc://programs/${imported.id}` }).then(
    () => ({ code: 0, message: 'answered' }),
    (e: { code: number; message: string }) => e,
  );
  expect(err.code).toBe(-32602);
  expect(err.message).toMatch(/answer too large: program/);
});
