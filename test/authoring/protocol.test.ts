/**
 * An unknown tool is a protocol error (JSON-RPC -32602, the SDK client throws); unknown, missing
 * or invalid arguments are `isError` results whose text names the field (SEP-1303, so the model
 * can correct itself). Either way the tool does not run and nothing is written.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { useApp } from '../helpers/harness.ts';
import { contentCounts, useAuthorClient, fails, ok, type Structured } from './helpers.ts';

const t = useApp();
const client = useAuthorClient(t, 'acme');
let lesson: Structured;
let program: Structured;

beforeAll(async () => {
  program = await ok(client, 'create_program', { tenant: 'acme', title: 'P' });
  const unit = await ok(client, 'create_unit', { program_id: program.id, title: 'U' });
  lesson = await ok(client, 'create_lesson', { unit_id: unit.id, title: 'L' });
});

async function expectUnknownTool(name: string) {
  const before = await contentCounts(t);
  const err = await client.callTool({ name, arguments: {} }).then(
    (result) => {
      throw new Error(`${name} answered ${JSON.stringify(result)}`);
    },
    (e: { code?: number; message: string }) => e,
  );
  expect(err.code).toBe(-32602);
  expect(err.message).toMatch(new RegExp(`Tool ${name} not found`));
  expect(await contentCounts(t)).toEqual(before);
}

async function expectInvalidArguments(name: string, args: Record<string, unknown>, message: RegExp) {
  const before = await contentCounts(t);
  const text = await fails(client, name, args);
  expect(text).toMatch(message);
  expect(await contentCounts(t)).toEqual(before);
}

const activity = () => ({ lesson_id: lesson.id, title: 'A', kind: 'document', spec: 'S', rubric: [{ criterion: 'c' }] });

describe('protocol errors', () => {
  it('unknown tool', () => expectUnknownTool('drop_everything'));
});

describe('invalid arguments: isError naming the field', () => {
  it('unknown argument', () => expectInvalidArguments('create_program', { tenant: 'acme', title: 'x', owner: 'me' }, /Unrecognized key: "owner"/));

  it('unknown argument inside a rubric criterion', () =>
    expectInvalidArguments('create_activity', { ...activity(), rubric: [{ criterion: 'c', points: 3 }] }, /Unrecognized key/));

  it('missing argument', () => expectInvalidArguments('create_unit', { title: 'no program' }, /program_id/));

  it('wrong kind', () => expectInvalidArguments('create_activity', { ...activity(), kind: 'video' }, /kind/));

  it('negative rubric weight', () => expectInvalidArguments('create_activity', { ...activity(), rubric: [{ criterion: 'c', weight: -1 }] }, /weight/));

  it('pass threshold out of range', () => expectInvalidArguments('create_activity', { ...activity(), pass_threshold: 101 }, /pass_threshold/));

  it('title longer than 500 characters', () => expectInvalidArguments('create_program', { tenant: 'acme', title: 'x'.repeat(501) }, /title/));

  it('id that is not a uuid', () => expectInvalidArguments('get_program', { id: 'abc' }, /Invalid arguments for tool get_program:[\s\S]*→ at id/));

  it('depth that is not allowed', () =>
    expectInvalidArguments(
      'get_program',
      { id: program.id, depth: 'everything' },
      /Invalid arguments for tool get_program:[\s\S]*"outline"\|"full"[\s\S]*→ at depth/,
    ));

  it('update with nothing to change', () => expectInvalidArguments('update_program', { id: program.id }, /nothing to update/));

  it('malformed cursor', () => expectInvalidArguments('list_programs', { cursor: 'not-a-cursor' }, /cursor/));
});
