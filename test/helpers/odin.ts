/**
 * The Odin Project course files in ../shared/data/odin (never copied into this repo) and
 * importers that write one through the authoring surface: one MCP tool call per record
 * (`importOdin`), or one `import_program` call (`importOdinBulk`, `odinImportArgs`).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';

export const ODIN_DIR = fileURLToPath(new URL('../../../shared/data/odin/', import.meta.url));
export const odinAvailable = (file = 'odin-foundations.json') => existsSync(ODIN_DIR + file);
export const ODIN_MISSING = `skipped: ${ODIN_DIR} is absent (the Odin course files live in ../shared/data/odin)`;

export interface OdinActivity {
  id: string;
  title: string;
  kind: 'document' | 'site' | 'repo' | 'diagram';
  spec: string;
  rubric: { id: string; criterion: string; weight: number }[];
}
export interface OdinLesson {
  id: string;
  title: string;
  body: string;
  position: number;
  activities: OdinActivity[];
}
export interface OdinUnit {
  id: string;
  title: string;
  description: string;
  position: number;
  lessons: OdinLesson[];
}
export interface OdinProgram {
  id: string;
  title: string;
  description: string;
  units: OdinUnit[];
}

/** The program of `file` in `dir` (default ../shared/data/odin; `npm run demo --odin <dir>` names another). */
export function loadOdin(file = 'odin-foundations.json', dir = ODIN_DIR): OdinProgram {
  return (JSON.parse(readFileSync(join(dir, file), 'utf8')) as { program: OdinProgram }).program;
}

/** Call a tool and return its structuredContent; throws with the tool's text on `isError`. */
export async function callTool<T = Record<string, any>>(client: Client, name: string, args: Record<string, unknown>): Promise<T> {
  const result = await client.callTool({ name, arguments: args });
  if (result.isError) {
    const text = (result.content as { type: string; text?: string }[]).map((c) => c.text ?? '').join(' ');
    throw new Error(`${name} failed: ${text}`);
  }
  return result.structuredContent as T;
}

export interface ImportReport {
  programId: string;
  units: number;
  lessons: number;
  activities: number;
  /** Our activity id for each source activity id. */
  activityIds: Map<string, string>;
}

/** Import `program` into `tenant` with create_program/unit/lesson/activity, in source order. */
export async function importOdin(
  client: Client,
  tenant: string,
  program: OdinProgram,
  onProgress?: (done: number, total: number) => void,
): Promise<ImportReport> {
  const total = program.units.reduce((n, u) => n + 1 + u.lessons.reduce((m, l) => m + 1 + l.activities.length, 0), 1);
  let done = 0;
  const tick = () => onProgress?.(++done, total);
  const created = await callTool(client, 'create_program', { tenant, title: program.title, description: program.description });
  tick();
  const report: ImportReport = { programId: created.id, units: 0, lessons: 0, activities: 0, activityIds: new Map() };
  for (const unit of program.units) {
    const u = await callTool(client, 'create_unit', { program_id: created.id, title: unit.title, description: unit.description, position: unit.position });
    report.units++;
    tick();
    for (const lesson of unit.lessons) {
      const l = await callTool(client, 'create_lesson', { unit_id: u.id, title: lesson.title, body: lesson.body, position: lesson.position });
      report.lessons++;
      tick();
      for (const [i, activity] of lesson.activities.entries()) {
        const a = await callTool(client, 'create_activity', {
          lesson_id: l.id,
          title: activity.title,
          kind: activity.kind,
          spec: activity.spec,
          rubric: activity.rubric.map((c) => ({ criterion: c.criterion, weight: c.weight })),
          position: i + 1,
        });
        report.activities++;
        report.activityIds.set(activity.id, a.id);
        tick();
      }
    }
  }
  return report;
}

/**
 * The arguments of one `import_program` call for `program` (the whole tree, in source order;
 * the source's own ids as external ids, so a repeated import is idempotent).
 */
export function odinImportArgs(tenant: string, program: OdinProgram) {
  return {
    tenant,
    external_id: program.id,
    title: program.title,
    description: program.description,
    units: program.units.map((unit) => ({
      external_id: unit.id,
      title: unit.title,
      description: unit.description,
      lessons: unit.lessons.map((lesson) => ({
        external_id: lesson.id,
        title: lesson.title,
        body: lesson.body,
        activities: lesson.activities.map((activity) => ({
          external_id: activity.id,
          title: activity.title,
          kind: activity.kind,
          spec: activity.spec,
          rubric: activity.rubric.map((c) => ({ criterion: c.criterion, weight: c.weight })),
        })),
      })),
    })),
  };
}

/** Import `program` into `tenant` with ONE import_program call; returns its structuredContent. */
export async function importOdinBulk(client: Client, tenant: string, program: OdinProgram): Promise<Record<string, any>> {
  return callTool(client, 'import_program', odinImportArgs(tenant, program));
}

/**
 * Read program `id` in full through the bounded reads (issue #16): get_program's outline, then
 * each unit with get_unit and each lesson with get_lesson at depth full. The same tree get_program
 * at depth full answers for programs that fit in one answer.
 */
export async function readProgram(client: Client, id: string): Promise<Record<string, any>> {
  const outline = await callTool(client, 'get_program', { id });
  const units = [];
  for (const u of outline.units) {
    const { lessons, depth: _unitDepth, counts: _unitCounts, ...unit } = await callTool(client, 'get_unit', { id: u.id });
    const full = [];
    for (const l of lessons) {
      const { depth: _depth, counts: _counts, ...lesson } = await callTool(client, 'get_lesson', { id: l.id, depth: 'full' });
      full.push(lesson);
    }
    units.push({ ...unit, lessons: full });
  }
  const { depth: _depth, counts: _counts, ...program } = outline;
  return { ...program, units };
}
