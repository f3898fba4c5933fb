-- Issue #24 (exports): the watermark of an export is taken *inside* its snapshot.
--
-- Before, an export took svc.results_sync_horizon() H first and its REPEATABLE READ snapshot S a
-- few round trips later. A row updated or deleted in between showed in S with updated_at >= H (so
-- it was left out) while its version from before H was gone: a row that existed at the watermark
-- was missing from the export (it came back only with the next incremental pull).
--
-- svc.results_snapshot_horizon() is called as the first statement of the export's transaction, so
-- S is taken at that statement's start, and returns the instant H for which S holds every row
-- version written before H:
--   * a transaction that got its id after S writes updated_at = clock_timestamp() after taking
--     the id (svc.results_touch, 0020), so after S, so after statement_timestamp() >= H;
--   * a transaction still running at S (in S's xip list) writes at or after its own start, and H
--     is at most the start of each of them in this database.
-- Their starts are read from pg_stat_activity just after S. If one of them ended in between its
-- start is gone: the function returns null and the caller takes a new snapshot. -infinity when a
-- writer hides its start (a prepared transaction here, a session whose start is not visible).
-- On a standby: the published horizon (0120), read in S.
create function svc.results_snapshot_horizon() returns timestamptz
  language plpgsql volatile security definer set search_path = pg_catalog, pg_temp as $$
declare
  s pg_snapshot := pg_current_snapshot();
  h timestamptz := statement_timestamp();
  gone boolean;
  oldest timestamptz;
begin
  if pg_is_in_recovery() then
    return svc.results_sync_horizon();
  end if;
  with xip as (
    select (x::text::bigint % 4294967296)::text::xid as xid from pg_snapshot_xip(s) x
  ), act as (
    select a.backend_xid, a.xact_start, a.datname, a.backend_type
      from pg_stat_activity a
     where a.backend_xid is not null and a.pid <> pg_backend_pid()
  )
  select bool_or(act.backend_xid is null and p.transaction is null),
         min(case
               when p.transaction is not null and p.database = current_database() then '-infinity'::timestamptz
               when act.datname = current_database() and act.backend_type not like 'autovacuum%'
                 then coalesce(act.xact_start, '-infinity'::timestamptz)
             end)
    into gone, oldest
    from xip
    left join act on act.backend_xid = xip.xid
    left join pg_prepared_xacts p on p.transaction = xip.xid;
  if coalesce(gone, false) then
    return null;
  end if;
  return least(h, oldest);
end $$;
revoke execute on function svc.results_snapshot_horizon() from public;
