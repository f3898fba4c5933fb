/**
 * Tenant isolation and roles, decided by RLS: an author of tenant B cannot read or write tenant
 * A (A's ids read as not found, exactly like ids that do not exist), and a learner of A reads A
 * but cannot write it. After every refused call, SQL (as the owner) shows nothing changed.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { useApp, useServer } from '../helpers/harness.ts';
import { connect, useAuthorClient, fails, ok, signIn, type Structured, contentSnapshot } from './helpers.ts';

const NOT_ALLOWED = 'not allowed: you are not an author of that tenant';
const LEARNER = { email: 'learner@acme.test', password: 'correct horse battery' };

const t = useApp();
const a = useAuthorClient(t, 'acme');
const b = useAuthorClient(t, 'beta');
let tree: { program: Structured; unit: Structured; lesson: Structured; activity: Structured };
let betaProgram: Structured;

const snapshot = () => contentSnapshot(t);

beforeAll(async () => {
  const program = await ok(a, 'create_program', { tenant: 'acme', title: 'Acme course' });
  const unit = await ok(a, 'create_unit', { program_id: program.id, title: 'U1' });
  const lesson = await ok(a, 'create_lesson', { unit_id: unit.id, title: 'L1' });
  const activity = await ok(a, 'create_activity', {
    lesson_id: lesson.id,
    title: 'A1',
    kind: 'document',
    spec: 'Write it',
    rubric: [{ criterion: 'c' }],
  });
  tree = { program, unit, lesson, activity };
  betaProgram = await ok(b, 'create_program', { tenant: 'beta', title: 'Beta course' });

  const { email, password } = LEARNER;
  await t.op('user.create', { email, password });
  await t.db.query(
    `insert into memberships (tenant_id, user_id, role)
     select t.id, u.id, 'learner' from tenants t, users u join auth.users au on au.id = u.auth_user_id
      where t.slug = 'acme' and au.email = $1`,
    [email],
  );
});
/** A learner of acme. */
const learner = useServer(async () => connect(t, await signIn(t, LEARNER.email, LEARNER.password)));

describe('an author of another tenant', () => {
  it('sees tenant A ids as not found, like ids that do not exist', async () => {
    const before = await snapshot();
    const { program, unit, lesson, activity } = tree;
    expect(await fails(b, 'get_program', { id: program.id })).toBe(`program ${program.id} not found`);
    expect(await fails(b, 'update_program', { id: program.id, title: 'mine' })).toBe(`program ${program.id} not found`);
    expect(await fails(b, 'delete_program', { id: program.id })).toBe(`program ${program.id} not found`);
    expect(await fails(b, 'update_unit', { id: unit.id, title: 'mine' })).toBe(`unit ${unit.id} not found`);
    expect(await fails(b, 'delete_unit', { id: unit.id })).toBe(`unit ${unit.id} not found`);
    expect(await fails(b, 'update_lesson', { id: lesson.id, body: 'mine' })).toBe(`lesson ${lesson.id} not found`);
    expect(await fails(b, 'delete_lesson', { id: lesson.id })).toBe(`lesson ${lesson.id} not found`);
    expect(await fails(b, 'update_activity', { id: activity.id, pass_threshold: 0 })).toBe(`activity ${activity.id} not found`);
    expect(await fails(b, 'delete_activity', { id: activity.id })).toBe(`activity ${activity.id} not found`);
    const ghost = '0190a8b4-0000-7000-8000-0000000000ff';
    expect(await fails(b, 'get_program', { id: ghost })).toBe(`program ${ghost} not found`);
    const listed = await ok(b, 'list_programs', {});
    expect(listed.programs.map((p: Structured) => p.id)).toEqual([betaProgram.id]);
    expect(await snapshot()).toEqual(before);
  });

  it('cannot write into tenant A', async () => {
    const before = await snapshot();
    const { program, unit, lesson } = tree;
    expect(await fails(b, 'create_program', { tenant: 'acme', title: 'planted' })).toBe('tenant not found: acme');
    expect(await fails(b, 'create_unit', { program_id: program.id, title: 'planted' })).toBe(`program ${program.id} not found`);
    expect(await fails(b, 'create_lesson', { unit_id: unit.id, title: 'planted' })).toBe(`unit ${unit.id} not found`);
    expect(await fails(b, 'create_activity', { lesson_id: lesson.id, title: 'planted', kind: 'site', spec: 's', rubric: [{ criterion: 'c' }] })).toBe(
      `lesson ${lesson.id} not found`,
    );
    expect(await fails(b, 'instantiate_program', { program_id: betaProgram.id, tenant: 'acme' })).toBe('tenant not found: acme');
    expect(await fails(b, 'list_programs', { tenant: 'acme' })).toBe('tenant not found: acme');
    expect(await snapshot()).toEqual(before);
  });

  it('cannot copy tenant A content into its own tenant', async () => {
    const before = await snapshot();
    expect(await fails(b, 'instantiate_program', { program_id: tree.program.id, tenant: 'beta' })).toBe(`program ${tree.program.id} not found`);
    expect(await snapshot()).toEqual(before);
  });
});

describe('a learner of the tenant', () => {
  it('reads the tenant content', async () => {
    const me = await ok(learner, 'whoami');
    expect(me.memberships).toEqual([{ tenant: 'acme', tenant_id: tree.program.tenant_id, role: 'learner' }]);
    const listed = await ok(learner, 'list_programs', { tenant: 'acme' });
    expect(listed.programs.map((p: Structured) => p.id)).toEqual([tree.program.id]);
    const read = await ok(learner, 'get_program', { id: tree.program.id, depth: 'full' });
    expect(read.units[0].lessons[0].activities[0].id).toBe(tree.activity.id);
  });

  it('cannot write it', async () => {
    const before = await snapshot();
    const { program, unit, lesson, activity } = tree;
    expect(await fails(learner, 'create_program', { tenant: 'acme', title: 'by learner' })).toBe(NOT_ALLOWED);
    expect(await fails(learner, 'create_unit', { program_id: program.id, title: 'by learner' })).toBe(NOT_ALLOWED);
    expect(await fails(learner, 'create_lesson', { unit_id: unit.id, title: 'by learner' })).toBe(NOT_ALLOWED);
    expect(await fails(learner, 'create_activity', { lesson_id: lesson.id, title: 'x', kind: 'repo', spec: 's', rubric: [{ criterion: 'c' }] })).toBe(
      NOT_ALLOWED,
    );
    expect(await fails(learner, 'update_program', { id: program.id, title: 'by learner' })).toBe(NOT_ALLOWED);
    expect(await fails(learner, 'update_unit', { id: unit.id, position: 9 })).toBe(NOT_ALLOWED);
    expect(await fails(learner, 'update_lesson', { id: lesson.id, title: 'by learner' })).toBe(NOT_ALLOWED);
    expect(await fails(learner, 'update_activity', { id: activity.id, pass_threshold: 0 })).toBe(NOT_ALLOWED);
    expect(await fails(learner, 'delete_activity', { id: activity.id })).toBe(NOT_ALLOWED);
    expect(await fails(learner, 'delete_lesson', { id: lesson.id })).toBe(NOT_ALLOWED);
    expect(await fails(learner, 'delete_unit', { id: unit.id })).toBe(NOT_ALLOWED);
    expect(await fails(learner, 'delete_program', { id: program.id })).toBe(NOT_ALLOWED);
    expect(await fails(learner, 'instantiate_program', { program_id: program.id, tenant: 'acme' })).toBe(NOT_ALLOWED);
    expect(await snapshot()).toEqual(before);
  });
});
