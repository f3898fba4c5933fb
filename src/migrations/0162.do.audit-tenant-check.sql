-- Issue #23 (review): svc.audit called as `authenticated` (an author's MCP call under RLS) may
-- append only to a tenant the caller is an author of. Before, any signed-in user's transaction
-- could write rows into another tenant's audit log. Every act recorded as `authenticated`
-- (grading mode, verdict overrides, review decisions) is an author's act in that tenant; acts on
-- no tenant are never recorded as `authenticated`.
create or replace function svc.audit(
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
    if p_tenant_id is null or p_tenant_id not in (select public.current_author_tenant_ids()) then
      raise exception 'svc.audit: not an author of that tenant' using errcode = '42501';
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
