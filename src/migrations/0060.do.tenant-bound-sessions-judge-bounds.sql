-- 0060 (issue #10): tenant-bound embed sessions, rubric versions, the model-call ledger (audit,
-- replay and per-tenant budgets), submissions held for review, and JWKS refresh.

------------------------------------------------------------------------------------------
-- 1. Sessions bound to a tenant. A session started by /v1/embed/session belongs to the tenant
--    that minted it: auth.sessions.tenant_id, copied into every access token of the session as
--    the `tenant_id` claim (src/identity/sessions.ts). Under RLS the claim narrows the caller's
--    tenants to that one, so author rights granted in another tenant do not apply through it.
--    Password-grant sessions have no tenant (null): all the user's tenants, as before.
------------------------------------------------------------------------------------------
alter table auth.sessions add column tenant_id uuid references public.tenants on delete cascade;

-- The tenant the caller's session is bound to (the verified `tenant_id` claim), or null.
create function public.current_session_tenant_id() returns uuid language sql stable as $$
  select nullif(auth.jwt() ->> 'tenant_id', '')::uuid
$$;
grant execute on function public.current_session_tenant_id() to authenticated, svc_results;

create or replace function public.current_author_tenant_ids() returns setof uuid
  language sql stable security definer set search_path = public, pg_temp as $$
  select tenant_id from public.memberships
   where user_id = public.current_itera_user_id() and role = 'author'
     and (public.current_session_tenant_id() is null or tenant_id = public.current_session_tenant_id())
$$;

create or replace function public.current_member_tenant_ids() returns setof uuid
  language sql stable security definer set search_path = public, pg_temp as $$
  select tenant_id from public.memberships
   where user_id = public.current_itera_user_id()
     and (public.current_session_tenant_id() is null or tenant_id = public.current_session_tenant_id())
$$;

drop policy memberships_self_read on memberships;
create policy memberships_self_read on memberships for select to authenticated
  using (user_id = public.current_itera_user_id()
         and (public.current_session_tenant_id() is null or tenant_id = public.current_session_tenant_id()));

------------------------------------------------------------------------------------------
-- 2. Rubric versions. Every change of what an activity is graded against (kind, spec, rubric,
--    pass threshold) makes a new version; each verdict stores the version it was graded on.
------------------------------------------------------------------------------------------
alter table activities add column rubric_version integer not null default 1 check (rubric_version >= 1);

create function svc.activities_rubric_version() returns trigger language plpgsql as $$
begin
  if (new.kind, new.spec, new.rubric, new.pass_threshold) is distinct from (old.kind, old.spec, old.rubric, old.pass_threshold) then
    new.rubric_version := old.rubric_version + 1;
  else
    new.rubric_version := old.rubric_version;
  end if;
  return new;
end $$;
create trigger activities_rubric_version before update on activities
  for each row execute function svc.activities_rubric_version();

------------------------------------------------------------------------------------------
-- 3. The model-call ledger. One row per call to the grading model, written before the call (so
--    a call in flight counts against the tenant's budget, and a crash mid-call is still
--    counted) and completed after it: the exact request (content-addressed in model_requests,
--    kept as the JSON text sent so its sha256 can be checked), the raw answer, its id, token
--    usage and timing. Verdicts point at the call that made them. model_usage sums the ledger
--    per tenant and UTC hour, so a budget check reads at most 24 rows (src/embed/ledger.ts).
--    Only the database owner reads or writes these tables (RLS on, no policies, no grants).
------------------------------------------------------------------------------------------
create table model_requests (
  tenant_id   uuid not null references tenants on delete cascade,
  sha256      text not null check (sha256 ~ '^[0-9a-f]{64}$'),
  body        text not null,
  created_at  timestamptz not null default now(),
  primary key (tenant_id, sha256)
);
alter table model_requests enable row level security;

create table model_calls (
  tenant_id          uuid not null references tenants on delete cascade,
  id                 uuid not null default svc.uuid_v7(),
  artifact_id        uuid not null references artifacts on delete cascade,
  run                integer not null check (run >= 1),
  attempt            integer not null check (attempt >= 1),
  request_sha256     text,
  model              text not null,
  started_at         timestamptz not null,
  duration_ms        integer check (duration_ms >= 0),
  outcome            text check (outcome in ('ok', 'timeout', 'unreachable', 'model_error', 'rate_limited', 'refused', 'invalid_output', 'model_rejected')),
  http_status        integer,
  response_id        text,
  response           jsonb,
  error              text,
  prompt_tokens      integer not null default 0 check (prompt_tokens >= 0),
  completion_tokens  integer not null default 0 check (completion_tokens >= 0),
  primary key (tenant_id, id),
  foreign key (tenant_id, request_sha256) references model_requests (tenant_id, sha256)
);
create index model_calls_artifact_idx on model_calls (tenant_id, artifact_id, started_at);
alter table model_calls enable row level security;

create table model_usage (
  tenant_id  uuid not null references tenants on delete cascade,
  hour       timestamptz not null,
  calls      integer not null default 0 check (calls >= 0),
  tokens     bigint not null default 0 check (tokens >= 0),
  primary key (tenant_id, hour)
);
alter table model_usage enable row level security;

-- Reserve one model call of a tenant within its budget, in one statement: under the tenant's
-- advisory lock, read this UTC hour's and day's usage; if a budget is reached, say which and
-- when its window ends; otherwise count the call, store the request body (once per hash) and
-- insert the ledger row. Exactly one of call_id / exhausted is set.
create function svc.reserve_model_call(
  p_tenant uuid, p_artifact uuid, p_run integer, p_attempt integer, p_model text, p_sha256 text, p_body text,
  p_now timestamptz, p_calls_hour integer, p_calls_day integer, p_tokens_hour bigint, p_tokens_day bigint,
  out call_id uuid, out exhausted text, out retry_at timestamptz)
language plpgsql as $$
declare
  v_hour timestamptz := date_trunc('hour', p_now at time zone 'UTC') at time zone 'UTC';
  v_day timestamptz := date_trunc('day', p_now at time zone 'UTC') at time zone 'UTC';
  v_calls_hour bigint; v_tokens_hour bigint; v_calls_day bigint; v_tokens_day bigint;
begin
  perform pg_advisory_xact_lock(7313, hashtext(p_tenant::text));
  select coalesce(sum(calls) filter (where hour = v_hour), 0), coalesce(sum(tokens) filter (where hour = v_hour), 0),
         coalesce(sum(calls), 0), coalesce(sum(tokens), 0)
    into v_calls_hour, v_tokens_hour, v_calls_day, v_tokens_day
    from public.model_usage where tenant_id = p_tenant and hour >= v_day;
  if v_calls_day >= p_calls_day then exhausted := 'calls_per_day'; retry_at := v_day + interval '1 day'; return; end if;
  if v_tokens_day >= p_tokens_day then exhausted := 'tokens_per_day'; retry_at := v_day + interval '1 day'; return; end if;
  if v_calls_hour >= p_calls_hour then exhausted := 'calls_per_hour'; retry_at := v_hour + interval '1 hour'; return; end if;
  if v_tokens_hour >= p_tokens_hour then exhausted := 'tokens_per_hour'; retry_at := v_hour + interval '1 hour'; return; end if;
  insert into public.model_usage (tenant_id, hour, calls) values (p_tenant, v_hour, 1)
    on conflict (tenant_id, hour) do update set calls = model_usage.calls + 1;
  insert into public.model_requests (tenant_id, sha256, body) values (p_tenant, p_sha256, p_body) on conflict do nothing;
  insert into public.model_calls (tenant_id, artifact_id, run, attempt, request_sha256, model, started_at)
    values (p_tenant, p_artifact, p_run, p_attempt, p_sha256, p_model, p_now)
    returning id into call_id;
end $$;

------------------------------------------------------------------------------------------
-- 4. Submissions held for review: a pass flagged as a possible prompt injection waits for an
--    admin (`svc review list|approve|reject`).
------------------------------------------------------------------------------------------
create index artifacts_review_idx on artifacts (tenant_id, created_at) where (verification ->> 'review') = 'required';

------------------------------------------------------------------------------------------
-- 5. JWKS refresh: `svc idp refresh` bumps keys_version; every process keys its cached key set
--    by it, so the next token is checked against a freshly fetched set.
------------------------------------------------------------------------------------------
alter table tenant_idps add column keys_version integer not null default 1;
