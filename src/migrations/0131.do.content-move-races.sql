-- 0131 content-move races: a record's program is read again once its program's order lock is held.
--
-- 1. A create racing a move of its parent. svc.inherit_from_parent (0030) read the parent's
--    program, waited for that program's order lock, and kept what it had read. A move of the
--    parent to another program holds that lock (it takes the locks of both programs before it
--    updates the parent), so the create woke up after the move had committed — and its
--    follow-up (svc.follow_move, 0110), which carries the program down to the children, had
--    run before the new child existed: create_activity racing move_lesson (create_lesson racing
--    move_unit) left an activity (lesson) in the old program under a parent in the new one.
--    Now the trigger reads the parent again once it holds the lock, and locks the new program
--    (and reads again) until the program it read is one it holds. From then on a move of the
--    parent out of that program has to wait for the create (it needs the lock too), and its
--    follow-up sees the new child.
-- 2. A first submission racing a move or an archive of its activity. The embed judge read the
--    activity (lesson, program, archived) and then inserted the learner's result; a move to
--    another program committing in between passed its "no learner results" check (the result
--    was not committed yet) and left a result whose lesson and program contradict the
--    activity's, and an archive committing in between let a submission in after the archive.
--    svc.lock_activity_program takes the activity's program order lock in SHARED mode, reading
--    the program again after the lock (as in 1) — the judge calls it before it reads the
--    activity. Moves and archives take that lock exclusively (the tools first, the move trigger
--    too), so either the move waits for the submission and then sees its result (and refuses,
--    SVP03), or the submission waits for the move / archive and reads the activity after it
--    (its new lesson and program, or archived: 409). Submissions do not wait for each other
--    (shared mode); they wait for an author's write to the same program while it commits.
--    svc.archived_state now takes the program's order lock on an archive or unarchive itself,
--    so that holds for every writer of archived_at, not only for the archive tools.
--
-- PGlite runs one transaction at a time, so neither race can happen there; the functions behave
-- the same (the re-read finds what was read first). Both stay SECURITY INVOKER: the trigger reads
-- the parent under the caller's RLS as before; the judge runs as the service's own role.

------------------------------------------------------------------------------------------
-- 1. Creates
------------------------------------------------------------------------------------------

-- BEFORE INSERT on units / lessons / activities (replaces 0030's body; the triggers stay):
-- inherit tenant and program from the parent (read under the caller's RLS: an invisible parent
-- — or one deleted while we waited for the lock — is P0002, with the kind of record the id really
-- is, if visible, as HINT), reading it again under its program's order lock until the program
-- read is one locked; then place the row: append, or insert at the given position and shift the
-- rest.
create or replace function svc.inherit_from_parent() returns trigger language plpgsql set search_path = public, pg_temp as $$
declare
  parent record;
  parent_id uuid;
  locked uuid[] := '{}';
  n integer;
begin
  if tg_table_name = 'units' then
    parent_id := new.program_id;
  elsif tg_table_name = 'lessons' then
    parent_id := new.unit_id;
  else
    parent_id := new.lesson_id;
  end if;
  loop
    if tg_table_name = 'units' then
      select p.tenant_id, p.id as program_id into parent from programs p where p.id = parent_id;
    elsif tg_table_name = 'lessons' then
      select u.tenant_id, u.program_id into parent from units u where u.id = parent_id;
    else
      select l.tenant_id, l.program_id into parent from lessons l where l.id = parent_id;
    end if;
    if not found then
      raise exception 'parent of % not found', tg_table_name
        using errcode = 'P0002', hint = coalesce(svc.record_kind(parent_id), '');
    end if;
    exit when parent.program_id = any(locked);
    perform svc.lock_program_order(parent.program_id);
    locked := locked || parent.program_id;
  end loop;
  new.tenant_id := parent.tenant_id;
  if tg_table_name <> 'units' then
    new.program_id := parent.program_id;
  end if;

  n := svc.child_count(tg_table_name, parent.tenant_id, parent_id);
  if new.position is null then
    new.position := n + 1;
  elsif new.position > n + 1 then
    perform svc.position_out_of_range(tg_table_name, parent_id, new.position, n + 1, n);
  elsif new.position <= n then
    perform svc.shift_children(tg_table_name, parent.tenant_id, parent_id, new.position, n, 1, null);
  end if;
  return new;
end $$;

------------------------------------------------------------------------------------------
-- 2. Submissions
------------------------------------------------------------------------------------------

-- The shared mode of svc.lock_program_order (0030; same key): held by readers that must not see
-- a program's content change under them (a submission), compatible with each other, exclusive
-- with the order lock of every writer of the program, until the end of the transaction.
create function svc.lock_program_order_shared(program uuid) returns void language sql volatile as $$
  select pg_advisory_xact_lock_shared(7310, hashtext(program::text))
$$;

-- Hold the order lock of the program of activity `p_activity` of tenant `p_tenant` in shared
-- mode, reading the activity again under the lock until its program is one locked; returns that
-- program (null: no such activity in that tenant, nothing locked). Until the transaction ends,
-- the activity cannot move to another lesson or program nor be archived (those take the lock
-- exclusively), so what the caller reads of it next stays true until its commit.
create function svc.lock_activity_program(p_activity uuid, p_tenant uuid) returns uuid
  language plpgsql volatile set search_path = public, pg_temp as $$
declare
  program uuid;
  locked uuid[] := '{}';
begin
  loop
    select a.program_id into program from activities a where a.tenant_id = p_tenant and a.id = p_activity;
    if program is null or program = any(locked) then
      return program;
    end if;
    perform svc.lock_program_order_shared(program);
    locked := locked || program;
  end loop;
end $$;

-- BEFORE INSERT / UPDATE OF archived_at or the parent (replaces 0110's body; the triggers stay):
-- as before, archived = own state or the parent's; and an archive or unarchive (archived_at
-- changed) takes its program's order lock itself, so that it excludes submissions (above) even
-- when the writer did not take the lock first (the archive tools do; a console or a script may
-- not) or took it on a program read before a move committed. For the tools it is already held.
create or replace function svc.archived_state() returns trigger language plpgsql set search_path = public, pg_temp as $$
declare
  parent_archived boolean;
begin
  if tg_op = 'UPDATE' and new.archived_at is distinct from old.archived_at then
    if tg_table_name = 'programs' then
      perform svc.lock_program_order(new.id);
    else
      perform svc.lock_program_order(new.program_id);
    end if;
  end if;
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
