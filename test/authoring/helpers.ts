/**
 * Helpers for the authoring tests: sign in through the identity platform, connect the MCP SDK's
 * own client to `/mcp`, call tools, and count rows as the database owner.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { expect } from 'vitest';
import { seedAuthor, useServer, type TestApp } from '../helpers/harness.ts';

/** Password grant → the session's access token. */
export async function signIn(t: TestApp, email: string, password: string): Promise<string> {
  const res = await fetch(`${t.url}/auth/v1/token?grant_type=password`, {
    method: 'POST',
    headers: { apikey: t.deps.config.anonKey, 'content-type': 'application/json' },
    body: JSON.stringify({ email, password }),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as { access_token: string }).access_token;
}

/** An MCP client (the SDK's) connected to `/mcp` with a bearer token. */
export async function connect(t: TestApp, token: string): Promise<Client> {
  const client = new Client({ name: 'authoring-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(`${t.url}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  return client;
}

/** A tenant with an author, signed in, and a connected client. */
export async function authorClient(t: TestApp, slug: string) {
  const seeded = await seedAuthor(t, slug);
  const token = await signIn(t, seeded.email, seeded.password);
  return { ...seeded, token, client: await connect(t, token) };
}

/** The MCP client of an author of tenant `slug` in app `t`, for a test file or block (closed after it). */
export function useAuthorClient(t: TestApp, slug = 'acme'): Client {
  return useServer(async () => (await authorClient(t, slug)).client);
}

/** `authorClient(t, slug)` for a test file or block: the seeded author, token and client (closed after it). */
export function useAuthor(t: TestApp, slug = 'acme'): Awaited<ReturnType<typeof authorClient>> {
  return useServer(async () => {
    const author = await authorClient(t, slug);
    return { ...author, close: () => author.client.close() };
  });
}

export type Structured = Record<string, any>;

/** Call a tool that must succeed; returns its structuredContent. */
export async function ok(client: Client, name: string, args: Record<string, unknown> = {}): Promise<Structured> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  if (result.isError) throw new Error(`${name} failed: ${JSON.stringify(result.content)}`);
  expect(result.structuredContent).toBeDefined();
  expect(result.content[0]?.type).toBe('text');
  return result.structuredContent as Structured;
}

/** Call a tool that must fail as a domain error; returns its text. */
export async function fails(client: Client, name: string, args: Record<string, unknown> = {}): Promise<string> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  expect(result.isError, `${name} should fail but answered ${JSON.stringify(result.structuredContent)}`).toBe(true);
  expect(result.structuredContent).toBeUndefined();
  const text = (result.content[0] as { text: string }).text;
  expect(text).not.toMatch(/select|insert|update |delete from|violates|policy|relation|at .*\.ts/i);
  return text;
}

/** Row counts of the content tables (as the owner, no RLS). */
export async function contentCounts(t: TestApp): Promise<Record<string, number>> {
  const [row] = await t.db.query<Record<string, number>>(
    `select (select count(*)::int from programs) as programs, (select count(*)::int from units) as units,
            (select count(*)::int from lessons) as lessons, (select count(*)::int from activities) as activities`,
  );
  return row!;
}

/** A raw JSON-RPC POST to /mcp (no SDK), for the HTTP-level checks. */
export function rawPost(t: TestApp, body: unknown, headers: Record<string, string> = {}, path = '/mcp') {
  return fetch(`${t.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

/**
 * The content of a program tree without ids and timestamps: what must survive an import or a
 * copy (titles, texts, kinds, specs, rubrics with weights, each level in order). Works on
 * get_program's units and on The Odin Project's source units alike.
 */
export function contentShape(units: Structured[]) {
  return units.map((u) => ({
    title: u.title,
    description: u.description ?? null,
    lessons: u.lessons.map((l: Structured) => ({
      title: l.title,
      body: l.body ?? null,
      activities: l.activities.map((a: Structured) => ({
        title: a.title,
        kind: a.kind,
        spec: a.spec,
        rubric: a.rubric.map((r: Structured) => ({ criterion: r.criterion, weight: r.weight })),
      })),
    })),
  }));
}

/** Everything in the content tables, as the owner sees it: compare before and after a refused call. */
export async function contentSnapshot(t: TestApp): Promise<unknown> {
  const [row] = await t.db.query<{ s: unknown }>(
    `select jsonb_build_object(
       'programs', (select jsonb_agg(to_jsonb(x) order by x.id) from programs x),
       'units', (select jsonb_agg(to_jsonb(x) order by x.id) from units x),
       'lessons', (select jsonb_agg(to_jsonb(x) order by x.id) from lessons x),
       'activities', (select jsonb_agg(to_jsonb(x) order by x.id) from activities x)) as s`,
  );
  return row!.s;
}
