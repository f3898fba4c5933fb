-- Issue #24: each result carries its artifacts' ids, kept by a trigger, so a full export reads
-- them with the result instead of aggregating every artifact of the tenant (on 1M results that
-- aggregate was a third of the export's time, and it forbade parallel plans: string_agg fed by a
-- sorted subquery must not be split into partial aggregates).
--
-- `activity_results.artifact_ids`: the ids of the result's artifacts in (created_at, id) order —
-- exactly what the list endpoints' `artifact_ids` gives (src/results/queries.ts, still computed
-- there; test/results/exports.test.ts compares every export with the lists).
--
-- Concurrency. Two transactions adding artifacts to one result (READ COMMITTED) must not lose
-- each other's id: the trigger first locks the result row (waiting for a writer that holds it),
-- and only then reads the artifacts, in a new statement and so a new snapshot, which sees what
-- that writer committed. The last writer to take the lock therefore writes the whole list.
--
-- The trigger runs as its owner (security definer): whoever may write an artifact keeps its
-- result's list, whatever their column privileges on activity_results. It updates the result
-- row, so activity_results_touch moves its updated_at — a result whose artifacts change is a
-- changed row of the feed, as it is when the judge records a submission (which updates the
-- result in the same transaction anyway).
alter table activity_results add column artifact_ids uuid[] not null default '{}';

create function svc.results_set_artifact_ids(p_tenant uuid, p_result uuid) returns void
  language plpgsql security definer set search_path = public, pg_temp as $$
begin
  perform 1 from activity_results where tenant_id = p_tenant and id = p_result for no key update;
  update activity_results r set artifact_ids = x.ids
    from (select coalesce(array_agg(a.id order by a.created_at, a.id), '{}') as ids
            from artifacts a where a.tenant_id = p_tenant and a.result_id = p_result) x
   where r.tenant_id = p_tenant and r.id = p_result and r.artifact_ids is distinct from x.ids;
end $$;

create function svc.results_artifact_ids() returns trigger
  language plpgsql security definer set search_path = public, pg_temp as $$
begin
  if tg_op in ('DELETE', 'UPDATE') then
    perform svc.results_set_artifact_ids(old.tenant_id, old.result_id);
  end if;
  if tg_op = 'INSERT' or (tg_op = 'UPDATE' and (new.tenant_id, new.result_id) is distinct from (old.tenant_id, old.result_id)) then
    perform svc.results_set_artifact_ids(new.tenant_id, new.result_id);
  end if;
  return null;
end $$;

create trigger artifacts_result_ids after insert or delete or update of tenant_id, result_id, created_at on artifacts
  for each row execute function svc.results_artifact_ids();

-- The lists already show these ids: filling the column is no change of any row's data, so it
-- does not move updated_at (the touch trigger is off for this one statement; the migration holds
-- the table's lock, no other writer runs meanwhile).
alter table activity_results disable trigger activity_results_touch;
update activity_results r set artifact_ids = x.ids
  from (select a.tenant_id, a.result_id, array_agg(a.id order by a.created_at, a.id) as ids
          from artifacts a group by a.tenant_id, a.result_id) x
 where r.tenant_id = x.tenant_id and r.id = x.result_id;
alter table activity_results enable trigger activity_results_touch;
