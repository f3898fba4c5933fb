/**
 * Tenant isolation of the Results API: another tenant's ids are 404 (never 403) and never
 * appear in lists, filters or artifact_ids; cursors do not cross tenants; and the database
 * itself (role svc_results + RLS) confines a query that forgot its tenant filter.
 */
import { describe, expect, it } from 'vitest';
import { asResultsTenant } from '../../src/db/index.ts';
import { allStatements, statementFunction } from '../../src/results/queries.ts';
import { useApp, useFixture } from '../helpers/harness.ts';
import { expectError, get, getJson, newArtifact, seedTenant, walk, type KeyStyle } from './fixtures.ts';

const t = useApp();
const a = useFixture(() => seedTenant(t, 'alpha'));
const b = useFixture(() => seedTenant(t, 'beta'));

const STYLES: KeyStyle[] = ['bearer', 'x-svc-api-key'];

describe('cross-tenant matrix', () => {
  it('tenant B gets 404 not_found for each of tenant A’s result and artifact ids (and A gets 200)', async () => {
    for (const style of STYLES) {
      for (const id of a.resultIds) {
        await getJson(t, `/v1/activity-results/${id}`, a.key, 200, style);
        await expectError(await get(t, `/v1/activity-results/${id}`, b.key, style), 404, 'not_found');
      }
      for (const id of a.artifactIds) {
        await getJson(t, `/v1/artifacts/${id}`, a.key, 200, style);
        await expectError(await get(t, `/v1/artifacts/${id}`, b.key, style), 404, 'not_found');
      }
    }
  });

  it('answers another tenant’s id exactly like an id that does not exist', async () => {
    const foreign = await get(t, `/v1/artifacts/${a.artifactIds[0]}`, b.key);
    const missing = await get(t, '/v1/artifacts/00000000-0000-4000-8000-000000000000', b.key);
    expect(foreign.status).toBe(missing.status);
    const f = (await foreign.json()) as any;
    const m = (await missing.json()) as any;
    expect(f.error.code).toBe(m.error.code);
    expect(f.error.message.replace(a.artifactIds[0]!, 'ID')).toBe(m.error.message.replace('00000000-0000-4000-8000-000000000000', 'ID'));
  });

  it('does not confuse the two kinds of ids (a result id is not an artifact)', async () => {
    await expectError(await get(t, `/v1/artifacts/${a.resultIds[0]}`, a.key), 404, 'not_found');
    await expectError(await get(t, `/v1/activity-results/${a.artifactIds[0]}`, a.key), 404, 'not_found');
  });

  it('never lists tenant A’s rows to tenant B, even when B filters by A’s ids', async () => {
    const aIds = new Set([...a.resultIds, ...a.artifactIds, ...a.userIds, a.programId, a.emptyProgramId]);
    const lists = [
      '/v1/activity-results',
      '/v1/artifacts',
      `/v1/activity-results?activity_id=${a.activityIds[0]}`,
      `/v1/activity-results?user_id=${a.userIds[0]}`,
      `/v1/artifacts?activity_id=${a.activityIds[0]}`,
      `/v1/artifacts?user_id=${a.userIds[0]}`,
    ];
    for (const path of lists) {
      const { ids } = await walk(t, path, b.key, 1);
      for (const id of ids) expect(aIds.has(id), `${path} leaked ${id}`).toBe(false);
    }
    const bResults = (await walk(t, '/v1/activity-results', b.key, 2)).ids;
    expect(bResults).toEqual(b.resultIds);
    expect((await walk(t, '/v1/artifacts', b.key, 2)).ids).toEqual(b.artifactIds);
    const progress = (await walk(t, '/v1/progress', b.key, 1, (p) => p.program_id)).ids;
    expect(progress.every((programId) => programId === b.programId || programId === b.emptyProgramId)).toBe(true);
    expect(progress).toHaveLength(3);
    for (const path of [`/v1/progress?user_id=${a.userIds[0]}`, `/v1/progress?program_id=${a.programId}`]) {
      expect((await getJson(t, path, b.key)).data).toEqual([]);
    }
  });

  it('never lists tenant A’s rows to tenant B in the updated_since feed either', async () => {
    const aIds = new Set([...a.resultIds, ...a.artifactIds, ...a.userIds, a.programId, a.emptyProgramId]);
    for (const path of ['/v1/activity-results', '/v1/artifacts', '/v1/progress']) {
      const { ids } = await walk(t, `${path}?updated_since=2000-01-01T00:00:00Z`, b.key, 1, (r) => r.id ?? r.svc_user_id);
      expect(ids.length).toBeGreaterThan(0);
      for (const id of ids) expect(aIds.has(id), `${path} leaked ${id}`).toBe(false);
    }
  });

  it('refuses a cursor issued to another tenant', async () => {
    const fromA = (await getJson(t, '/v1/activity-results?limit=1', a.key)).next_cursor;
    const message = await expectError(await get(t, `/v1/activity-results?cursor=${fromA}`, b.key), 400, 'invalid_request');
    expect(message).toMatch(/^cursor:/);
  });

  it('cannot hold an artifact that points across tenants: the database refuses it (migration 0121)', async () => {
    // An artifact of tenant B referencing tenant A's result: the (tenant_id, result_id) foreign key says no.
    await expect(newArtifact(t.db, { resultId: a.resultIds[1]!, tenantId: b.id, createdAt: '2026-01-01T00:00:00Z' })).rejects.toMatchObject({ code: '23503' });
    expect((await getJson(t, `/v1/activity-results/${a.resultIds[1]}`, a.key)).artifact_ids).toEqual([]);
  });
});

describe('isolation enforced by the database', () => {
  const tables = ['activity_results', 'artifacts', 'progress', 'activities'];

  it('as svc_results with tenant A set, a query WITHOUT a tenant filter sees only tenant A', async () => {
    for (const table of tables) {
      const all = await t.db.query<{ tenant_id: string }>(`select tenant_id from ${table}`);
      const owner = new Set(all.map((r) => r.tenant_id));
      expect(owner.has(a.id) && owner.has(b.id), `${table} holds both tenants`).toBe(true);

      const seen = await asResultsTenant(t.db, a.id, (tx) => tx.query<{ tenant_id: string }>(`select tenant_id from ${table}`));
      expect(seen.length, table).toBe(all.filter((r) => r.tenant_id === a.id).length);
      expect(new Set(seen.map((r) => r.tenant_id)), table).toEqual(new Set([a.id]));
    }
  });

  it('finds another tenant’s row by id as nothing, not as an error', async () => {
    const rows = await asResultsTenant(t.db, b.id, (tx) => tx.query('select id from activity_results where id = $1', [a.resultIds[0]]));
    expect(rows).toEqual([]);
  });

  it('svc.results_enter (the first step of every API statement) confines a query that forgot its tenant filter', async () => {
    const forgetful = (tenantId: string) =>
      t.db.transaction(async (tx) => {
        await tx.query('select svc.results_enter($1::uuid, false)', [tenantId]);
        return tx.query<{ tenant_id: string; role: string }>('select tenant_id, current_user as role from activity_results');
      });
    for (const tenant of [a, b]) {
      const rows = await forgetful(tenant.id);
      expect(rows.length).toBe(3);
      expect(new Set(rows.map((r) => r.tenant_id))).toEqual(new Set([tenant.id]));
      expect(rows[0]!.role).toBe('svc_results');
    }
    // As svc_results it can read nothing else and write nothing.
    for (const sql of ['select * from api_keys', 'delete from progress']) {
      await expect(
        t.db.transaction(async (tx) => {
          await tx.query('select svc.results_enter($1::uuid, false)', [a.id]);
          return tx.query(sql);
        }),
        sql,
      ).rejects.toThrow(/permission denied/);
    }
    // Without a tenant it refuses; and the roles of the other surfaces cannot enter at all.
    await expect(t.db.query('select svc.results_enter(null, false)')).rejects.toThrow(/no tenant/);
    for (const role of ['authenticated', 'svc_results', 'anon']) {
      await expect(
        t.db.transaction(async (tx) => {
          await tx.query(`select set_config('role', '${role}', true)`);
          return tx.query('select svc.results_enter($1::uuid, false)', [a.id]);
        }),
        role,
      ).rejects.toThrow(/permission denied/);
    }
  });

  it('the statement functions the API runs are confined the same way, and callable by the service only', async () => {
    const [fn] = await t.db.query<{ name: string }>(
      `select proname as name from pg_proc where pronamespace = 'svc'::regnamespace and proname like 'results_q_%' limit 1`,
    );
    expect(fn).toBeDefined();
    const installed = await t.db.query<{ n: number }>(`select count(*)::int as n from pg_proc where proname like 'results_q_%'`);
    expect(installed[0]!.n).toBe(new Set(allStatements().map((st) => statementFunction(st).name)).size);
    for (const role of ['authenticated', 'svc_results', 'anon']) {
      await expect(
        t.db.transaction(async (tx) => {
          await tx.query(`select set_config('role', '${role}', true)`);
          return tx.query(`select * from svc.${fn!.name}($1::text[])`, [[a.id, '1', '-infinity', '00000000-0000-0000-0000-000000000000', 'x', 'x', 'x']]);
        }),
        role,
      ).rejects.toThrow(/permission denied/);
    }
  });

  it('shows nothing when no tenant is set', async () => {
    const rows = await t.db.transaction(async (tx) => {
      await tx.query(`select set_config('role', 'svc_results', true)`);
      return tx.query('select id from activity_results');
    });
    expect(rows).toEqual([]);
  });

  it('confines learners, content and tombstones to the tenant in the database, whatever the WHERE clause', async () => {
    await t.db.query('delete from progress where tenant_id = any($1::uuid[]) and program_id = any($2::uuid[])', [
      [a.id, b.id],
      [a.emptyProgramId, b.emptyProgramId],
    ]);
    for (const table of ['memberships', 'programs', 'units', 'lessons', 'deletions']) {
      const tenants = await asResultsTenant(t.db, a.id, (tx) => tx.query<{ tenant_id: string }>(`select distinct tenant_id from ${table}`));
      expect(
        tenants.map((r) => r.tenant_id),
        table,
      ).toEqual([a.id]);
    }
    // The learner object of another tenant's learner is null (not a member), and its identity filters find nothing.
    const [row] = await asResultsTenant(t.db, a.id, (tx) =>
      tx.query<{ j: unknown; n: number }>(
        `select svc.results_learner_json($1, now(), now()) as j, (select count(*)::int from svc.results_learners_by_subject('x')) as n`,
        [b.userIds[0]],
      ),
    );
    expect(row).toEqual({ j: null, n: 0 });
    await expectError(await get(t, `/v1/learners/${b.userIds[0]}`, a.key), 404, 'not_found');
    await expectError(await get(t, `/v1/programs/${b.programId}`, a.key), 404, 'not_found');
    const tombstones = (await getJson(t, '/v1/deletions', a.key)).data;
    expect(tombstones.length).toBeGreaterThan(0);
    expect(tombstones.every((d: any) => d.program_id === a.emptyProgramId)).toBe(true);
  });

  it('lets svc_results read nothing else and write nothing', async () => {
    for (const sql of [
      'select * from api_keys',
      'select * from tenants',
      'select * from users',
      'select * from auth.users',
      'select * from auth.identities',
      'select * from tenant_idps',
      `update activity_results set score = 0`,
      `delete from artifacts`,
      `insert into progress (tenant_id, user_id, program_id) values ('${a.id}', '${a.userIds[0]}', '${a.programId}')`,
    ]) {
      await expect(
        asResultsTenant(t.db, a.id, (tx) => tx.query(sql)),
        sql,
      ).rejects.toThrow(/permission denied/);
    }
  });
});
