-- 0160 (issue #23): the audit log — one append-only table of every privileged act.
--
-- 1. audit_events: tenant (the nil uuid for an act on no tenant: a user account, an OAuth
--    client), when, who (actor_kind user | cli | service_role | key | system, and actor_id: a
--    svc_user_id, an API key prefix, or null), what (action, e.g. `author.grant`), on what
--    (target_type, target_id: ids only — never an email, never a learner's text), the request id
--    of the HTTP request or MCP call that did it, and `detail` (settings and ids, never personal
--    data). tenant_id leads the key (0121's rule); ids are uuid v7, so (at, id) is time order.
-- 2. Append-only for everyone: a trigger refuses UPDATE, DELETE and TRUNCATE (as the owner too —
--    the CLI's role — so no service role can rewrite history; a DBA drops the trigger on purpose).
-- 3. Written only through svc.audit(), SECURITY DEFINER: the service's roles get no INSERT on the
--    table. Called as `authenticated` (an author through MCP), the actor is the caller's own
--    svc_user_id from the JWT claims, whatever the caller passed: an actor cannot be forged.
-- 4. Read by a tenant's API key through the Results API's role (svc_results, RLS: its tenant only).

create table audit_events (
  tenant_id    uuid not null,
  id           uuid not null default svc.uuid_v7(),
  at           timestamptz not null default clock_timestamp(),
  actor_kind   text not null check (actor_kind in ('user', 'cli', 'service_role', 'key', 'system')),
  actor_id     text check (char_length(actor_id) between 1 and 100),
  action       text not null check (action ~ '^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$' and char_length(action) <= 64),
  target_type  text not null check (target_type ~ '^[a-z][a-z0-9_]*$' and char_length(target_type) <= 32),
  target_id    text not null check (char_length(target_id) between 1 and 2048),
  request_id   text check (char_length(request_id) between 1 and 200),
  detail       jsonb not null default '{}'::jsonb check (jsonb_typeof(detail) = 'object'),
  primary key (tenant_id, at, id)
);
create index audit_events_action_idx on audit_events (tenant_id, action, at, id);
alter table audit_events enable row level security;

grant select on audit_events to svc_results;
create policy audit_events_results_read on audit_events for select to svc_results using (tenant_id = svc.results_tenant_id());

create function svc.audit_events_append_only() returns trigger
  language plpgsql as $$
begin
  raise exception 'audit_events is append-only: % refused', tg_op using errcode = '42501';
end $$;
create trigger audit_events_no_update before update or delete on audit_events
  for each row execute function svc.audit_events_append_only();
create trigger audit_events_no_truncate before truncate on audit_events
  for each statement execute function svc.audit_events_append_only();

create function svc.audit(
  p_tenant_id uuid, p_actor_kind text, p_actor_id text, p_action text,
  p_target_type text, p_target_id text, p_request_id text, p_detail jsonb
) returns uuid
  language plpgsql security definer set search_path = public, pg_temp as $$
declare
  v_id uuid;
begin
  if current_setting('role', true) = 'authenticated' then
    p_actor_kind := 'user';
    p_actor_id := public.current_itera_user_id()::text;
    if p_actor_id is null then
      raise exception 'svc.audit: no user in the request claims' using errcode = '42501';
    end if;
  elsif p_actor_kind = 'auth_user' then
    -- An account acting by its auth.users id (first-party session): name its svc_user_id.
    p_actor_kind := 'user';
    select u.id::text into p_actor_id from users u where u.auth_user_id = p_actor_id::uuid;
  end if;
  insert into audit_events (tenant_id, actor_kind, actor_id, action, target_type, target_id, request_id, detail)
  values (coalesce(p_tenant_id, '00000000-0000-0000-0000-000000000000'), p_actor_kind, p_actor_id, p_action,
          p_target_type, p_target_id, p_request_id, coalesce(p_detail, '{}'::jsonb))
  returning id into v_id;
  return v_id;
end $$;
revoke all on function svc.audit(uuid, text, text, text, text, text, text, jsonb) from public;
grant execute on function svc.audit(uuid, text, text, text, text, text, text, jsonb) to authenticated;
