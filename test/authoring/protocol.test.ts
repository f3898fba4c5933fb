/**
 * Protocol errors stay protocol errors: an unknown tool, unknown, missing or invalid arguments
 * are JSON-RPC -32602 (the SDK client throws), the tool does not run, nothing is written.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApp, type TestApp } from '../helpers/harness.ts';
import { authorClient, contentCounts, ok, type Structured } from './helpers.ts';

let t: TestApp;
let client: Client;
let lesson: Structured;
let program: Structured;

beforeAll(async () => {
  t = await startApp();
  client = (await authorClient(t, 'acme')).client;
  program = await ok(client, 'create_program', { tenant: 'acme', title: 'P' });
  const unit = await ok(client, 'create_unit', { program_id: program.id, title: 'U' });
  lesson = await ok(client, 'create_lesson', { unit_id: unit.id, title: 'L' });
});
afterAll(async () => {
  await client?.close();
  await t?.close();
});

async function expectInvalidParams(name: string, args: Record<string, unknown>, message: RegExp) {
  const before = await contentCounts(t);
  const err = await client.callTool({ name, arguments: args }).then(
    (result) => {
      throw new Error(`${name} answered ${JSON.stringify(result)}`);
    },
    (e: { code?: number; message: string }) => e,
  );
  expect(err.code).toBe(-32602);
  expect(err.message).toMatch(message);
  expect(await contentCounts(t)).toEqual(before);
}

const activity = () => ({ lesson_id: lesson.id, title: 'A', kind: 'document', spec: 'S', rubric: [{ criterion: 'c' }] });

describe('protocol errors', () => {
  it('unknown tool', () => expectInvalidParams('drop_everything', {}, /Tool drop_everything not found/));

  it('unknown argument', () =>
    expectInvalidParams('create_program', { tenant: 'acme', title: 'x', owner: 'me' }, /Unrecognized key: "owner"/));

  it('unknown argument inside a rubric criterion', () =>
    expectInvalidParams('create_activity', { ...activity(), rubric: [{ criterion: 'c', points: 3 }] }, /Unrecognized key/));

  it('missing argument', () => expectInvalidParams('create_unit', { title: 'no program' }, /program_id/));

  it('wrong kind', () => expectInvalidParams('create_activity', { ...activity(), kind: 'video' }, /kind/));

  it('negative rubric weight', () =>
    expectInvalidParams('create_activity', { ...activity(), rubric: [{ criterion: 'c', weight: -1 }] }, /weight/));

  it('pass threshold out of range', () => expectInvalidParams('create_activity', { ...activity(), pass_threshold: 101 }, /pass_threshold/));

  it('title longer than 500 characters', () =>
    expectInvalidParams('create_program', { tenant: 'acme', title: 'x'.repeat(501) }, /title/));

  it('id that is not a uuid', () => expectInvalidParams('get_program', { id: 'abc' }, /id/));

  it('update with nothing to change', () => expectInvalidParams('update_program', { id: program.id }, /nothing to update/));

  it('malformed cursor', () => expectInvalidParams('list_programs', { cursor: 'not-a-cursor' }, /cursor/));
});
