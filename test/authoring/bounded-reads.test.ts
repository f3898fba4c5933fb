/**
 * Bounded reads on a real course (issue #16): The Odin Project's full-stack path (34 units, 151
 * lessons, 146 activities; ../shared/data/odin, not copied here), imported with import_program and
 * read back with the SDK client through every read at its default settings — get_program, every
 * unit, lesson and activity, search_content, list_programs, the resources and prompts — measuring every
 * answer: each fits in 100,000 characters. get_program at depth full is refused with a message
 * naming the narrower reads; get_unit / get_lesson at depth full answer what fits.
 */
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { beforeAll, describe, expect, it } from 'vitest';
import { backend, useApp } from '../helpers/harness.ts';
import { loadOdin, odinImportArgs, ODIN_MISSING, odinAvailable, type OdinProgram } from '../helpers/odin.ts';
import { contentShape, useAuthorClient, fails, ok, type Structured } from './helpers.ts';

const FILE = 'odin-full-stack-javascript.json';
const present = odinAvailable(FILE);
const LIMIT = 100_000;

describe.skipIf(!present)(`bounded reads of the Odin full-stack path (${present ? 'data present' : ODIN_MISSING})`, () => {
  const t = useApp();
  const client = useAuthorClient(t, 'acme');
  let source: OdinProgram;
  let program: Structured;
  /** Size of every answer, by tool. */
  const sizes = new Map<string, number[]>();

  const record = (name: string, answer: unknown) => {
    const size = JSON.stringify(answer).length;
    sizes.set(name, [...(sizes.get(name) ?? []), size]);
    return size;
  };
  /** Call a tool that must succeed, recording the size of its whole result. */
  async function call(name: string, args: Record<string, unknown>): Promise<Structured> {
    const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
    expect(record(name, result), `${name} ${JSON.stringify(args)}`).toBeLessThanOrEqual(LIMIT);
    if (result.isError) throw new Error(`${name} failed: ${JSON.stringify(result.content)}`);
    return result.structuredContent as Structured;
  }

  beforeAll(async () => {
    source = loadOdin(FILE);
    program = await call('import_program', odinImportArgs('acme', source)); // its answer is measured too
  });

  it('every answer at default settings fits in 100,000 characters, and together they hold the whole program', async () => {
    const outline = await call('get_program', { id: program.id });
    expect(outline).toMatchObject({ depth: 'outline', counts: { units: 34, lessons: 151, activities: 146 }, title: source.title });
    expect(outline.units[0]).toEqual({ id: expect.any(String), title: source.units[0]!.title, position: 1, lessons: expect.any(Array) });
    expect(outline.units[0].lessons[0].activities[0] ?? { kind: 'document' }).toHaveProperty('kind');

    // walk the outline down to every record, reading each in full with the narrower tools
    const units: Structured[] = [];
    const activityIds: string[] = [];
    for (const u of outline.units) {
      const unit = await call('get_unit', { id: u.id });
      expect(unit).toMatchObject({ id: u.id, title: u.title, position: u.position, depth: 'outline' });
      const lessons: Structured[] = [];
      for (const l of unit.lessons) {
        const lesson = await call('get_lesson', { id: l.id });
        const activities: Structured[] = [];
        for (const a of lesson.activities) {
          activities.push(await call('get_activity', { id: a.id }));
          activityIds.push(a.id);
        }
        lessons.push({ ...lesson, activities });
      }
      units.push({ ...unit, lessons });
    }
    // what the narrow reads returned is the whole program, intact and in order
    expect(contentShape(units)).toEqual(contentShape(source.units as unknown as Structured[]));

    await call('search_content', { query: 'project' });
    await call('search_content', { query: 'e' });
    await call('list_programs', {});
    await call('whoami', {});
    await call('list_tenants', {});
    // the resources and prompts that embed them
    record('resources/list', await client.listResources());
    record('resources/read program', await client.readResource({ uri: `svc://programs/${program.id}` }));
    for (const a of activityIds) record('resources/read activity', await client.readResource({ uri: `svc://activities/${a}` }));
    record('prompts/get draft_unit', await client.getPrompt({ name: 'draft_unit', arguments: { program_id: program.id, outline: 'Testing with Jest' } }));
    record('prompts/get write_rubric', await client.getPrompt({ name: 'write_rubric', arguments: { activity_id: activityIds[0]! } }));

    const reads = [...sizes].map(([name, s]) => `${name}: ${s.length} answer(s), largest ${Math.max(...s).toLocaleString('en')} chars`);
    console.log(`[bounded reads, ${backend}] ${reads.join('; ')}`);
    for (const [name, s] of sizes) expect(Math.max(...s), name).toBeLessThanOrEqual(LIMIT);
    expect(sizes.get('get_activity')).toHaveLength(146);
    expect(sizes.get('get_lesson')).toHaveLength(151);
  });

  it('get_program at depth full is refused, naming the size and the narrower reads', async () => {
    const text = await fails(client, 'get_program', { id: program.id, depth: 'full' });
    expect(text).toMatch(/^answer too large: program \S+ at depth full is [\d,]+ characters, more than the 100,000/);
    expect(text).toMatch(/depth "outline".*get_unit, get_lesson and get_activity/);
  });

  it('get_unit and get_lesson at depth full answer the records below in full when they fit', async () => {
    const outline = await ok(client, 'get_program', { id: program.id });
    const small = outline.units.find((u: Structured) => u.lessons.length === 1) ?? outline.units[0];
    const unit = (await client.callTool({ name: 'get_unit', arguments: { id: small.id, depth: 'full' } })) as CallToolResult;
    if (unit.isError) expect((unit.content[0] as { text: string }).text).toMatch(/answer too large: unit .* get_lesson and get_activity/);
    else expect((unit.structuredContent as Structured).lessons[0]).toHaveProperty('body');

    const lessonId = outline.units[0].lessons[0].id;
    const lesson = await ok(client, 'get_lesson', { id: lessonId, depth: 'full' });
    expect(lesson.depth).toBe('full');
    for (const a of lesson.activities) expect(a).toHaveProperty('spec');
  });
});
