/**
 * Role × tool: every tool, called by each kind of caller, against a fresh tree of tenant "acme"
 * (program → unit → lesson → activity) made for that one call.
 *
 *   author of acme        everything works, and the change is in the database
 *   author of beta        acme's ids read as not found, acme's slug as an unknown tenant
 *   learner of acme       reads work; every write is "not allowed"
 *   member of nothing     like the author of beta: nothing of acme exists for them
 *   no token              HTTP 401 with WWW-Authenticate and JSON-RPC -32001
 *   forged token          HTTP 401, -32001 (signed with another project's secret)
 *   logged-out session    HTTP 401, -32001 (the session was ended by /auth/v1/logout)
 *
 * Every refused call leaves the content tables exactly as they were (compared as the owner).
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forgedTokens } from '../helpers/forged-tokens.ts';
import { seedAuthor, startApp, type TestApp } from '../helpers/harness.ts';
import { connect, fails, ok, rawPost, signIn, type Structured, contentSnapshot } from './helpers.ts';

const NOT_ALLOWED = 'not allowed: you are not an author of that tenant';

interface Tree {
  program: string;
  unit: string;
  lesson: string;
  activity: string;
}

let t: TestApp;
const clients: Record<string, Client> = {};
const tokens: Record<string, string> = {};
let counter = 0;

/** A fresh tree in acme, written as the owner (one statement). */
async function freshTree(): Promise<Tree> {
  const [row] = await t.db.query<Tree>(
    `with p as (insert into programs (tenant_id, title) select id, 'Matrix program' from tenants where slug = 'acme' returning id),
          u as (insert into units (program_id, title) select id, 'Matrix unit' from p returning id),
          l as (insert into lessons (unit_id, title) select id, 'Matrix lesson' from u returning id),
          a as (insert into activities (lesson_id, title, kind, spec, rubric)
                select id, 'Matrix activity', 'document', 'Write', '[{"criterion":"c","weight":1}]' from l returning id)
     select (select id from p) as program, (select id from u) as unit, (select id from l) as lesson, (select id from a) as activity`,
  );
  return row!;
}

const snapshot = () => contentSnapshot(t);

const exists = async (table: string, id: string) =>
  (await t.db.query<{ n: number }>(`select count(*)::int as n from ${table} where id = $1`, [id]))[0]!.n === 1;
const titleOf = async (table: string, id: string) =>
  (await t.db.query<{ title: string }>(`select title from ${table} where id = $1`, [id]))[0]?.title;

/** One tool: its arguments for a tree, and what an author's successful call must have done. */
interface ToolCase {
  args: (x: Tree) => Record<string, unknown>;
  /** Check the answer / the database after an author's call. */
  effect: (x: Tree, result: Structured) => Promise<void>;
  read?: boolean;
  /** What a caller who cannot see acme is told. */
  invisible: (x: Tree) => string;
}

const activityArgs = { kind: 'document', spec: 'Write it', rubric: [{ criterion: 'c', weight: 1 }] };
const TOOLS: Record<string, ToolCase> = {
  whoami: { read: true, args: () => ({}), effect: async () => {}, invisible: () => '' },
  list_tenants: { read: true, args: () => ({}), effect: async () => {}, invisible: () => '' },
  list_programs: {
    read: true,
    args: () => ({ tenant: 'acme', limit: 200 }),
    effect: async (x, r) => expect(r.programs.map((p: Structured) => p.id)).toContain(x.program),
    invisible: () => 'tenant not found: acme',
  },
  get_program: {
    read: true,
    args: (x) => ({ id: x.program }),
    effect: async (x, r) => expect(r.units[0].lessons[0].activities[0].id).toBe(x.activity),
    invisible: (x) => `program ${x.program} not found`,
  },
  get_unit: {
    read: true,
    args: (x) => ({ id: x.unit }),
    effect: async (x, r) => expect(r.lessons[0].activities[0].id).toBe(x.activity),
    invisible: (x) => `unit ${x.unit} not found`,
  },
  get_lesson: {
    read: true,
    args: (x) => ({ id: x.lesson, depth: 'full' }),
    effect: async (x, r) => expect(r.activities[0]).toMatchObject({ id: x.activity, spec: 'Write' }),
    invisible: (x) => `lesson ${x.lesson} not found`,
  },
  get_activity: {
    read: true,
    args: (x) => ({ id: x.activity }),
    effect: async (x, r) => expect(r).toMatchObject({ id: x.activity, lesson_id: x.lesson }),
    invisible: (x) => `activity ${x.activity} not found`,
  },
  search_content: {
    read: true,
    args: () => ({ query: 'Matrix activity', tenant: 'acme' }),
    // every tree of this suite has one; the newest (this call's) may be on a later page
    effect: async (_x, r) => expect(r.results).toContainEqual(expect.objectContaining({ record: 'activity', tenant: 'acme', title: 'Matrix activity' })),
    invisible: () => 'tenant not found: acme',
  },
  create_program: {
    args: () => ({ tenant: 'acme', title: `made ${++counter}` }),
    effect: async (_x, r) => expect(await exists('programs', r.id)).toBe(true),
    invisible: () => 'tenant not found: acme',
  },
  update_program: {
    args: (x) => ({ id: x.program, title: 'renamed' }),
    effect: async (x) => expect(await titleOf('programs', x.program)).toBe('renamed'),
    invisible: (x) => `program ${x.program} not found`,
  },
  delete_program: {
    args: (x) => ({ id: x.program }),
    effect: async (x) => expect(await exists('activities', x.activity)).toBe(false),
    invisible: (x) => `program ${x.program} not found`,
  },
  create_unit: {
    args: (x) => ({ program_id: x.program, title: 'made' }),
    effect: async (x, r) => expect(r).toMatchObject({ program_id: x.program, position: 2 }),
    invisible: (x) => `program ${x.program} not found`,
  },
  update_unit: {
    args: (x) => ({ id: x.unit, title: 'renamed' }),
    effect: async (x) => expect(await titleOf('units', x.unit)).toBe('renamed'),
    invisible: (x) => `unit ${x.unit} not found`,
  },
  delete_unit: {
    args: (x) => ({ id: x.unit }),
    effect: async (x) => expect(await exists('lessons', x.lesson)).toBe(false),
    invisible: (x) => `unit ${x.unit} not found`,
  },
  create_lesson: {
    args: (x) => ({ unit_id: x.unit, title: 'made', position: 1 }),
    effect: async (x, r) => expect(r).toMatchObject({ unit_id: x.unit, position: 1 }),
    invisible: (x) => `unit ${x.unit} not found`,
  },
  update_lesson: {
    args: (x) => ({ id: x.lesson, title: 'renamed' }),
    effect: async (x) => expect(await titleOf('lessons', x.lesson)).toBe('renamed'),
    invisible: (x) => `lesson ${x.lesson} not found`,
  },
  delete_lesson: {
    args: (x) => ({ id: x.lesson }),
    effect: async (x) => expect(await exists('lessons', x.lesson)).toBe(false),
    invisible: (x) => `lesson ${x.lesson} not found`,
  },
  create_activity: {
    args: (x) => ({ lesson_id: x.lesson, title: 'made', ...activityArgs }),
    effect: async (x, r) => expect(r).toMatchObject({ lesson_id: x.lesson, position: 2 }),
    invisible: (x) => `lesson ${x.lesson} not found`,
  },
  update_activity: {
    args: (x) => ({ id: x.activity, title: 'renamed' }),
    effect: async (x) => expect(await titleOf('activities', x.activity)).toBe('renamed'),
    invisible: (x) => `activity ${x.activity} not found`,
  },
  delete_activity: {
    args: (x) => ({ id: x.activity }),
    effect: async (x) => expect(await exists('activities', x.activity)).toBe(false),
    invisible: (x) => `activity ${x.activity} not found`,
  },
  instantiate_program: {
    args: (x) => ({ program_id: x.program, tenant: 'acme' }),
    effect: async (x, r) => expect(r).toMatchObject({ source_program_id: x.program, counts: { units: 1, lessons: 1, activities: 1 } }),
    invisible: (x) => `program ${x.program} not found`,
  },
  import_program: {
    args: () => ({
      tenant: 'acme',
      external_id: `matrix-${++counter}`,
      title: 'Imported',
      units: [{ title: 'U', lessons: [{ title: 'L', activities: [{ title: 'A', ...activityArgs }] }] }],
    }),
    effect: async (_x, r) => {
      expect(r).toMatchObject({ created: true, counts: { units: 1, lessons: 1, activities: 1 } });
      expect(await exists('programs', r.id)).toBe(true);
    },
    invisible: () => 'tenant not found: acme',
  },
  ...lifecycleCases(),
};

/** archive_X / unarchive_X of each record of the tree, and move_X within its own parent (issue #16). */
function lifecycleCases(): Record<string, ToolCase> {
  const records = { program: 'programs', unit: 'units', lesson: 'lessons', activity: 'activities' } as const;
  const archivedOf = async (table: string, id: string) =>
    (await t.db.query<{ archived: boolean }>(`select archived from ${table} where id = $1`, [id]))[0]?.archived;
  const cases: Record<string, ToolCase> = {};
  for (const [name, table] of Object.entries(records) as [keyof Tree, string][]) {
    cases[`archive_${name}`] = {
      args: (x) => ({ id: x[name] }),
      effect: async (x) => expect(await archivedOf('activities', x.activity)).toBe(true),
      invisible: (x) => `${name} ${x[name]} not found`,
    };
    cases[`unarchive_${name}`] = {
      args: (x) => ({ id: x[name] }),
      effect: async (x, r) => expect([r.archived, await archivedOf(table, x[name])]).toEqual([false, false]),
      invisible: (x) => `${name} ${x[name]} not found`,
    };
  }
  const parents = { unit: 'program', lesson: 'unit', activity: 'lesson' } as const;
  for (const [name, parent] of Object.entries(parents) as [keyof Tree, keyof Tree][]) {
    cases[`move_${name}`] = {
      args: (x) => ({ id: x[name], [`${parent}_id`]: x[parent], position: 1 }),
      effect: async (x, r) => expect(r).toMatchObject({ id: x[name], [`${parent}_id`]: x[parent], position: 1 }),
      invisible: (x) => `${name} ${x[name]} not found`,
    };
  }
  return cases;
}

beforeAll(async () => {
  t = await startApp();
  const acme = await seedAuthor(t, 'acme');
  const beta = await seedAuthor(t, 'beta');
  for (const email of ['learner@acme.test', 'nobody@nowhere.test']) {
    await t.op('user.create', { email, password: 'correct horse battery' });
  }
  await t.db.query(
    `insert into memberships (tenant_id, user_id, role)
     select t.id, u.id, 'learner' from tenants t, users u join auth.users au on au.id = u.auth_user_id
      where t.slug = 'acme' and au.email = 'learner@acme.test'`,
  );
  tokens.author = await signIn(t, acme.email, acme.password);
  tokens.otherAuthor = await signIn(t, beta.email, beta.password);
  tokens.learner = await signIn(t, 'learner@acme.test', 'correct horse battery');
  tokens.nobody = await signIn(t, 'nobody@nowhere.test', 'correct horse battery');
  for (const who of ['author', 'otherAuthor', 'learner', 'nobody']) clients[who] = await connect(t, tokens[who]!);
  tokens.forged = new Map(await forgedTokens(tokens.author, t.deps.config.jwtSecret)).get('HS256 signed with another secret')!;
  tokens.loggedOut = await signIn(t, acme.email, acme.password);
  const out = await fetch(`${t.url}/auth/v1/logout?scope=local`, {
    method: 'POST',
    headers: { apikey: t.deps.config.anonKey, authorization: `Bearer ${tokens.loggedOut}` },
  });
  expect(out.status).toBe(204);
});
afterAll(async () => {
  await Promise.all(Object.values(clients).map((c) => c.close()));
  await t?.close();
});

const names = Object.keys(TOOLS);

it('covers every tool the server lists', async () => {
  const { tools } = await clients.author!.listTools();
  expect(tools.map((x) => x.name).sort()).toEqual([...names].sort());
});

describe('author of the tenant', () => {
  it.each(names)('%s works', async (name) => {
    const x = await freshTree();
    const tool = TOOLS[name]!;
    await tool.effect(x, await ok(clients.author!, name, tool.args(x)));
  });
});

describe('author of another tenant', () => {
  it.each(names)('%s: acme does not exist for them', async (name) => {
    const x = await freshTree();
    const tool = TOOLS[name]!;
    const before = await snapshot();
    if (name === 'whoami') expect((await ok(clients.otherAuthor!, name)).memberships).toEqual([expect.objectContaining({ tenant: 'beta', role: 'author' })]);
    else if (name === 'list_tenants') expect((await ok(clients.otherAuthor!, name)).tenants.map((r: Structured) => r.slug)).toEqual(['beta']);
    else expect(await fails(clients.otherAuthor!, name, tool.args(x))).toBe(tool.invisible(x));
    expect(await snapshot()).toEqual(before);
  });
});

describe('learner of the tenant', () => {
  it.each(names)('%s: reads work, writes are not allowed', async (name) => {
    const x = await freshTree();
    const tool = TOOLS[name]!;
    const before = await snapshot();
    if (name === 'whoami') expect((await ok(clients.learner!, name)).memberships).toEqual([expect.objectContaining({ tenant: 'acme', role: 'learner' })]);
    else if (name === 'list_tenants') expect((await ok(clients.learner!, name)).tenants).toEqual([expect.objectContaining({ slug: 'acme', role: 'learner' })]);
    else if (tool.read) await tool.effect(x, await ok(clients.learner!, name, tool.args(x)));
    else expect(await fails(clients.learner!, name, tool.args(x))).toBe(NOT_ALLOWED);
    expect(await snapshot()).toEqual(before);
  });
});

describe('member of nothing', () => {
  it.each(names)('%s: nothing of acme exists for them', async (name) => {
    const x = await freshTree();
    const tool = TOOLS[name]!;
    const before = await snapshot();
    if (name === 'whoami') expect((await ok(clients.nobody!, name)).memberships).toEqual([]);
    else if (name === 'list_tenants') expect((await ok(clients.nobody!, name)).tenants).toEqual([]);
    else expect(await fails(clients.nobody!, name, tool.args(x))).toBe(tool.invisible(x));
    expect(await snapshot()).toEqual(before);
  });
});

const unauthenticated: [string, () => string | undefined][] = [
  ['no token', () => undefined],
  ['forged token', () => tokens.forged],
  ['logged-out session', () => tokens.loggedOut],
];
describe.each(unauthenticated)('%s', (_label, token) => {
  it.each(names)('%s → HTTP 401, JSON-RPC -32001, nothing written', async (name) => {
    const x = await freshTree();
    const before = await snapshot();
    const bearer = token();
    const res = await rawPost(
      t,
      { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: TOOLS[name]!.args(x) } },
      bearer ? { authorization: `Bearer ${bearer}` } : {},
    );
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toMatch(/^Bearer .*resource_metadata="[^"]+\/\.well-known\/oauth-protected-resource"/);
    expect(await res.json()).toEqual({ jsonrpc: '2.0', error: { code: -32001, message: expect.stringMatching(/^Unauthorized/) }, id: null });
    expect(await snapshot()).toEqual(before);
  });
});
