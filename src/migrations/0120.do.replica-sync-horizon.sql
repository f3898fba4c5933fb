-- 0120 read replicas: the sync horizon of a hot standby (issue #15, DATABASE_READ_URL).
--
-- The feed's watermark (Svc-Consistent-Through, migration 0020) is the sync horizon: the start of
-- the oldest transaction still writing, or now. A standby cannot compute it: pg_stat_activity
-- there shows only the standby's own (read-only) sessions, so 0020's function would answer
-- "now" while the standby has replayed only up to some moment in the past — a watermark ahead of
-- the rows it serves. So the primary publishes its horizon into a replicated one-row table
-- (svc.results_publish_horizon(), called about once a second by every service process that has a
-- read replica, src/results/replica-horizon.ts), and a standby's horizon is the newest value it
-- has replayed:
--
--   A value H published at instant T on the primary says: every row with updated_at < H was
--   written by a transaction that committed before T (0020's argument). The publishing
--   transaction commits after T, and a standby replays commits in the primary's commit order, so
--   once a standby sees H it has replayed every such row. Its watermark therefore never passes
--   what it has replayed; while replay is paused (or nothing publishes), it stays where it was.
--
-- Before the first publication a standby's horizon is -infinity: its feed serves nothing and has
-- no watermark (the service then reads such pages on the primary, src/results/routes.ts).

create table svc.replica_horizon (
  singleton    boolean primary key default true check (singleton),
  horizon      timestamptz not null,
  published_at timestamptz not null
);
comment on table svc.replica_horizon is
  'The primary''s sync horizon as last published (svc.results_publish_horizon); read by hot standbys (0120).';

-- SECURITY DEFINER like 0020's: pg_stat_activity shows xact_start only to the owner's role.
create or replace function svc.results_sync_horizon() returns timestamptz
  language sql volatile security definer set search_path = pg_catalog, pg_temp as $$
  select case
    when pg_is_in_recovery() then
      least(clock_timestamp(), coalesce((select h.horizon from svc.replica_horizon h), '-infinity'::timestamptz))
    else least(
      clock_timestamp(),
      (select min(coalesce(a.xact_start, '-infinity'::timestamptz))
         from pg_stat_activity a
        where a.datname = current_database()
          and a.pid <> pg_backend_pid()
          and a.backend_xid is not null
          and a.backend_type not like 'autovacuum%'),
      (select '-infinity'::timestamptz from pg_prepared_xacts p where p.database = current_database() limit 1))
  end
$$;

-- Publish the primary's horizon for its standbys. Returns it. Only the service's own role (the
-- owner) runs it: no grant.
create function svc.results_publish_horizon() returns timestamptz
  language sql volatile set search_path = pg_catalog, pg_temp as $$
  insert into svc.replica_horizon (singleton, horizon, published_at)
  values (true, svc.results_sync_horizon(), clock_timestamp())
  on conflict (singleton) do update set horizon = excluded.horizon, published_at = excluded.published_at
  returning horizon
$$;
revoke execute on function svc.results_publish_horizon() from public;
