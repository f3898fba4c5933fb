-- 0020 results sync: what the Results API needs for incremental sync, one-round-trip pages,
-- API-key revocation across processes and per-key rate limits.
--
-- 1. updated_at is owned by the database. A BEFORE INSERT OR UPDATE trigger on activity_results,
--    artifacts and progress sets it to clock_timestamp() for every writer (the embed judge, the
--    CLI, a console), after forcing the writing transaction to take its transaction id. So a
--    row's updated_at is never earlier than the moment its writer became visible as a running
--    writer in pg_stat_activity (backend_xid), which is what the sync horizon (3) relies on.
-- 2. Keyset indexes for the `updated_since` mode, ordered by (updated_at, id), one per table.
-- 3. svc.results_sync_horizon(): the instant before which every row is final — the start of the
--    oldest transaction of this database that is still writing (or now, when none is). A
--    consumer tailing `updated_since` pages is served only rows with updated_at < horizon, so a
--    transaction that commits late can never land behind a position already handed out.
-- 4. svc.results_enter(): the first step of every API request's one statement — checks the caller,
--    takes the horizon when asked, switches to the read-only role svc_results with the request's
--    tenant set for RLS. The page queries themselves live in statement functions that
--    src/results/queries.ts installs (svc.results_q_<hash>), so no BEGIN/COMMIT round trips and
--    each connection caches their plans.
-- 5. progress.updated_at moves when activities are added to or removed from a program (its
--    total_count and percent change), so sync consumers see the new percent.
-- 6. api_keys: an optional per-key rate limit, and a NOTIFY on channel `svc_api_keys` (payload:
--    the key's prefix) whenever a key is revoked, deleted or its limit changes, whoever does it,
--    so every process drops its cached copy at once.

------------------------------------------------------------------------------------------
-- 1. updated_at set by the database
------------------------------------------------------------------------------------------
create function svc.results_touch() returns trigger language plpgsql as $$
begin
  -- Take the transaction id first: from now on this writer shows in pg_stat_activity.backend_xid.
  perform pg_current_xact_id();
  new.updated_at := clock_timestamp();
  return new;
end $$;

create trigger activity_results_touch before insert or update on activity_results
  for each row execute function svc.results_touch();
create trigger artifacts_touch before insert or update on artifacts
  for each row execute function svc.results_touch();
create trigger progress_touch before insert or update on progress
  for each row execute function svc.results_touch();

------------------------------------------------------------------------------------------
-- 2. Keyset indexes of the updated_since mode
------------------------------------------------------------------------------------------
create index activity_results_sync_idx on activity_results (tenant_id, updated_at, id);
create index artifacts_sync_idx on artifacts (tenant_id, updated_at, id);
create index progress_sync_idx on progress (tenant_id, updated_at, id);

------------------------------------------------------------------------------------------
-- 3. The sync horizon
------------------------------------------------------------------------------------------
-- SECURITY DEFINER: pg_stat_activity shows xact_start only for sessions of roles the caller
-- belongs to; the owner (the service's login role) sees its own sessions. A writer whose start
-- is hidden (another login role) holds the horizon at -infinity until it ends: the feed pauses
-- rather than risk skipping its rows. Likewise while a two-phase transaction of this database is
-- prepared (no session shows it; PostgreSQL's default allows none). Autovacuum never writes these
-- tables and is left out.
create function svc.results_sync_horizon() returns timestamptz
  language sql volatile security definer set search_path = pg_catalog, pg_temp as $$
  select least(
    clock_timestamp(),
    (select min(coalesce(a.xact_start, '-infinity'::timestamptz))
       from pg_stat_activity a
      where a.datname = current_database()
        and a.pid <> pg_backend_pid()
        and a.backend_xid is not null
        and a.backend_type not like 'autovacuum%'),
    (select '-infinity'::timestamptz from pg_prepared_xacts p where p.database = current_database() limit 1))
$$;
revoke execute on function svc.results_sync_horizon() from public;
grant execute on function svc.results_sync_horizon() to svc_results;

------------------------------------------------------------------------------------------
-- 4. One statement per request
------------------------------------------------------------------------------------------
-- svc.results_enter(tenant, sync) starts the read part of an API request, inside the statement
-- function that queries.ts generates for each page shape (one plpgsql function per shape, so each
-- connection caches the page query's plan): it checks the caller, takes the sync horizon when
-- asked (before the page is read: in READ COMMITTED each statement of a VOLATILE plpgsql function
-- takes a fresh snapshot), and switches to the read-only role svc_results with svc.tenant_id set
-- — both transaction-local, so RLS confines the rest of the statement to the tenant even if the
-- page query forgot its WHERE clause. The statement function restores the caller's role after
-- its query. Returns the horizon (null unless p_sync).
-- Only the service's own role may enter — one that can read api_keys — whatever EXECUTE grants
-- other migrations hand out on schema svc: the roles of the surfaces (authenticated, anon,
-- svc_results) must never pick a tenant themselves.
create function svc.results_enter(p_tenant uuid, p_sync boolean) returns timestamptz
  language plpgsql volatile
  set search_path = public, pg_temp as $$
declare
  horizon timestamptz;
begin
  if not has_table_privilege('public.api_keys', 'select') then
    raise exception 'permission denied for function results_enter' using errcode = '42501';
  end if;
  if p_tenant is null then
    raise exception 'results_enter: no tenant' using errcode = '22004';
  end if;
  if p_sync then
    horizon := svc.results_sync_horizon();
  end if;
  perform set_config('svc.tenant_id', p_tenant::text, true), set_config('role', 'svc_results', true);
  return horizon;
end $$;
revoke execute on function svc.results_enter(uuid, boolean) from public;

------------------------------------------------------------------------------------------
-- 5. Content changes move progress in the feed
------------------------------------------------------------------------------------------
-- SECURITY DEFINER: authors (role authenticated) add and remove activities but may not write
-- progress; the update only touches rows of the programs whose activities changed.
create function svc.results_touch_progress() returns trigger
  language plpgsql security definer set search_path = public, pg_temp as $$
begin
  update progress p set updated_at = clock_timestamp()
    from (select distinct tenant_id, program_id from changed where tenant_id is not null) c
   where p.tenant_id = c.tenant_id and p.program_id = c.program_id;
  return null;
end $$;
revoke execute on function svc.results_touch_progress() from public;

create trigger activities_added_touch_progress after insert on activities
  referencing new table as changed for each statement execute function svc.results_touch_progress();
create trigger activities_removed_touch_progress after delete on activities
  referencing old table as changed for each statement execute function svc.results_touch_progress();

------------------------------------------------------------------------------------------
-- 6. API keys: per-key limit, revocation notices
------------------------------------------------------------------------------------------
alter table api_keys add column rate_limit integer check (rate_limit between 1 and 1000000);

create function svc.api_key_changed() returns trigger language plpgsql as $$
begin
  perform pg_notify('svc_api_keys', case tg_op when 'DELETE' then old.prefix else new.prefix end);
  return null;
end $$;

create trigger api_keys_changed after update on api_keys for each row
  when (old.revoked_at is distinct from new.revoked_at or old.rate_limit is distinct from new.rate_limit
        or old.key_hash is distinct from new.key_hash or old.tenant_id is distinct from new.tenant_id)
  execute function svc.api_key_changed();
create trigger api_keys_deleted after delete on api_keys for each row execute function svc.api_key_changed();
