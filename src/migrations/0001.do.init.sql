-- 0001 init: roles, identity platform (auth.*), tenants, content, learners' work, API keys,
-- the RLS helper functions of DESIGN §4 and the policies of DESIGN §5.
-- Every tenant-owned table carries tenant_id and every index on tenant data leads with it.

-- Roles are cluster-wide on a PostgreSQL server: create them only once.
do $$
begin
  if not exists (select from pg_roles where rolname = 'anon') then create role anon nologin; end if;
  if not exists (select from pg_roles where rolname = 'authenticated') then create role authenticated nologin; end if;
  if not exists (select from pg_roles where rolname = 'svc_results') then create role svc_results nologin; end if;
  -- a non-superuser owner must be a member to SET ROLE to them
  execute format('grant authenticated, svc_results to %I', current_user);
end $$;

create schema if not exists auth;
create schema if not exists svc;

-- Time-ordered UUID v7 (RFC 9562 §5.7): 48-bit unix milliseconds, version and variant bits,
-- random rest. Keeps primary-key indexes append-mostly.
create function svc.uuid_v7() returns uuid language sql volatile as $$
  select encode(
    set_bit(set_bit(
      overlay(uuid_send(gen_random_uuid())
              placing substring(int8send(floor(extract(epoch from clock_timestamp()) * 1000)::bigint) from 3)
              from 1 for 6),
      52, 1), 53, 1), 'hex')::uuid
$$;

create function svc.touch_updated_at() returns trigger language plpgsql as $$
begin
  new.updated_at := now();
  return new;
end $$;

------------------------------------------------------------------------------------------
-- Identity platform (GoTrue's shapes, the subset we serve)
------------------------------------------------------------------------------------------
create table auth.users (
  id                  uuid primary key default svc.uuid_v7(),
  aud                 text not null default 'authenticated',
  role                text not null default 'authenticated',
  email               text check (email = lower(btrim(email))),
  encrypted_password  text,
  email_confirmed_at  timestamptz,
  phone               text,
  raw_app_meta_data   jsonb not null default '{}',
  raw_user_meta_data  jsonb not null default '{}',
  banned_until        timestamptz,
  last_sign_in_at     timestamptz,
  is_anonymous        boolean not null default false,
  created_at          timestamptz not null default now(),
  updated_at          timestamptz not null default now()
);
create unique index users_email_key on auth.users (email) where email is not null;

create table auth.identities (
  id              uuid primary key default svc.uuid_v7(),
  user_id         uuid not null references auth.users on delete cascade,
  provider        text not null,
  provider_id     text not null,
  identity_data   jsonb not null default '{}',
  email           text,
  last_sign_in_at timestamptz,
  created_at      timestamptz not null default now(),
  updated_at      timestamptz not null default now(),
  unique (provider, provider_id)
);
create index identities_user_id_idx on auth.identities (user_id);

create table auth.sessions (
  id            uuid primary key default svc.uuid_v7(),
  user_id       uuid not null references auth.users on delete cascade,
  aal           text not null default 'aal1',
  amr           jsonb not null default '[]',
  refreshed_at  timestamptz,
  not_after     timestamptz,
  created_at    timestamptz not null default now(),
  updated_at    timestamptz not null default now()
);
create index sessions_user_id_idx on auth.sessions (user_id);

-- A refresh token is HMAC-SHA256(jwt secret, session id ':' nonce), base64url; only its sha256
-- hex digest and the nonce are stored, so the token of the newest row can be re-derived for
-- concurrent refreshes within the reuse interval (GoTrue returns the same active token).
-- `parent` is the digest of the token this one replaced.
create table auth.refresh_tokens (
  id          bigserial primary key,
  token_hash  text not null unique,
  nonce       text not null,
  user_id     uuid not null references auth.users on delete cascade,
  session_id  uuid not null references auth.sessions on delete cascade,
  parent      text,
  revoked     boolean not null default false,
  created_at  timestamptz not null default now(),
  updated_at  timestamptz not null default now()
);
create index refresh_tokens_session_id_idx on auth.refresh_tokens (session_id, id);

------------------------------------------------------------------------------------------
-- Tenants, users, memberships
------------------------------------------------------------------------------------------
create table tenants (
  id          uuid primary key default svc.uuid_v7(),
  slug        text not null unique check (slug ~ '^[a-z0-9][a-z0-9-]{0,62}$'),
  name        text not null,
  created_at  timestamptz not null default now()
);

-- External identity provider of a tenant, for /v1/embed/session.
create table tenant_idps (
  tenant_id      uuid primary key references tenants on delete cascade,
  issuer         text not null,
  jwks_url       text,
  discovery_url  text,
  audience       text,
  updated_at     timestamptz not null default now(),
  check (jwks_url is not null or discovery_url is not null)
);

create table users (
  id            uuid primary key default svc.uuid_v7(),
  auth_user_id  uuid not null unique references auth.users on delete cascade,
  created_at    timestamptz not null default now()
);

create table memberships (
  tenant_id   uuid not null references tenants on delete cascade,
  user_id     uuid not null references users on delete cascade,
  role        text not null check (role in ('author', 'learner')),
  created_at  timestamptz not null default now(),
  primary key (tenant_id, user_id)
);
create index memberships_user_id_idx on memberships (user_id);

------------------------------------------------------------------------------------------
-- RLS helper functions (DESIGN §4). Those reading protected tables are SECURITY DEFINER
-- with a fixed search_path, so policies can call them without recursion.
------------------------------------------------------------------------------------------
create function auth.jwt() returns jsonb language sql stable as $$
  select coalesce(nullif(current_setting('request.jwt.claims', true), '')::jsonb, '{}'::jsonb)
$$;

create function auth.uid() returns uuid language sql stable as $$
  select nullif(auth.jwt() ->> 'sub', '')::uuid
$$;

create function public.current_itera_user_id() returns uuid
  language sql stable security definer set search_path = public, pg_temp as $$
  select id from public.users where auth_user_id = auth.uid()
$$;

create function public.current_author_tenant_ids() returns setof uuid
  language sql stable security definer set search_path = public, pg_temp as $$
  select tenant_id from public.memberships where user_id = public.current_itera_user_id() and role = 'author'
$$;

create function public.current_member_tenant_ids() returns setof uuid
  language sql stable security definer set search_path = public, pg_temp as $$
  select tenant_id from public.memberships where user_id = public.current_itera_user_id()
$$;

-- The tenant of the results API request (set by asResultsTenant), or null.
create function svc.results_tenant_id() returns uuid language sql stable as $$
  select nullif(current_setting('svc.tenant_id', true), '')::uuid
$$;

------------------------------------------------------------------------------------------
-- Content: programs → units → lessons → activities. tenant_id null = the service catalog.
-- Children take tenant_id (and program_id) from their parent in a trigger, so a row can
-- never claim a tenant other than its parent's; the parent is read under the caller's RLS.
------------------------------------------------------------------------------------------
create table programs (
  tenant_id          uuid references tenants on delete cascade,
  id                 uuid primary key default svc.uuid_v7(),
  title              text not null check (length(title) between 1 and 500),
  description        text,
  source_program_id  uuid,
  created_at         timestamptz not null default now(),
  updated_at         timestamptz not null default now()
);
create index programs_tenant_idx on programs (tenant_id, created_at, id);

create table units (
  tenant_id    uuid references tenants on delete cascade,
  id           uuid primary key default svc.uuid_v7(),
  program_id   uuid not null references programs on delete cascade,
  title        text not null check (length(title) between 1 and 500),
  description  text,
  position     integer not null check (position >= 1),
  created_at   timestamptz not null default now(),
  updated_at   timestamptz not null default now()
);
create index units_tenant_program_idx on units (tenant_id, program_id, position);

create table lessons (
  tenant_id    uuid references tenants on delete cascade,
  id           uuid primary key default svc.uuid_v7(),
  program_id   uuid not null,
  unit_id      uuid not null references units on delete cascade,
  title        text not null check (length(title) between 1 and 500),
  body         text,
  position     integer not null check (position >= 1),
  created_at   timestamptz not null default now(),
  updated_at   timestamptz not null default now()
);
create index lessons_tenant_unit_idx on lessons (tenant_id, unit_id, position);

create table activities (
  tenant_id       uuid references tenants on delete cascade,
  id              uuid primary key default svc.uuid_v7(),
  program_id      uuid not null,
  lesson_id       uuid not null references lessons on delete cascade,
  title           text not null check (length(title) between 1 and 500),
  kind            text not null check (kind in ('diagram', 'document', 'site', 'repo')),
  spec            text not null,
  rubric          jsonb not null default '[]' check (jsonb_typeof(rubric) = 'array'),
  pass_threshold  integer not null default 70 check (pass_threshold between 0 and 100),
  position        integer not null check (position >= 1),
  created_at      timestamptz not null default now(),
  updated_at      timestamptz not null default now()
);
create index activities_tenant_lesson_idx on activities (tenant_id, lesson_id, position);
create index activities_tenant_program_idx on activities (tenant_id, program_id);

-- Inherit tenant/program from the parent and default the position to the end.
create function svc.inherit_from_parent() returns trigger language plpgsql as $$
declare
  parent record;
begin
  if tg_table_name = 'units' then
    select p.tenant_id, p.id as program_id into parent from programs p where p.id = new.program_id;
  elsif tg_table_name = 'lessons' then
    select u.tenant_id, u.program_id into parent from units u where u.id = new.unit_id;
  else
    select l.tenant_id, l.program_id into parent from lessons l where l.id = new.lesson_id;
  end if;
  if not found then
    raise exception 'parent of % not found', tg_table_name using errcode = 'P0002';
  end if;
  new.tenant_id := parent.tenant_id;
  if tg_table_name <> 'units' then
    new.program_id := parent.program_id;
  end if;
  if new.position is null then
    if tg_table_name = 'units' then
      select coalesce(max(position), 0) + 1 into new.position from units where program_id = new.program_id;
    elsif tg_table_name = 'lessons' then
      select coalesce(max(position), 0) + 1 into new.position from lessons where unit_id = new.unit_id;
    else
      select coalesce(max(position), 0) + 1 into new.position from activities where lesson_id = new.lesson_id;
    end if;
  end if;
  return new;
end $$;

create trigger units_inherit before insert on units for each row execute function svc.inherit_from_parent();
create trigger lessons_inherit before insert on lessons for each row execute function svc.inherit_from_parent();
create trigger activities_inherit before insert on activities for each row execute function svc.inherit_from_parent();
create trigger programs_touch before update on programs for each row execute function svc.touch_updated_at();
create trigger units_touch before update on units for each row execute function svc.touch_updated_at();
create trigger lessons_touch before update on lessons for each row execute function svc.touch_updated_at();
create trigger activities_touch before update on activities for each row execute function svc.touch_updated_at();

------------------------------------------------------------------------------------------
-- Learners' work and the progress read model (written by the embed judge, read by /v1)
------------------------------------------------------------------------------------------
create table activity_results (
  tenant_id     uuid not null references tenants on delete cascade,
  id            uuid primary key default svc.uuid_v7(),
  activity_id   uuid not null references activities on delete restrict,
  lesson_id     uuid not null,
  program_id    uuid not null,
  user_id       uuid not null references users on delete cascade,
  status        text not null check (status in ('completed', 'in_progress', 'failed')),
  score         numeric(5, 2) check (score between 0 and 100),
  completed_at  timestamptz,
  created_at    timestamptz not null default clock_timestamp(),
  updated_at    timestamptz not null default clock_timestamp(),
  unique (tenant_id, activity_id, user_id)
);
create index activity_results_page_idx on activity_results (tenant_id, created_at, id);
create index activity_results_activity_page_idx on activity_results (tenant_id, activity_id, created_at, id);

create table artifacts (
  tenant_id     uuid not null references tenants on delete cascade,
  id            uuid primary key default svc.uuid_v7(),
  result_id     uuid not null references activity_results on delete cascade,
  activity_id   uuid not null,
  user_id       uuid not null,
  kind          text not null check (kind in ('diagram', 'document', 'site', 'repo')),
  ref_url       text,
  repo_url      text,
  content       text,
  verification  jsonb,
  created_at    timestamptz not null default clock_timestamp(),
  updated_at    timestamptz not null default clock_timestamp()
);
create index artifacts_page_idx on artifacts (tenant_id, created_at, id);
create index artifacts_activity_page_idx on artifacts (tenant_id, activity_id, created_at, id);
create index artifacts_user_page_idx on artifacts (tenant_id, user_id, created_at, id);
create index artifacts_result_idx on artifacts (tenant_id, result_id);

create table progress (
  tenant_id         uuid not null references tenants on delete cascade,
  id                uuid primary key default svc.uuid_v7(),
  user_id           uuid not null references users on delete cascade,
  program_id        uuid not null references programs on delete cascade,
  completed_count   integer not null default 0 check (completed_count >= 0),
  last_activity_at  timestamptz,
  created_at        timestamptz not null default clock_timestamp(),
  updated_at        timestamptz not null default clock_timestamp(),
  unique (tenant_id, user_id, program_id)
);
create index progress_page_idx on progress (tenant_id, created_at, id);

------------------------------------------------------------------------------------------
-- Results API keys: only the prefix and the sha256 hex of the whole key are stored.
------------------------------------------------------------------------------------------
create table api_keys (
  tenant_id     uuid not null references tenants on delete cascade,
  id            uuid primary key default svc.uuid_v7(),
  name          text not null check (length(name) between 1 and 200),
  prefix        text not null unique,
  key_hash      text not null unique,
  created_at    timestamptz not null default now(),
  last_used_at  timestamptz,
  revoked_at    timestamptz
);
create index api_keys_tenant_idx on api_keys (tenant_id, created_at, id);

------------------------------------------------------------------------------------------
-- Privileges and row-level security
------------------------------------------------------------------------------------------
revoke all on schema auth from public;
grant usage on schema public, auth, svc to authenticated, svc_results;
grant execute on all functions in schema auth, svc, public to authenticated, svc_results;

alter table tenants enable row level security;
alter table tenant_idps enable row level security;
alter table users enable row level security;
alter table memberships enable row level security;
alter table programs enable row level security;
alter table units enable row level security;
alter table lessons enable row level security;
alter table activities enable row level security;
alter table activity_results enable row level security;
alter table artifacts enable row level security;
alter table progress enable row level security;
alter table api_keys enable row level security;

grant select on tenants, users, memberships to authenticated;
create policy tenants_member_read on tenants for select to authenticated
  using (id in (select public.current_member_tenant_ids()));
create policy users_self_read on users for select to authenticated
  using (id = public.current_itera_user_id());
create policy memberships_self_read on memberships for select to authenticated
  using (user_id = public.current_itera_user_id());

-- Content: members read their tenants' rows and the catalog; authors write their tenants'.
grant select, insert, update, delete on programs, units, lessons, activities to authenticated;
do $$
declare
  t text;
begin
  foreach t in array array['programs', 'units', 'lessons', 'activities'] loop
    execute format($p$create policy %1$s_member_read on %1$I for select to authenticated
      using (tenant_id is null or tenant_id in (select public.current_member_tenant_ids()))$p$, t);
    execute format($p$create policy %1$s_author_insert on %1$I for insert to authenticated
      with check (tenant_id in (select public.current_author_tenant_ids()))$p$, t);
    execute format($p$create policy %1$s_author_update on %1$I for update to authenticated
      using (tenant_id in (select public.current_author_tenant_ids()))
      with check (tenant_id in (select public.current_author_tenant_ids()))$p$, t);
    execute format($p$create policy %1$s_author_delete on %1$I for delete to authenticated
      using (tenant_id in (select public.current_author_tenant_ids()))$p$, t);
  end loop;
end $$;
-- Only the trigger-set columns may not be changed by an update.
revoke update on units, lessons, activities from authenticated;
grant update (title, description, position) on units to authenticated;
grant update (title, body, position) on lessons to authenticated;
grant update (title, kind, spec, rubric, pass_threshold, position) on activities to authenticated;
revoke update on programs from authenticated;
grant update (title, description) on programs to authenticated;

-- Results API: the svc_results role reads one tenant, the one of the request's API key.
grant select on activity_results, artifacts, progress, activities to svc_results;
create policy activity_results_tenant_read on activity_results for select to svc_results
  using (tenant_id = svc.results_tenant_id());
create policy artifacts_tenant_read on artifacts for select to svc_results
  using (tenant_id = svc.results_tenant_id());
create policy progress_tenant_read on progress for select to svc_results
  using (tenant_id = svc.results_tenant_id());
create policy activities_tenant_read on activities for select to svc_results
  using (tenant_id = svc.results_tenant_id());
