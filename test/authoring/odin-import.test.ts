/**
 * Real content through the tools: The Odin Project "Foundations" (../shared/data/odin, CC BY-NC-SA
 * 4.0, not copied into this repository), one tool call per record — 1 program, 8 units,
 * 46 lessons, 45 activities — then get_program returns the whole tree in source order.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backend, startApp, type TestApp } from '../helpers/harness.ts';
import { importOdin, loadOdin, ODIN_MISSING, odinAvailable, type OdinProgram } from '../helpers/odin.ts';
import { authorClient, ok, type Structured } from './helpers.ts';

describe.skipIf(!odinAvailable())(`Odin Foundations import through the tools (${odinAvailable() ? 'data present' : ODIN_MISSING})`, () => {
  let t: TestApp;
  let client: Client;
  let source: OdinProgram;

  beforeAll(async () => {
    source = loadOdin();
    t = await startApp();
    client = (await authorClient(t, 'acme')).client;
  });
  afterAll(async () => {
    await client?.close();
    await t?.close();
  });

  it('imports 8 units, 46 lessons, 45 activities and reads them back in order', async () => {
    const started = performance.now();
    let calls = 0;
    const report = await importOdin(client, 'acme', source, () => calls++);
    const imported = performance.now();
    const tree = await ok(client, 'get_program', { id: report.programId });
    const read = performance.now();
    console.log(
      `[odin import, ${backend}] ${calls} create calls in ${(imported - started).toFixed(0)} ms ` +
        `(${((imported - started) / calls).toFixed(1)} ms/call); get_program ${(read - imported).toFixed(0)} ms`,
    );

    expect(calls).toBe(1 + 8 + 46 + 45);
    expect([report.units, report.lessons, report.activities]).toEqual([8, 46, 45]);
    const lessons = tree.units.flatMap((u: Structured) => u.lessons);
    const activities = lessons.flatMap((l: Structured) => l.activities);
    expect([tree.units.length, lessons.length, activities.length]).toEqual([8, 46, 45]);
    expect(activities.flatMap((a: Structured) => a.rubric)).toHaveLength(244);

    const shape = (units: Structured[]) =>
      units.map((u) => ({
        title: u.title,
        description: u.description,
        lessons: u.lessons.map((l: Structured) => ({
          title: l.title,
          body: l.body,
          activities: l.activities.map((a: Structured) => ({
            title: a.title,
            kind: a.kind,
            spec: a.spec,
            rubric: a.rubric.map((r: Structured) => ({ criterion: r.criterion, weight: r.weight })),
          })),
        })),
      }));
    expect(shape(tree.units)).toEqual(shape(source.units as unknown as Structured[]));
    expect(tree).toMatchObject({ id: report.programId, title: source.title, description: source.description });
    expect(activities.map((a: Structured) => a.id)).toEqual([...report.activityIds.values()]);
  });
});
