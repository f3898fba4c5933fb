/**
 * MCP beyond tools (issue #16), with the SDK client: programs and activities as resources
 * (`resources/list`, `resources/read`), the prompts (`prompts/list`, `prompts/get`), progress
 * notifications during import_program; and the protocol's edges over plain HTTP: a JSON-RPC
 * batch is refused (-32600), malformed JSON is -32700, JSON that is not JSON-RPC -32600, params
 * that do not fit the method -32602.
 */
import type { Progress } from '@modelcontextprotocol/sdk/types.js';
import { beforeAll, describe, expect, it } from 'vitest';
import { useApp, useFixture } from '../helpers/harness.ts';
import { contentCounts, ok, rawPost, type Structured, useAuthor, useAuthorClient } from './helpers.ts';

const t = useApp();
const author = useAuthor(t, 'acme');
const a = useFixture(async () => author.client); // author of acme
const b = useAuthorClient(t, 'beta'); // author of beta
let x: { program: Structured; activity: Structured };
let catalogId: string;
const GHOST = '00000000-0000-7000-8000-000000000000';

/** The JSON-RPC error a client call fails with. */
const rpcError = (p: Promise<unknown>) =>
  p.then(
    (r) => {
      throw new Error(`answered ${JSON.stringify(r).slice(0, 200)}`);
    },
    (e: { code?: number; message: string }) => e,
  );

beforeAll(async () => {
  const program = await ok(a, 'create_program', { tenant: 'acme', title: 'Grid course' });
  const unit = await ok(a, 'create_unit', { program_id: program.id, title: 'Grid' });
  const lesson = await ok(a, 'create_lesson', { unit_id: unit.id, title: 'Tracks' });
  const activity = await ok(a, 'create_activity', {
    lesson_id: lesson.id,
    title: 'Gallery',
    kind: 'site',
    spec: 'Build a gallery with CSS grid.',
    rubric: [{ criterion: 'Uses grid', weight: 2 }],
  });
  x = { program, activity };
  await ok(b, 'create_program', { tenant: 'beta', title: 'Beta only' });
  [{ id: catalogId }] = (await t.db.query<{ id: string }>(`insert into programs (tenant_id, title) values (null, 'Catalog course') returning id`)) as [
    { id: string },
  ];
});

describe('resources', () => {
  it("lists the programs the caller can read as svc://programs/{id}, oldest first (not beta's)", async () => {
    const { resources, nextCursor } = await a.listResources();
    expect(resources).toEqual([
      {
        uri: `svc://programs/${x.program.id}`,
        name: 'Grid course',
        title: 'Grid course',
        description: expect.stringContaining('tenant acme'),
        mimeType: 'application/json',
      },
      {
        uri: `svc://programs/${catalogId}`,
        name: 'Catalog course',
        title: 'Catalog course',
        description: expect.stringContaining('service catalog'),
        mimeType: 'application/json',
      },
    ]);
    expect(nextCursor).toBeUndefined();
    const { resourceTemplates } = await a.listResourceTemplates();
    expect(resourceTemplates.map((r) => r.uriTemplate).sort()).toEqual(['svc://activities/{id}', 'svc://programs/{id}']);
    expect((await rpcError(a.listResources({ cursor: 'bm9wZQ' }))).code).toBe(-32602);
  });

  it("reads a program's outline and one activity, as get_program and get_activity answer them", async () => {
    const uri = `svc://programs/${x.program.id}`;
    const program = await a.readResource({ uri });
    expect(program.contents).toEqual([{ uri, mimeType: 'application/json', text: expect.any(String) }]);
    expect(JSON.parse((program.contents[0] as { text: string }).text)).toEqual(await ok(a, 'get_program', { id: x.program.id }));

    const activityUri = `svc://activities/${x.activity.id}`;
    const activity = await a.readResource({ uri: activityUri });
    expect(JSON.parse((activity.contents[0] as { text: string }).text)).toEqual(x.activity);
  });

  it('answers -32002 for what the caller cannot read: unknown ids, other tenants, malformed ids', async () => {
    for (const uri of [`svc://programs/${GHOST}`, `svc://activities/${GHOST}`, 'svc://programs/nope', `svc://programs/${x.activity.id}`]) {
      expect((await rpcError(a.readResource({ uri }))).code, uri).toBe(-32002);
    }
    expect((await rpcError(b.readResource({ uri: `svc://programs/${x.program.id}` }))).code).toBe(-32002);
    expect((await rpcError(b.readResource({ uri: `svc://activities/${x.activity.id}` }))).code).toBe(-32002);
  });
});

describe('prompts', () => {
  it('lists draft_unit and write_rubric with their arguments', async () => {
    const { prompts } = await a.listPrompts();
    expect(prompts.map((p) => [p.name, p.arguments?.map((arg) => [arg.name, arg.required])])).toEqual([
      [
        'draft_unit',
        [
          ['program_id', true],
          ['outline', true],
        ],
      ],
      ['write_rubric', [['activity_id', true]]],
    ]);
    for (const p of prompts) expect(p.description).toBeTruthy();
  });

  it('write_rubric embeds the activity and asks for update_activity', async () => {
    const prompt = await a.getPrompt({ name: 'write_rubric', arguments: { activity_id: x.activity.id } });
    const [resource, ask] = prompt.messages;
    expect(resource!.content).toEqual({
      type: 'resource',
      resource: { uri: `svc://activities/${x.activity.id}`, mimeType: 'application/json', text: JSON.stringify(x.activity) },
    });
    expect(ask!.content).toMatchObject({ type: 'text', text: expect.stringContaining(`update_activity {id: "${x.activity.id}"`) });
  });

  it("draft_unit embeds the program's outline and the instructor's outline", async () => {
    const prompt = await a.getPrompt({ name: 'draft_unit', arguments: { program_id: x.program.id, outline: 'Subgrid and named areas' } });
    const [resource, ask] = prompt.messages;
    expect(JSON.parse((resource!.content as { resource: { text: string } }).resource.text)).toEqual(await ok(a, 'get_program', { id: x.program.id }));
    expect((ask!.content as { text: string }).text).toMatch(/Subgrid and named areas[\s\S]*create_unit/);
  });

  it('refuses ids the caller cannot read and malformed arguments (-32602)', async () => {
    const foreign = await rpcError(b.getPrompt({ name: 'write_rubric', arguments: { activity_id: x.activity.id } }));
    expect(foreign).toMatchObject({ code: -32602, message: expect.stringContaining(`activity_id: activity ${x.activity.id} not found`) });
    expect((await rpcError(a.getPrompt({ name: 'draft_unit', arguments: { program_id: GHOST, outline: 'x' } }))).code).toBe(-32602);
    expect((await rpcError(a.getPrompt({ name: 'write_rubric', arguments: { activity_id: 'nope' } }))).code).toBe(-32602);
    expect((await rpcError(a.getPrompt({ name: 'draft_unit', arguments: { program_id: x.program.id } }))).code).toBe(-32602);
  });
});

describe('progress notifications', () => {
  const units = Array.from({ length: 3 }, (_, u) => ({
    title: `U${u}`,
    lessons: [{ title: `L${u}`, activities: [{ title: `A${u}`, kind: 'document', spec: 'S', rubric: [{ criterion: 'c' }] }] }],
  }));

  it('are sent during import_program when the client sends a progressToken', async () => {
    const seen: Progress[] = [];
    const result = await a.callTool({ name: 'import_program', arguments: { tenant: 'acme', external_id: 'progress-1', title: 'P', units } }, undefined, {
      onprogress: (p) => seen.push(p),
    });
    expect(result.isError).toBeFalsy();
    expect(seen).toEqual([
      { progress: 1, total: 10, message: 'wrote 1 program' },
      { progress: 4, total: 10, message: 'wrote 3 units' },
      { progress: 7, total: 10, message: 'wrote 3 lessons' },
      { progress: 10, total: 10, message: 'wrote 3 activities' },
    ]);
  });

  it('are not sent without a progressToken, and the answer stays plain JSON', async () => {
    const res = await rawPost(
      t,
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'import_program', arguments: { tenant: 'acme', external_id: 'progress-2', title: 'P', units } },
      },
      { authorization: `Bearer ${author.token}` },
    );
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(((await res.json()) as { result: Structured }).result.structuredContent.counts).toEqual({ units: 3, lessons: 3, activities: 3 });
  });
});

describe('protocol edges over HTTP', () => {
  const auth = () => ({ authorization: `Bearer ${author.token}` });

  it('refuses a JSON-RPC batch (-32600) and runs none of it', async () => {
    const before = await contentCounts(t);
    const call = (id: number) => ({
      jsonrpc: '2.0',
      id,
      method: 'tools/call',
      params: { name: 'create_program', arguments: { tenant: 'acme', title: `B${id}` } },
    });
    const res = await rawPost(t, [call(1), call(2)], auth());
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ jsonrpc: '2.0', error: { code: -32600, message: expect.stringMatching(/batches are not supported/) }, id: null });
    expect(await contentCounts(t)).toEqual(before);
  });

  it.each([
    ['malformed JSON', '{"jsonrpc": "2.0", "id": 1, "method": ', -32700, /^Parse error/],
    ['an object that is not JSON-RPC', '{"hello": "world"}', -32600, /^Invalid Request: the body is JSON but not a JSON-RPC 2.0 message/],
    ['JSON-RPC 1.0', '{"jsonrpc": "1.0", "id": 1, "method": "ping"}', -32600, /^Invalid Request/],
    ['an empty object', '{}', -32600, /^Invalid Request/],
    ['null', 'null', -32600, /^Invalid Request/],
    ['a string', '"x"', -32600, /^Invalid Request/],
  ])('answers %s with %i, HTTP 400', async (_what, body, code, message) => {
    const res = await rawPost(t, body, auth());
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ jsonrpc: '2.0', id: null, error: { code, message: expect.stringMatching(message) } });
  });

  it.each([
    ['no params', undefined, /^Invalid params for tools\/call: params: /],
    ['arguments a string', { name: 'create_program', arguments: 'x' }, /^Invalid params for tools\/call: params\.arguments: /],
    ['arguments an array', { name: 'create_program', arguments: [1] }, /^Invalid params for tools\/call: params\.arguments: /],
    ['arguments null', { name: 'create_program', arguments: null }, /^Invalid params for tools\/call: params\.arguments: /],
    ['no tool name', { arguments: {} }, /^Invalid params for tools\/call: params\.name: /],
  ])('answers tools/call with %s with -32602 naming the field, and runs nothing', async (_what, params, message) => {
    const before = await contentCounts(t);
    const res = await rawPost(t, { jsonrpc: '2.0', id: 9, method: 'tools/call', ...(params === undefined ? {} : { params }) }, auth());
    expect(res.status).toBe(200);
    const answer = (await res.json()) as { id: number; error: { code: number; message: string } };
    expect(answer).toEqual({ jsonrpc: '2.0', id: 9, error: { code: -32602, message: expect.stringMatching(message) } });
    expect(answer.error.message.length).toBeLessThan(300);
    expect(answer.error.message).not.toMatch(/[[{]|\bat .*\.(js|ts)/);
    expect(await contentCounts(t)).toEqual(before);
  });

  it('answers resources/read without a uri with -32602', async () => {
    const res = await rawPost(t, { jsonrpc: '2.0', id: 3, method: 'resources/read', params: {} }, auth());
    expect(await res.json()).toEqual({
      jsonrpc: '2.0',
      id: 3,
      error: { code: -32602, message: expect.stringMatching(/^Invalid params for resources\/read: params\.uri: /) },
    });
  });

  it('answers an unknown method with -32601', async () => {
    const res = await rawPost(t, { jsonrpc: '2.0', id: 7, method: 'tools/destroy', params: {} }, auth());
    expect(((await res.json()) as { error: { code: number } }).error.code).toBe(-32601);
  });
});
