/** Shared fixtures of the embed tests: seeding content, calling the endpoints, error-body checks. */
import { expect } from 'vitest';
import type { TestApp } from '../helpers/harness.ts';

export interface SeededActivity {
  tenantId: string;
  programId: string;
  lessonId: string;
  activityId: string;
}

/** A program → unit → lesson → activity in tenant `slug`, inserted as the owner (triggers fill the rest). */
export async function seedActivity(
  t: TestApp,
  slug: string,
  activity: { kind?: string; spec?: string; rubric?: unknown; pass_threshold?: number; title?: string } = {},
): Promise<SeededActivity> {
  const [tenant] = await t.db.query<{ id: string }>('select id from tenants where slug = $1', [slug]);
  const [program] = await t.db.query<{ id: string }>(`insert into programs (tenant_id, title) values ($1, 'Program') returning id`, [tenant!.id]);
  const [unit] = await t.db.query<{ id: string }>(`insert into units (program_id, title) values ($1, 'Unit') returning id`, [program!.id]);
  const [lesson] = await t.db.query<{ id: string }>(`insert into lessons (unit_id, title) values ($1, 'Lesson') returning id`, [unit!.id]);
  const [row] = await t.db.query<{ id: string }>(
    `insert into activities (lesson_id, title, kind, spec, rubric, pass_threshold)
     values ($1, $2, $3, $4, $5::text::jsonb, $6) returning id`,
    [
      lesson!.id,
      activity.title ?? 'Write a design note',
      activity.kind ?? 'document',
      activity.spec ?? 'Write a one-page design note for a URL shortener.',
      JSON.stringify(activity.rubric ?? [{ criterion: 'States the problem', weight: 1 }, { criterion: 'Discusses trade-offs', weight: 2 }]),
      activity.pass_threshold ?? 70,
    ],
  );
  return { tenantId: tenant!.id, programId: program!.id, lessonId: lesson!.id, activityId: row!.id };
}

/** POST JSON (or a raw string body) to `path`; returns the status and the parsed body. */
export async function post(
  t: TestApp,
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: any; text: string }> {
  const res = await fetch(`${t.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: res.status, body: parsed, text };
}

/** The body is exactly `{"error": {"code": code, "message": <string>}}`. */
export function expectError(res: { status: number; body: any }, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(Object.keys(res.body)).toEqual(['error']);
  expect(Object.keys(res.body.error).sort()).toEqual(['code', 'message']);
  expect(res.body.error.code).toBe(code);
  expect(typeof res.body.error.message).toBe('string');
  expect(res.body.error.message).not.toMatch(/\bat .*\.ts:\d+|select |insert /i);
}

export const countRows = async (t: TestApp, table: string, where = 'true', params: unknown[] = []) =>
  Number((await t.db.query<{ n: number }>(`select count(*)::int as n from ${table} where ${where}`, params))[0]!.n);
