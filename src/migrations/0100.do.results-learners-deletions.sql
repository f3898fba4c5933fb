-- 0100 results: learners, content outline and tombstones for the Results API (issue #14).
--
-- 1. Learners: a tenant's learners are its memberships. memberships gets updated_at (set by the
--    database with the writer's transaction id forced, svc.results_touch of 0020, so the sync
--    horizon holds for the learners feed too) and moves when the learner's IdP profile (email)
--    changes. svc.results_learner_json builds a learner's object: the IdP identities whose
--    issuer is the tenant's IdP (never another tenant's identities of the same person) and the
--    email the IdP gave verified.
-- 2. Content: svc_results reads the tenant's programs, units and lessons (activities: 0001).
-- 3. Tombstones: `deletions` holds one row per deleted result, artifact, progress row, learner
--    (membership) and content record of a tenant, written by AFTER DELETE triggers whoever
--    deletes (an author over MCP, `svc learner delete`, an admin deleting a user, cascades).
--    deleted_at is clock_timestamp() of a writing transaction, so the feed is ordered and held
--    back by the sync horizon exactly like updated_at. Deleting a tenant leaves no tombstones of
--    its own rows (nobody can read them: its keys are gone).

------------------------------------------------------------------------------------------
-- 1. Learners
------------------------------------------------------------------------------------------
alter table memberships add column updated_at timestamptz not null default clock_timestamp();
create trigger memberships_touch before insert or update on memberships
  for each row execute function svc.results_touch();
create index memberships_page_idx on memberships (tenant_id, created_at, user_id);
create index memberships_sync_idx on memberships (tenant_id, updated_at, user_id);

-- A changed IdP profile (or account email) moves the learner in the feed of every tenant.
create function svc.results_touch_learner() returns trigger
  language plpgsql security definer set search_path = public, pg_temp as $$
begin
  update memberships m set updated_at = clock_timestamp()
    from users u where u.auth_user_id = new.user_id and m.user_id = u.id;
  return null;
end $$;
revoke execute on function svc.results_touch_learner() from public;
create trigger identities_touch_learner after insert or update on auth.identities for each row
  when (new.identity_data is not null) execute function svc.results_touch_learner();

create function svc.results_touch_account() returns trigger
  language plpgsql security definer set search_path = public, pg_temp as $$
begin
  update memberships m set updated_at = clock_timestamp()
    from users u where u.auth_user_id = new.id and m.user_id = u.id;
  return null;
end $$;
revoke execute on function svc.results_touch_account() from public;
create trigger users_touch_learner after update on auth.users for each row
  when (old.email is distinct from new.email or old.email_confirmed_at is distinct from new.email_confirmed_at)
  execute function svc.results_touch_account();

-- The issuer of the request's tenant (svc.results_tenant_id()), or null.
create function svc.results_tenant_issuer() returns text
  language sql stable security definer set search_path = public, pg_temp as $$
  select issuer from tenant_idps where tenant_id = svc.results_tenant_id()
$$;

-- The learner object of svc user p_user in the request's tenant, or null when the user is no
-- member of it: {svc_user_id, external_ids: [{issuer, subject}], email, created_at, updated_at}.
-- email: the address the tenant's IdP sent with email_verified = true, else the account's
-- confirmed email, else null.
create function svc.results_learner_json(p_user uuid, p_created timestamptz, p_updated timestamptz) returns json
  language sql stable security definer set search_path = public, pg_temp as $$
  with ids as (
    select i.provider_id as subject, i.identity_data
      from users u join auth.identities i on i.user_id = u.auth_user_id
     where u.id = p_user and i.provider = 'idp:' || svc.results_tenant_issuer()
     order by i.provider_id)
  select json_build_object(
    'svc_user_id', p_user,
    'external_ids', coalesce((select json_agg(json_build_object('issuer', svc.results_tenant_issuer(), 'subject', ids.subject)) from ids), '[]'::json),
    'email', coalesce(
      (select ids.identity_data ->> 'email' from ids where ids.identity_data -> 'email_verified' = 'true'::jsonb limit 1),
      (select a.email from users u join auth.users a on a.id = u.auth_user_id where u.id = p_user and a.email_confirmed_at is not null)),
    'created_at', to_char(p_created at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
    'updated_at', to_char(p_updated at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'))
  where exists (select 1 from memberships m where m.tenant_id = svc.results_tenant_id() and m.user_id = p_user)
$$;

-- The filters `external_id` and `issuer` of GET /v1/learners. By subject: the learners of the
-- request's tenant's IdP with that `sub` (at most one; the page reads them by primary key). By
-- issuer: whether a learner has an identity there (checked per row while the keyset index is walked).
create function svc.results_learners_by_subject(p_subject text) returns setof uuid
  language sql stable security definer set search_path = public, pg_temp as $$
  select u.id from auth.identities i join users u on u.auth_user_id = i.user_id
   where i.provider = 'idp:' || svc.results_tenant_issuer() and i.provider_id = p_subject
$$;
create function svc.results_learner_at_issuer(p_user uuid, p_issuer text) returns boolean
  language sql stable security definer set search_path = public, pg_temp as $$
  select p_issuer = svc.results_tenant_issuer() and exists (
    select 1 from users u join auth.identities i on i.user_id = u.auth_user_id
     where u.id = p_user and i.provider = 'idp:' || p_issuer)
$$;

grant select on memberships to svc_results;
create policy memberships_results_read on memberships for select to svc_results
  using (tenant_id = svc.results_tenant_id());

------------------------------------------------------------------------------------------
-- 2. Content outline
------------------------------------------------------------------------------------------
grant select on programs, units, lessons to svc_results;
create policy programs_results_read on programs for select to svc_results using (tenant_id = svc.results_tenant_id());
create policy units_results_read on units for select to svc_results using (tenant_id = svc.results_tenant_id());
create policy lessons_results_read on lessons for select to svc_results using (tenant_id = svc.results_tenant_id());

------------------------------------------------------------------------------------------
-- 3. Tombstones
------------------------------------------------------------------------------------------
create table deletions (
  tenant_id    uuid not null,
  id           uuid not null,
  resource     text not null check (resource in ('activity_result', 'artifact', 'progress', 'learner', 'program', 'unit', 'lesson', 'activity')),
  svc_user_id  uuid,
  program_id   uuid,
  deleted_at   timestamptz not null default clock_timestamp(),
  primary key (tenant_id, deleted_at, id)
);
alter table deletions enable row level security;
grant select on deletions to svc_results;
create policy deletions_results_read on deletions for select to svc_results using (tenant_id = svc.results_tenant_id());

-- SECURITY DEFINER: authors delete content as `authenticated`, which may not write deletions.
create function svc.results_tombstone() returns trigger
  language plpgsql security definer set search_path = public, pg_temp as $$
declare
  r jsonb := to_jsonb(old);
  resource text := tg_argv[0];
begin
  if old.tenant_id is null or not exists (select 1 from tenants t where t.id = old.tenant_id) then
    return null; -- the catalog, or a tenant being deleted
  end if;
  insert into deletions (tenant_id, id, resource, svc_user_id, program_id, deleted_at)
  values (old.tenant_id,
          case when resource = 'learner' then (r ->> 'user_id')::uuid else (r ->> 'id')::uuid end,
          resource,
          (r ->> 'user_id')::uuid,
          case when resource = 'program' then (r ->> 'id')::uuid else (r ->> 'program_id')::uuid end,
          clock_timestamp())
  on conflict do nothing;
  return null;
end $$;
revoke execute on function svc.results_tombstone() from public;

create trigger activity_results_tombstone after delete on activity_results for each row execute function svc.results_tombstone('activity_result');
create trigger artifacts_tombstone after delete on artifacts for each row execute function svc.results_tombstone('artifact');
create trigger progress_tombstone after delete on progress for each row execute function svc.results_tombstone('progress');
create trigger memberships_tombstone after delete on memberships for each row execute function svc.results_tombstone('learner');
create trigger programs_tombstone after delete on programs for each row execute function svc.results_tombstone('program');
create trigger units_tombstone after delete on units for each row execute function svc.results_tombstone('unit');
create trigger lessons_tombstone after delete on lessons for each row execute function svc.results_tombstone('lesson');
create trigger activities_tombstone after delete on activities for each row execute function svc.results_tombstone('activity');
