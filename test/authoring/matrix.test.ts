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
import { seedAuthor, useApp } from '../helpers/harness.ts';
import { connect, fails, ok, rawPost, signIn, type Structured, contentSnapshot } from './helpers.ts';

const NOT_ALLOWED = 'not allowed: you are not an author of that tenant';

interface Tree {
  program: string;
  unit: string;
  lesson: string;
  activity: string;
  /** A calibration example of the activity, and a finished calibration run (report) of it (issue #21). */
  example: string;
  report: string;
  /** acme's learner's graded result (on an activity of another program), and an open appeal of it (issue #21). */
  result: string;
  review: string;
}

const t = useApp();
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
                select id, 'Matrix activity', 'document', 'Write', '[{"criterion":"c","weight":1}]' from l returning id),
          e as (insert into calibration_examples (tenant_id, activity_id, kind, content, expected_passed)
                select t.id, a.id, 'document', 'An example', true from a, tenants t where t.slug = 'acme' returning id),
          r as (insert into calibration_runs (tenant_id, activity_id, status, rubric_version, model, prompt_version, reason, report, completed_at)
                select t.id, a.id, 'done', 1, 'm', 'p', 'requested', '{"n": 1}', now() from a, tenants t where t.slug = 'acme' returning id),
          -- the learner's work lives in a program of its own, so that the tree's records stay deletable
          p2 as (insert into programs (tenant_id, title) select id, 'Matrix graded program' from tenants where slug = 'acme' returning id),
          u2 as (insert into units (program_id, title) select id, 'Matrix graded unit' from p2 returning id),
          l2 as (insert into lessons (unit_id, title) select id, 'Matrix graded lesson' from u2 returning id),
          a2 as (insert into activities (lesson_id, title, kind, spec, rubric)
                 select id, 'Matrix graded activity', 'document', 'Write', '[{"criterion":"c","weight":1}]' from l2 returning id),
          learner as (select t.id as tenant_id, u.id as user_id from tenants t, users u join auth.users au on au.id = u.auth_user_id
                       where t.slug = 'acme' and au.email = 'learner@acme.test'),
          res as (insert into activity_results (tenant_id, activity_id, lesson_id, program_id, user_id, status, score, completed_at)
                  select learner.tenant_id, a2.id, l2.id, p2.id, learner.user_id, 'completed', 90, now() from a2, l2, p2, learner returning id, tenant_id, user_id),
          art as (insert into artifacts (tenant_id, result_id, activity_id, user_id, kind, content, verification)
                  select res.tenant_id, res.id, a2.id, res.user_id, 'document', 'Work',
                         '{"status": "passed", "passed": true, "score": 90, "feedback": "Good"}'::jsonb from res, a2 returning id, tenant_id, result_id, user_id),
          rev as (insert into reviews (tenant_id, kind, result_id, artifact_id, user_id, message)
                  select art.tenant_id, 'appeal', art.result_id, art.id, art.user_id, 'Please look again' from art returning id)
     select (select id from p) as program, (select id from u) as unit, (select id from l) as lesson, (select id from a) as activity,
            (select id from e) as example, (select id from r) as report, (select id from res) as result, (select id from rev) as review`,
  );
  return row!;
}

const snapshot = () => contentSnapshot(t);

const exists = async (table: string, id: string) =>
  (await t.db.query<{ n: number }>(`select count(*)::int as n from ${table} where id = $1`, [id]))[0]!.n === 1;
const titleOf = async (table: string, id: string) => (await t.db.query<{ title: string }>(`select title from ${table} where id = $1`, [id]))[0]?.title;

/** One tool: its arguments for a tree, and what an author's successful call must have done. */
interface ToolCase {
  args: (x: Tree) => Record<string, unknown>;
  /** Check the answer / the database after an author's call. */
  effect: (x: Tree, result: Structured) => Promise<void>;
  read?: boolean;
  /** Only authors of the tenant see it at all (calibration): its learners are told what outsiders are. */
  authorsOnly?: boolean;
  /** What a caller who cannot see acme is told. */
  invisible: (x: Tree) => string;
}

/** What a caller who cannot see acme is told about `record` of the tree. */
const notFound = (record: keyof Tree) => (x: Tree) => `${record} ${x[record]} not found`;

/** A tool that takes the id of `record` of the tree (and `more` arguments). */
const byId = (record: keyof Tree, effect: ToolCase['effect'], more: Record<string, unknown> = {}): ToolCase => ({
  args: (x) => ({ id: x[record], ...more }),
  effect,
  invisible: notFound(record),
});

/** create_<child of parent>: the answer names the parent and the new record's `position`. */
const createUnder = (parent: keyof Tree, position: number, more: Record<string, unknown> = {}): ToolCase => ({
  args: (x) => ({ [`${parent}_id`]: x[parent], title: 'made', ...more }),
  effect: async (x, r) => expect(r).toMatchObject({ [`${parent}_id`]: x[parent], position }),
  invisible: notFound(parent),
});

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
  get_program: { read: true, ...byId('program', async (x, r) => expect(r.units[0].lessons[0].activities[0].id).toBe(x.activity)) },
  get_unit: { read: true, ...byId('unit', async (x, r) => expect(r.lessons[0].activities[0].id).toBe(x.activity)) },
  get_lesson: { read: true, ...byId('lesson', async (x, r) => expect(r.activities[0]).toMatchObject({ id: x.activity, spec: 'Write' }), { depth: 'full' }) },
  get_activity: { read: true, ...byId('activity', async (x, r) => expect(r).toMatchObject({ id: x.activity, lesson_id: x.lesson })) },
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
  create_unit: createUnder('program', 2),
  create_lesson: createUnder('unit', 1, { position: 1 }),
  create_activity: createUnder('lesson', 2, activityArgs),
  instantiate_program: {
    args: (x) => ({ program_id: x.program, tenant: 'acme' }),
    effect: async (x, r) => expect(r).toMatchObject({ source_program_id: x.program, counts: { units: 1, lessons: 1, activities: 1 } }),
    invisible: notFound('program'),
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
  ...recordCases(),
  ...calibrationCases(),
  ...reviewCases(),
};

/** The calibration tools (issue #21): authors of the tenant only; everyone else is told the activity (or example) is not found. */
function calibrationCases(): Record<string, ToolCase> {
  const count = async (table: string, where: string, id: string) =>
    (await t.db.query<{ n: number }>(`select count(*)::int as n from ${table} where ${where}`, [id]))[0]!.n;
  const activityNotFound = (x: Tree) => `activity_id: activity ${x.activity} not found`;
  const onActivity = (effect: ToolCase['effect'], more: Record<string, unknown> = {}, read = false): ToolCase => ({
    args: (x) => ({ activity_id: x.activity, ...more }),
    effect,
    read,
    authorsOnly: true,
    invisible: activityNotFound,
  });
  return {
    add_calibration_example: onActivity(async (x) => expect(await count('calibration_examples', 'activity_id = $1', x.activity)).toBe(2), {
      artifact: { kind: 'document', content: 'Work' },
      expected: { passed: false },
    }),
    list_calibration_examples: onActivity(async (x, r) => expect(r.examples.map((e: Structured) => e.id)).toEqual([x.example]), {}, true),
    delete_calibration_example: {
      args: (x) => ({ id: x.example }),
      effect: async (x) => expect(await count('calibration_examples', 'id = $1', x.example)).toBe(0),
      authorsOnly: true,
      invisible: (x) => `id: calibration example ${x.example} not found`,
    },
    // no model in this app: the run is queued for a process with one
    run_calibration: onActivity(async (x, r) => expect(r).toMatchObject({ activity_id: x.activity, status: 'queued', stale: false })),
    get_calibration_report: onActivity(async (x, r) => expect(r).toMatchObject({ id: x.report, status: 'done', n: 1 }), {}, true),
    set_grading: onActivity(async (x) => expect(await count('grading_mode_changes', 'activity_id = $1', x.activity)).toBe(1), {
      mode: 'live',
      force: true,
      reason: 'pilot',
    }),
  };
}

/** The review tools (issue #21): authors of the result's tenant only; everyone else is told the result, review or tenant is not found. */
function reviewCases(): Record<string, ToolCase> {
  const statusOf = async (table: string, id: string) => (await t.db.query<{ status: string }>(`select status from ${table} where id = $1`, [id]))[0]?.status;
  const hidden = (what: string) => `${what} not found (or not in a tenant you are an author of)`;
  return {
    override_verdict: {
      args: (x) => ({ result_id: x.result, passed: false, reason: 'copied work' }),
      effect: async (x) => expect([await statusOf('activity_results', x.result), await statusOf('reviews', x.review)]).toEqual(['failed', 'overridden']),
      authorsOnly: true,
      invisible: (x) => hidden(`result ${x.result}`),
    },
    list_reviews: {
      read: true,
      args: () => ({ tenant: 'acme', status: 'open' }),
      effect: async (x, r) => expect(r.reviews.map((v: Structured) => v.id)).toContain(x.review),
      authorsOnly: true,
      invisible: () => 'tenant not found: acme (or you are not an author of it)',
    },
    resolve_review: {
      args: (x) => ({ review_id: x.review, decision: 'uphold', reason: 'the verdict is right' }),
      effect: async (x) => expect([await statusOf('activity_results', x.result), await statusOf('reviews', x.review)]).toEqual(['completed', 'upheld']),
      authorsOnly: true,
      invisible: (x) => hidden(`review ${x.review}`),
    },
  };
}

/**
 * The tools of each record of the tree: update_X, delete_X, archive_X / unarchive_X (issue #16),
 * and move_X within its own parent.
 */
function recordCases(): Record<string, ToolCase> {
  const records = { program: 'programs', unit: 'units', lesson: 'lessons', activity: 'activities' } as const;
  // The record whose absence shows a delete: for a program or a unit a descendant (the cascade).
  const goneAfterDelete = { program: 'activity', unit: 'lesson', lesson: 'lesson', activity: 'activity' } as const;
  const archivedOf = async (table: string, id: string) =>
    (await t.db.query<{ archived: boolean }>(`select archived from ${table} where id = $1`, [id]))[0]?.archived;
  const cases: Record<string, ToolCase> = {};
  for (const [name, table] of Object.entries(records) as [keyof typeof records, string][]) {
    const gone = goneAfterDelete[name];
    cases[`update_${name}`] = byId(name, async (x) => expect(await titleOf(table, x[name])).toBe('renamed'), { title: 'renamed' });
    cases[`delete_${name}`] = byId(name, async (x) => expect(await exists(records[gone], x[gone])).toBe(false));
    cases[`archive_${name}`] = byId(name, async (x) => expect(await archivedOf('activities', x.activity)).toBe(true));
    cases[`unarchive_${name}`] = byId(name, async (x, r) => expect([r.archived, await archivedOf(table, x[name])]).toEqual([false, false]));
  }
  const parents = { unit: 'program', lesson: 'unit', activity: 'lesson' } as const;
  for (const [name, parent] of Object.entries(parents) as [keyof Tree, keyof Tree][]) {
    cases[`move_${name}`] = {
      args: (x) => ({ id: x[name], [`${parent}_id`]: x[parent], position: 1 }),
      effect: async (x, r) => expect(r).toMatchObject({ id: x[name], [`${parent}_id`]: x[parent], position: 1 }),
      invisible: notFound(name),
    };
  }
  return cases;
}

beforeAll(async () => {
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

/**
 * The signed-in callers besides acme's author: what whoami and list_tenants tell them, and what
 * any other tool does — `refusal`: the text it fails with, or undefined where it works (a read).
 */
const others: {
  title: string;
  caller: string;
  rule: string;
  memberships: unknown[];
  tenants: unknown[];
  refusal: (tool: ToolCase, x: Tree) => string | undefined;
}[] = [
  {
    title: 'author of another tenant',
    caller: 'otherAuthor',
    rule: 'acme does not exist for them',
    memberships: [expect.objectContaining({ tenant: 'beta', role: 'author' })],
    tenants: [expect.objectContaining({ slug: 'beta' })],
    refusal: (tool, x) => tool.invisible(x),
  },
  {
    title: 'learner of the tenant',
    caller: 'learner',
    rule: 'reads work, writes are not allowed',
    memberships: [expect.objectContaining({ tenant: 'acme', role: 'learner' })],
    tenants: [expect.objectContaining({ slug: 'acme', role: 'learner' })],
    refusal: (tool, x) => (tool.authorsOnly ? tool.invisible(x) : tool.read ? undefined : NOT_ALLOWED),
  },
  {
    title: 'member of nothing',
    caller: 'nobody',
    rule: 'nothing of acme exists for them',
    memberships: [],
    tenants: [],
    refusal: (tool, x) => tool.invisible(x),
  },
];
describe.each(others)('$title', ({ caller, rule, memberships, tenants, refusal }) => {
  it.each(names)(`%s: ${rule}`, async (name) => {
    const x = await freshTree();
    const tool = TOOLS[name]!;
    const client = clients[caller]!;
    const before = await snapshot();
    const refused = refusal(tool, x);
    if (name === 'whoami') expect((await ok(client, name)).memberships).toEqual(memberships);
    else if (name === 'list_tenants') expect((await ok(client, name)).tenants).toEqual(tenants);
    else if (refused === undefined) await tool.effect(x, await ok(client, name, tool.args(x)));
    else expect(await fails(client, name, tool.args(x))).toBe(refused);
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
