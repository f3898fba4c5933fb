-- 0121 keys that lead with tenant_id (issue #15, docs/scaling.md "Sharding by tenant").
--
-- To distribute a table by tenant_id (Citus), every primary key and unique constraint must
-- contain the distribution column, and a foreign key between two distributed tables must include
-- it on both sides. The learners' tables still had primary keys of (id) alone; they become
-- (tenant_id, id), and the foreign keys between them become (tenant_id, x_id) → (tenant_id, id)
-- with the same ON DELETE rules. So a row can no longer point at another tenant's row at all
-- (before, only the readers' tenant filters kept such a row out). A plain index on (id) stays for
-- the lookups by id alone (a learner's result by id, a grading job's artifact), which on a
-- distributed database become router queries once they also name the tenant.
--
-- test/sql/tenant-keys.test.ts reads the catalog and fails on any tenant-owned table whose key
-- does not lead with tenant_id. Content (programs, units, lessons, activities) keeps (id): the
-- service's catalog programs have no tenant (DESIGN §4) — see docs/scaling.md for that step.

-- Foreign keys onto the old primary keys go first.
alter table artifacts drop constraint artifacts_result_id_fkey;
alter table model_calls drop constraint model_calls_artifact_id_fkey;
alter table judge_idempotency_keys drop constraint judge_idempotency_keys_artifact_id_fkey;

alter table activity_results drop constraint activity_results_pkey, add primary key (tenant_id, id);
alter table artifacts drop constraint artifacts_pkey, add primary key (tenant_id, id);
alter table progress drop constraint progress_pkey, add primary key (tenant_id, id);
alter table embed_author_grants drop constraint embed_author_grants_pkey, add primary key (tenant_id, id);

create index activity_results_id_idx on activity_results (id);
create index artifacts_id_idx on artifacts (id);
create index progress_id_idx on progress (id);
create index embed_author_grants_id_idx on embed_author_grants (id);

alter table artifacts add constraint artifacts_result_id_fkey
  foreign key (tenant_id, result_id) references activity_results (tenant_id, id) on delete cascade;
alter table model_calls add constraint model_calls_artifact_id_fkey
  foreign key (tenant_id, artifact_id) references artifacts (tenant_id, id) on delete cascade;
alter table judge_idempotency_keys add constraint judge_idempotency_keys_artifact_id_fkey
  foreign key (tenant_id, artifact_id) references artifacts (tenant_id, id) on delete cascade;
