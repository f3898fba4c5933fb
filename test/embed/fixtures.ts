/**
 * Shared fixtures of the embed tests: seeding content, the servers of a test file or block (the
 * embed world, an app trusting a test IdP, any closable server, the `svc` CLI) instead of
 * `beforeAll`/`afterAll` pairs, calling the endpoints, error-body checks.
 */
import { deflateSync } from 'node:zlib';
import { beforeAll, expect } from 'vitest';
import type { Config, EmbedConfig, JudgeConfig } from '../../src/config.ts';
import { startApp, testConfig, testJudge, useApp, useFixture, useServer, type TestApp } from '../helpers/harness.ts';
import { cliStore, runSvc } from '../helpers/svc-cli.ts';
import { startTestIdp, type TestIdp } from '../helpers/test-idp.ts';
import { startTestModel, type TestModel, type TestModelMode } from '../helpers/test-model.ts';

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
      JSON.stringify(
        activity.rubric ?? [
          { criterion: 'States the problem', weight: 1 },
          { criterion: 'Discusses trade-offs', weight: 2 },
        ],
      ),
      activity.pass_threshold ?? 70,
    ],
  );
  return { tenantId: tenant!.id, programId: program!.id, lessonId: lesson!.id, activityId: row!.id };
}

/** An app graded by a test model, its tenant `acme` trusting a test IdP, and one `document` activity. */
export interface EmbedWorld {
  t: TestApp;
  idp: TestIdp;
  model: TestModel;
  doc: SeededActivity;
  close(): Promise<void>;
}

/** Start an `EmbedWorld`: the model in `mode` (default `grade`), `embed` and `judge` settings over the harness's. */
export async function startEmbedWorld(
  options: { mode?: TestModelMode; embed?: Partial<EmbedConfig>; judge?: Partial<JudgeConfig>; config?: Partial<Config> } = {},
): Promise<EmbedWorld> {
  const [idp, model] = await Promise.all([startTestIdp(), startTestModel({ mode: options.mode })]);
  const t = await startApp({ judge: testJudge(model.baseUrl, options.judge), embed: embedSettings(options.embed), ...options.config });
  await t.op('tenant.create', { slug: 'acme' });
  await t.op('idp.set', { tenant: 'acme', issuer: idp.issuer, jwks_url: idp.jwksUrl });
  const doc = await seedActivity(t, 'acme');
  return {
    t,
    idp,
    model,
    doc,
    close: async () => {
      await t.close();
      await Promise.all([idp.close(), model.close()]);
    },
  };
}

/**
 * The `svc` command of a test file, as an admin types it, on a store of its own (`cliStore(prefix)`:
 * made before the file's tests, removed after them). `svc(...args)` resolves to the exit code and
 * the output — stdout, with stderr appended when the command failed; it does not throw.
 */
export function useSvc(prefix: string): (...args: string[]) => Promise<{ code: number; out: string }> {
  const store = useFixture(() => cliStore(prefix), { release: (s) => s.cleanup().catch(() => {}) });
  return async (...args) => {
    const r = await runSvc(store.env, ...args);
    return { code: r.code, out: r.code === 0 ? r.stdout : r.stdout + r.stderr };
  };
}

/**
 * An app (started by `start`, default `startApp()`) and a test IdP for a test file or `describe`
 * block (`useApp`, `useServer`), and the tenants of `tenants`, created in that order: each slug
 * maps to how it trusts the IdP — `{}`, or `{ audience }` when it requires one — or to `null` for
 * a tenant with no IdP.
 */
export function useAppWithIdp(
  tenants: Record<string, { audience?: string } | null>,
  start: () => Promise<TestApp> = () => startApp(),
): { t: TestApp; idp: TestIdp } {
  const t = useApp(start);
  const idp = useServer(() => startTestIdp());
  beforeAll(async () => {
    for (const [slug, trust] of Object.entries(tenants)) {
      await t.op('tenant.create', { slug });
      if (trust) await t.op('idp.set', { tenant: slug, issuer: idp.issuer, jwks_url: idp.jwksUrl, ...trust });
    }
  });
  return { t, idp };
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

/** The body is exactly `{"error": {"code": code, "message": <string>, "request_id": <string>}}`. */
export function expectError(res: { status: number; body: any }, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(Object.keys(res.body)).toEqual(['error']);
  expect(Object.keys(res.body.error).sort()).toEqual(['code', 'message', 'request_id']);
  expect(res.body.error.code).toBe(code);
  expect(typeof res.body.error.message).toBe('string');
  expect(res.body.error.message).not.toMatch(/\bat .*\.ts:\d+|select |insert /i);
}

export const countRows = async (t: TestApp, table: string, where = 'true', params: unknown[] = []) =>
  Number((await t.db.query<{ n: number }>(`select count(*)::int as n from ${table} where ${where}`, params))[0]!.n);

/** An error body without its per-request `request_id`, to compare two refusals. */
export const withoutRequestId = (body: any) => ({ error: { ...body?.error, request_id: undefined } });

/** The harness's embed settings with `overrides` (for `startApp({embed: …})`). */
export const embedSettings = (overrides: Partial<EmbedConfig> = {}): EmbedConfig => ({ ...testConfig().embed, ...overrides });

/** The stored verification of an artifact. */
export const verificationOf = async (t: TestApp, artifactId: string) =>
  (await t.db.query<{ verification: any }>('select verification from artifacts where id = $1', [artifactId]))[0]?.verification;

/** A one-page PDF whose text is `lines` (Helvetica, Flate-compressed content stream). */
export function makePdf(lines: string[]): Buffer {
  const content = `BT /F1 12 Tf 72 720 Td 14 TL ${lines.map((l) => `(${l.replace(/[\\()]/g, (c) => `\\${c}`)}) '`).join(' ')} ET`;
  const stream = deflateSync(Buffer.from(content));
  const objects: (string | Buffer)[] = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>',
    Buffer.concat([Buffer.from(`<< /Length ${stream.length} /Filter /FlateDecode >>\nstream\n`), stream, Buffer.from('\nendstream')]),
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
  ];
  const chunks: Buffer[] = [Buffer.from('%PDF-1.4\n')];
  const offsets: number[] = [];
  let length = chunks[0]!.length;
  objects.forEach((o, i) => {
    const chunk = Buffer.concat([Buffer.from(`${i + 1} 0 obj\n`), Buffer.isBuffer(o) ? o : Buffer.from(o), Buffer.from('\nendobj\n')]);
    offsets.push(length);
    chunks.push(chunk);
    length += chunk.length;
  });
  const xref = `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('')}`;
  chunks.push(Buffer.from(`${xref}trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${length}\n%%EOF\n`));
  return Buffer.concat(chunks);
}

/** A 1×1 PNG. */
export const PNG_1X1 = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==', 'base64');
