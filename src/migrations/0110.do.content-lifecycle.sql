-- 0110 content lifecycle (issue #16): archiving, and moving records to another parent.
--
-- 1. Archiving. Every content record gets `archived_at` (set by archive_X, cleared by
--    unarchive_X: the record's own state) and `archived` (true when the record or any record
--    above it is archived), which the database keeps: a BEFORE trigger derives it from the
--    record's own state and its parent's, an AFTER trigger carries a change down the tree. The
--    member-read policies of 0001 are replaced: authors of a tenant read all of its content,
--    archived or not; other members (learners) read only what is not archived. The results API
--    (svc_results) has its own policies and still reads everything; learners' results and
--    artifacts stay as they are. The judge refuses new submissions to an archived activity
--    (src/embed/judge.ts reads `archived`).
-- 2. Moves. A unit may move to another program, a lesson to another unit, an activity to another
--    lesson, in the same tenant, at a position (update of the parent column; the new parent is
--    read under the caller's RLS: invisible → P0002 "not found"). svc.move_in_parent (0030) now
--    also closes the gap in the old parent and makes room in the new one, under the order locks
--    of both programs taken in one global order, so concurrent moves never deadlock and never
--    share a position (the deferrable unique constraints of 0030 still prove it at commit).
--    Refused: another tenant's parent (SVP02); a move to another program of content that has
--    learner results (SVP03: their program_id and the program's progress would no longer agree).
--    What hangs below a moved record follows it (program_id of lessons and activities, the
--    lesson_id of an activity's results, which are touched so /v1 sync consumers see the change).
--    A record cannot move into its own descendant: each kind's parent is of the kind above it.

------------------------------------------------------------------------------------------
-- 1. Archiving
------------------------------------------------------------------------------------------
alter table programs add column archived_at timestamptz, add column archived boolean not null default false;
alter table units add column archived_at timestamptz, add column archived boolean not null default false;
alter table lessons add column archived_at timestamptz, add column archived boolean not null default false;
alter table activities add column archived_at timestamptz, add column archived boolean not null default false;

-- BEFORE INSERT / UPDATE OF archived_at or the parent: archived = own state or the parent's
-- (read under the caller's RLS; authors see every record of their tenants). The triggers are
-- named *_set_archived so that they run after *_inherit and *_move (BEFORE triggers fire in name
-- order), which take the program's order lock: an archive holds that lock too (the archive_X
-- tools take it first), so a record created or moved under a parent being archived reads the
-- parent's state after the archive committed, and the archive's propagation sees every child.
create function svc.archived_state() returns trigger language plpgsql set search_path = public, pg_temp as $$
declare
  parent_archived boolean;
begin
  if tg_table_name = 'units' then
    select p.archived into parent_archived from programs p where p.id = new.program_id;
  elsif tg_table_name = 'lessons' then
    select u.archived into parent_archived from units u where u.id = new.unit_id;
  elsif tg_table_name = 'activities' then
    select l.archived into parent_archived from lessons l where l.id = new.lesson_id;
  end if;
  new.archived := new.archived_at is not null or coalesce(parent_archived, false);
  return new;
end $$;

-- AFTER UPDATE when `archived` changed: the children's state follows. SECURITY DEFINER: the
-- caller may not write `archived`; only the children of the updated row are touched.
create function svc.archived_propagate() returns trigger
  language plpgsql security definer set search_path = public, pg_temp as $$
begin
  if tg_table_name = 'programs' then
    update units c set archived = (c.archived_at is not null or new.archived)
     where c.tenant_id = new.tenant_id and c.program_id = new.id and c.archived <> (c.archived_at is not null or new.archived);
  elsif tg_table_name = 'units' then
    update lessons c set archived = (c.archived_at is not null or new.archived)
     where c.tenant_id = new.tenant_id and c.unit_id = new.id and c.archived <> (c.archived_at is not null or new.archived);
  elsif tg_table_name = 'lessons' then
    update activities c set archived = (c.archived_at is not null or new.archived)
     where c.tenant_id = new.tenant_id and c.lesson_id = new.id and c.archived <> (c.archived_at is not null or new.archived);
  end if;
  return null;
end $$;
revoke execute on function svc.archived_propagate() from public;

create trigger programs_set_archived before insert or update of archived_at on programs
  for each row execute function svc.archived_state();
create trigger units_set_archived before insert or update of archived_at, program_id on units
  for each row execute function svc.archived_state();
create trigger lessons_set_archived before insert or update of archived_at, unit_id on lessons
  for each row execute function svc.archived_state();
create trigger activities_set_archived before insert or update of archived_at, lesson_id on activities
  for each row execute function svc.archived_state();
create trigger programs_archived_propagate after update on programs
  for each row when (old.archived is distinct from new.archived) execute function svc.archived_propagate();
create trigger units_archived_propagate after update on units
  for each row when (old.archived is distinct from new.archived) execute function svc.archived_propagate();
create trigger lessons_archived_propagate after update on lessons
  for each row when (old.archived is distinct from new.archived) execute function svc.archived_propagate();

-- Members read their tenants' content unless it is archived; authors read all of it.
do $$
declare
  t text;
begin
  foreach t in array array['programs', 'units', 'lessons', 'activities'] loop
    execute format('drop policy %1$s_member_read on %1$I', t);
    execute format($p$create policy %1$s_member_read on %1$I for select to authenticated
      using (tenant_id is null
             or tenant_id in (select public.current_author_tenant_ids())
             or (not archived and tenant_id in (select public.current_member_tenant_ids())))$p$, t);
  end loop;
end $$;

grant update (archived_at) on programs, units, lessons, activities to authenticated;

------------------------------------------------------------------------------------------
-- 2. Moves
------------------------------------------------------------------------------------------
grant update (program_id) on units to authenticated;
grant update (unit_id) on lessons to authenticated;
grant update (lesson_id) on activities to authenticated;

-- Take the order locks of two programs (one, when equal) in one global order: the lock key's.
create function svc.lock_programs_order(a uuid, b uuid) returns void language plpgsql volatile as $$
begin
  if hashtext(a::text) <= hashtext(b::text) then
    perform svc.lock_program_order(a);
    perform svc.lock_program_order(b);
  else
    perform svc.lock_program_order(b);
    perform svc.lock_program_order(a);
  end if;
end $$;

-- Whether learners have results on activity `p_id`, or on an activity under lesson / unit `p_id`
-- (p_table names which), in `p_tenant`. SECURITY DEFINER: authors cannot read learners' results.
-- A caller under a request role (SET ROLE authenticated …) gets an answer only for tenants they
-- are an author of (false otherwise), so it reveals nothing of other tenants; the service's own
-- role (the CLI, a console) gets the true answer, so the rule binds every writer.
create function svc.has_learner_results(p_table text, p_tenant uuid, p_id uuid) returns boolean
  language plpgsql stable security definer set search_path = public, pg_temp as $$
begin
  if p_tenant is null
     or (current_setting('role') <> 'none' and p_tenant not in (select public.current_author_tenant_ids())) then
    return false;
  end if;
  return case p_table
    when 'activities' then exists (select 1 from activity_results r where r.tenant_id = p_tenant and r.activity_id = p_id)
    when 'lessons' then exists (
      select 1 from activities a join activity_results r on r.tenant_id = a.tenant_id and r.activity_id = a.id
       where a.tenant_id = p_tenant and a.lesson_id = p_id)
    when 'units' then exists (
      select 1 from lessons l join activities a on a.tenant_id = l.tenant_id and a.lesson_id = l.id
        join activity_results r on r.tenant_id = a.tenant_id and r.activity_id = a.id
       where l.tenant_id = p_tenant and l.unit_id = p_id)
  end;
end $$;

-- BEFORE UPDATE OF position or the parent (replaces 0030's): with the same parent, move the row
-- within it, shifting the siblings in between (1 ≤ p ≤ n; null → the end). With another parent:
-- check it (visible, same tenant; another program only without learner results), lock both
-- programs, close the gap in the old parent, make room in the new one (1 ≤ p ≤ n + 1; null →
-- appended), and take the new parent's program. Updates issued by these triggers themselves
-- (depth > 1) are the shifts and the follow-ups and pass through.
create or replace function svc.move_in_parent() returns trigger language plpgsql set search_path = public, pg_temp as $$
declare
  col text := svc.parent_column(tg_table_name);
  old_parent uuid := (to_jsonb(old) ->> col)::uuid;
  new_parent uuid := (to_jsonb(new) ->> col)::uuid;
  parent_table text := case tg_table_name when 'units' then 'programs' when 'lessons' then 'units' else 'lessons' end;
  target record;
  n integer;
begin
  if pg_trigger_depth() > 1 then
    return new;
  end if;
  if new_parent is distinct from old_parent then
    execute format('select tenant_id, %s as program_id from %I where id = $1',
                   case when parent_table = 'programs' then 'id' else 'program_id' end, parent_table)
      into target using new_parent;
    if target is null then
      raise exception 'parent of % not found', tg_table_name
        using errcode = 'P0002', hint = coalesce(svc.record_kind(new_parent), '');
    end if;
    if target.tenant_id is distinct from old.tenant_id then
      raise exception '% % cannot move to another tenant: % % belongs to another tenant than the %',
        svc.record_name(tg_table_name), old.id, svc.record_name(parent_table), new_parent, svc.record_name(tg_table_name)
        using errcode = 'SVP02';
    end if;
    perform svc.lock_programs_order(old.program_id, target.program_id);
    if target.program_id <> old.program_id and svc.has_learner_results(tg_table_name, old.tenant_id, old.id) then
      raise exception '% % cannot move to another program: learners have results on %; move it within its program, or archive it',
        svc.record_name(tg_table_name), old.id, case when tg_table_name = 'activities' then 'it' else 'an activity in it' end
        using errcode = 'SVP03';
    end if;
    n := svc.child_count(tg_table_name, old.tenant_id, new_parent);
    if new.position is null then
      new.position := n + 1;
    elsif new.position > n + 1 then
      perform svc.position_out_of_range(tg_table_name, new_parent, new.position, n + 1, n);
    end if;
    perform svc.shift_children(tg_table_name, old.tenant_id, old_parent, old.position + 1, 2147483647, -1, old.id);
    perform svc.shift_children(tg_table_name, old.tenant_id, new_parent, new.position, 2147483647, 1, old.id);
    if tg_table_name <> 'units' then
      new.program_id := target.program_id;
    end if;
    return new;
  end if;

  perform svc.lock_program_order(old.program_id);
  n := svc.child_count(tg_table_name, old.tenant_id, old_parent);
  if new.position is null then
    new.position := n;
  end if;
  if new.position is not distinct from old.position then
    return new;
  end if;
  if new.position > n then
    perform svc.position_out_of_range(tg_table_name, old_parent, new.position, n, n);
  end if;
  if new.position < old.position then
    perform svc.shift_children(tg_table_name, old.tenant_id, old_parent, new.position, old.position - 1, 1, old.id);
  else
    perform svc.shift_children(tg_table_name, old.tenant_id, old_parent, old.position + 1, new.position, -1, old.id);
  end if;
  return new;
end $$;

drop trigger units_move on units;
drop trigger lessons_move on lessons;
drop trigger activities_move on activities;
create trigger units_move before update of position, program_id on units for each row execute function svc.move_in_parent();
create trigger lessons_move before update of position, unit_id on lessons for each row execute function svc.move_in_parent();
create trigger activities_move before update of position, lesson_id on activities for each row execute function svc.move_in_parent();

-- AFTER a move to another parent: what hangs below follows. Lessons and activities take the new
-- program; an activity's results take its new lesson, and the results of a moved lesson's
-- activities are touched (their unit changed), so /v1 sync consumers see them again; progress of
-- both programs is touched when activities changed program (total_count). SECURITY DEFINER:
-- authors may write none of these columns.
create function svc.follow_move() returns trigger
  language plpgsql security definer set search_path = public, pg_temp as $$
begin
  if tg_table_name = 'units' then
    update lessons c set program_id = new.program_id where c.tenant_id = new.tenant_id and c.unit_id = new.id;
    update activities c set program_id = new.program_id
     where c.tenant_id = new.tenant_id and c.lesson_id in (select l.id from lessons l where l.tenant_id = new.tenant_id and l.unit_id = new.id);
  elsif tg_table_name = 'lessons' then
    if new.program_id <> old.program_id then
      update activities c set program_id = new.program_id where c.tenant_id = new.tenant_id and c.lesson_id = new.id;
    end if;
    update activity_results r set lesson_id = r.lesson_id
     where r.tenant_id = new.tenant_id and r.activity_id in (select a.id from activities a where a.tenant_id = new.tenant_id and a.lesson_id = new.id);
  else
    update activity_results r set lesson_id = new.lesson_id where r.tenant_id = new.tenant_id and r.activity_id = new.id;
  end if;
  if new.program_id <> old.program_id then
    update progress p set updated_at = clock_timestamp()
     where p.tenant_id = new.tenant_id and p.program_id in (old.program_id, new.program_id);
  end if;
  return null;
end $$;
revoke execute on function svc.follow_move() from public;

create trigger units_follow_move after update on units
  for each row when (old.program_id is distinct from new.program_id) execute function svc.follow_move();
create trigger lessons_follow_move after update on lessons
  for each row when (old.unit_id is distinct from new.unit_id) execute function svc.follow_move();
create trigger activities_follow_move after update on activities
  for each row when (old.lesson_id is distinct from new.lesson_id) execute function svc.follow_move();
