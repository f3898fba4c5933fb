-- 0130 progress leaves archived activities out, on every surface (issue #16 follow-up).
--
-- Archived content is hidden from learners and takes no new submissions (0110), and the learner's
-- own progress (/v1/embed/progress) already counted only activities that are not archived. The
-- Results API's progress counted them all, so a partner's dashboard showed "3 of 10" where the
-- learner saw "3 of 8". The Results API now counts like the learner's view (src/results/queries.ts),
-- and — as when activities are added or removed (0020, part 5) — progress rows of a program whose
-- activities were archived or unarchived get a new updated_at, so sync consumers see the new
-- total_count and percent.
--
-- One statement-level trigger: archiving a program flips `archived` on all its activities in
-- one statement of the cascade (0110), and the programs touched are read from the transition
-- tables (a column list, `update of archived`, cannot be combined with them). SECURITY DEFINER:
-- authors archive activities but may not write progress.

create function svc.results_touch_progress_archived() returns trigger
  language plpgsql security definer set search_path = public, pg_temp as $$
begin
  update progress p set updated_at = clock_timestamp()
    from (select distinct n.tenant_id, n.program_id
            from archived_after n join archived_before o on o.id = n.id
           where n.tenant_id is not null and n.archived is distinct from o.archived) c
   where p.tenant_id = c.tenant_id and p.program_id = c.program_id;
  return null;
end $$;
revoke execute on function svc.results_touch_progress_archived() from public;

create trigger activities_archived_touch_progress after update on activities
  referencing old table as archived_before new table as archived_after
  for each statement execute function svc.results_touch_progress_archived();
