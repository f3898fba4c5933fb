/**
 * Bulk results data for the results benchmark (bench/results-api.ts) and the plan checks
 * (test/results/plans.test.ts), written with `generate_series` in one script: `tenants` tenants
 * (slugs `bench-1` …) with one program → unit → lesson → `activitiesPerTenant` activities each; one
 * tenant's learners hold `bigShare` of the `rows` activity results (so a page 900,000 rows deep exists
 * in a 1M run), the other tenants share the rest; every learner has a result for each activity of
 * the tenant, one artifact per result, and one progress row per learner; each learner is a member
 * of its tenant, each tenant has 50 more (empty) programs, and a tenth of the results have a
 * tombstone beside them (listing shapes of issue #14), and a fifth an audit event (issue #23). Then `vacuum analyze`
 * (dead versions gone, plans see the sizes). Run as the database owner on a migrated database.
 */
import type { Db } from '../../src/db/index.ts';

export interface ResultsLoad {
  rows: number;
  tenants: number;
  activitiesPerTenant?: number;
  /** Share of the rows held by the biggest tenant (0–1; default 0.91). */
  bigShare?: number;
}

export async function loadResults(db: Db, { rows, tenants, activitiesPerTenant = 20, bigShare = 0.91 }: ResultsLoad): Promise<void> {
  const bigUsers = Math.ceil((rows * (tenants > 1 ? bigShare : 1)) / activitiesPerTenant);
  const otherUsers = tenants > 1 ? Math.ceil((rows - bigUsers * activitiesPerTenant) / activitiesPerTenant) : 0;
  await db.exec(`
    insert into tenants (slug, name) select 'bench-' || t, 'Bench ' || t from generate_series(1, ${tenants}) t;
    insert into programs (tenant_id, title) select id, 'Program' from tenants where slug like 'bench-%';
    insert into units (program_id, title) select p.id, 'Unit' from programs p join tenants t on t.id = p.tenant_id where t.slug like 'bench-%';
    insert into lessons (unit_id, title) select u.id, 'Lesson' from units u join tenants t on t.id = u.tenant_id where t.slug like 'bench-%';
    insert into activities (lesson_id, title, kind, spec, rubric)
      select l.id, 'Activity ' || n, 'document', 'spec', '[{"criterion":"c","weight":1}]'
      from lessons l join tenants t on t.id = l.tenant_id, generate_series(1, ${activitiesPerTenant}) n where t.slug like 'bench-%';
    create temp table bench_auth_users as
      select gen_random_uuid() as id, n from generate_series(1, ${bigUsers + otherUsers}) n;
    insert into auth.users (id, email) select id, 'u' || n || '-' || id || '@bench.test' from bench_auth_users;
    insert into users (auth_user_id) select id from bench_auth_users;
    create temp table bench_users as
      select u.id, case when b.n <= ${bigUsers} then 0 else 1 + (b.n - ${bigUsers} - 1) % ${Math.max(1, tenants - 1)} end as slot
      from bench_auth_users b join users u on u.auth_user_id = b.id;
    create temp table bench_tenants as
      select id, row_number() over (order by slug) - 1 as slot from tenants where slug like 'bench-%';
    insert into activity_results (tenant_id, activity_id, lesson_id, program_id, user_id, status, score, completed_at, created_at)
      select a.tenant_id, a.id, a.lesson_id, a.program_id, u.id,
             case when random() < 0.7 then 'completed' else 'failed' end, round((random() * 100)::numeric, 2), now(), ts
      from bench_tenants bt
      join activities a on a.tenant_id = bt.id
      join bench_users u on u.slot = bt.slot,
      lateral (select timestamptz '2026-01-01' + (random() * interval '300 days') as ts) r;
    insert into artifacts (tenant_id, result_id, activity_id, user_id, kind, content, verification, created_at)
      select r.tenant_id, r.id, r.activity_id, r.user_id, 'document', 'answer', '{"status":"passed","score":80}', r.created_at + interval '1 microsecond'
      from activity_results r join bench_tenants bt on bt.id = r.tenant_id;
    insert into progress (tenant_id, user_id, program_id, completed_count, last_activity_at)
      select r.tenant_id, r.user_id, r.program_id, count(*) filter (where r.status = 'completed'), max(r.created_at)
      from activity_results r join bench_tenants bt on bt.id = r.tenant_id group by 1, 2, 3;
    insert into memberships (tenant_id, user_id, role)
      select bt.id, u.id, 'learner' from bench_tenants bt join bench_users u on u.slot = bt.slot;
    insert into programs (tenant_id, title) select bt.id, 'Empty ' || n from bench_tenants bt, generate_series(1, 50) n;
    insert into deletions (tenant_id, id, resource, svc_user_id, program_id, deleted_at)
      select r.tenant_id, gen_random_uuid(), 'activity_result', r.user_id, r.program_id, r.created_at
      from activity_results r join bench_tenants bt on bt.id = r.tenant_id where random() < 0.1;
    insert into audit_events (tenant_id, actor_kind, action, target_type, target_id, at)
      select r.tenant_id, 'cli', case when random() < 0.5 then 'author.grant' else 'key.create' end, 'activity_result', r.id::text, r.created_at
      from activity_results r join bench_tenants bt on bt.id = r.tenant_id where random() < 0.2;
    drop table bench_auth_users, bench_users, bench_tenants;
  `);
  // As autovacuum would leave the tables: each artifact's trigger (migration 0164) updated its
  // result, so every loaded result has a dead version; and statistics, so plans see the sizes.
  await db.exec('vacuum analyze');
}
