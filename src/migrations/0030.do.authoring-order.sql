-- 0030 authoring order: positions of units, lessons and activities are kept contiguous (1..n
-- within their parent) by the database itself, so every writer obeys the same rules:
--
--   insert, no position        → appended (n + 1)
--   insert at p (1 ≤ p ≤ n+1)  → the siblings at p..n move down by one
--   update position to p       → the row moves; the siblings in between shift by one (1 ≤ p ≤ n)
--   delete                     → the siblings after the gap move up by one
--   a position outside that range → SQLSTATE SVP01 with a message saying the allowed range
--
-- Writers of one program are serialised by a transaction-scoped advisory lock on the program
-- (svc.lock_program_order), taken inside the triggers before the siblings are counted, so two
-- concurrent inserts into the same parent can never pick the same position. A lock per program
-- rather than per parent keeps a bulk import of a whole program at one lock (the shared lock
-- table is finite). The deferrable unique constraints below are the proof: a duplicate position
-- that slipped through would fail the commit (they are checked at commit so that shifting a range
-- by one inside a transaction is possible).
--
-- Also: external ids (a partner's own id of a record, for idempotent bulk imports) and the digest
-- of the import that created a program.

------------------------------------------------------------------------------------------
-- 1. Existing rows: renumber each parent's children 1..n in their current order
--    (position, created_at, id), since 0001 stored explicit positions as given.
------------------------------------------------------------------------------------------
update units t set position = r.rn
  from (select id, row_number() over (partition by program_id order by position, created_at, id)::int as rn from units) r
 where t.id = r.id and t.position <> r.rn;
update lessons t set position = r.rn
  from (select id, row_number() over (partition by unit_id order by position, created_at, id)::int as rn from lessons) r
 where t.id = r.id and t.position <> r.rn;
update activities t set position = r.rn
  from (select id, row_number() over (partition by lesson_id order by position, created_at, id)::int as rn from activities) r
 where t.id = r.id and t.position <> r.rn;

------------------------------------------------------------------------------------------
-- 2. One position per parent. NULLS NOT DISTINCT so catalog rows (tenant_id null) are held to
--    it too. These replace 0001's non-unique indexes on the same columns.
------------------------------------------------------------------------------------------
alter table units add constraint units_position_key
  unique nulls not distinct (tenant_id, program_id, position) deferrable initially deferred;
alter table lessons add constraint lessons_position_key
  unique nulls not distinct (tenant_id, unit_id, position) deferrable initially deferred;
alter table activities add constraint activities_position_key
  unique nulls not distinct (tenant_id, lesson_id, position) deferrable initially deferred;
drop index units_tenant_program_idx;
drop index lessons_tenant_unit_idx;
drop index activities_tenant_lesson_idx;

------------------------------------------------------------------------------------------
-- 3. External ids: set at creation, never changed (no update grant). Unique per tenant for
--    programs, per program for units, lessons and activities.
------------------------------------------------------------------------------------------
alter table programs add column external_id text check (length(external_id) between 1 and 200),
                     add column import_digest text check (import_digest ~ '^[0-9a-f]{64}$');
alter table units add column external_id text check (length(external_id) between 1 and 200);
alter table lessons add column external_id text check (length(external_id) between 1 and 200);
alter table activities add column external_id text check (length(external_id) between 1 and 200);
create unique index programs_external_id_key on programs (tenant_id, external_id) nulls not distinct
  where external_id is not null;
create unique index units_external_id_key on units (tenant_id, program_id, external_id) nulls not distinct
  where external_id is not null;
create unique index lessons_external_id_key on lessons (tenant_id, program_id, external_id) nulls not distinct
  where external_id is not null;
create unique index activities_external_id_key on activities (tenant_id, program_id, external_id) nulls not distinct
  where external_id is not null;

------------------------------------------------------------------------------------------
-- 4. Helpers. All SECURITY INVOKER (the caller's RLS applies) with a fixed search_path, and
--    VOLATILE: a volatile function takes a fresh snapshot per query, so siblings committed while
--    we waited for the lock are seen.
------------------------------------------------------------------------------------------

-- Serialise the order changes of one program until the end of the transaction.
create function svc.lock_program_order(program uuid) returns void language sql volatile as $$
  select pg_advisory_xact_lock(7310, hashtext(program::text))
$$;

-- The column naming the parent of a content table.
create function svc.parent_column(tbl text) returns text language sql immutable as $$
  select case tbl when 'units' then 'program_id' when 'lessons' then 'unit_id' when 'activities' then 'lesson_id' end
$$;

-- The singular record name of a content table, for messages.
create function svc.record_name(tbl text) returns text language sql immutable as $$
  select case tbl when 'programs' then 'program' when 'units' then 'unit' when 'lessons' then 'lesson' when 'activities' then 'activity' end
$$;

-- The tenant filter of a sibling query: catalog rows have no tenant. Leading with tenant_id lets
-- the (tenant_id, parent, position) index serve the query.
create function svc.tenant_filter(tenant uuid) returns text language sql immutable as $$
  select case when tenant is null then 'tenant_id is null' else format('tenant_id = %L::uuid', tenant) end
$$;

-- Number of children of `parent` in `tbl`.
create function svc.child_count(tbl text, tenant uuid, parent uuid) returns integer language plpgsql volatile
  set search_path = public, pg_temp as $$
declare
  n integer;
begin
  execute format('select count(*)::int from %I where %s and %I = $1', tbl, svc.tenant_filter(tenant), svc.parent_column(tbl))
    into n using parent;
  return n;
end $$;

-- Move the children of `parent` at positions lo..hi by `delta` (±1), leaving `except_id` alone.
create function svc.shift_children(tbl text, tenant uuid, parent uuid, lo integer, hi integer, delta integer, except_id uuid)
  returns void language plpgsql volatile set search_path = public, pg_temp as $$
begin
  execute format('update %I set position = position + $4 where %s and %I = $1 and position between $2 and $3 and id is distinct from $5',
                 tbl, svc.tenant_filter(tenant), svc.parent_column(tbl))
    using parent, lo, hi, delta, except_id;
end $$;

-- Renumber the children of `parent` 1..n in their order (position, created_at, id).
create function svc.renumber_children(tbl text, tenant uuid, parent uuid) returns void language plpgsql volatile
  set search_path = public, pg_temp as $$
begin
  execute format(
    'update %1$I t set position = r.rn
       from (select id, row_number() over (order by position, created_at, id)::int as rn from %1$I where %2$s and %3$I = $1) r
      where t.id = r.id and t.position <> r.rn',
    tbl, svc.tenant_filter(tenant), svc.parent_column(tbl)) using parent;
end $$;

-- Which content record `id` is, among those the caller can see (null: none). For messages such
-- as "program … not found (that id is a unit)"; RLS applies, so another tenant's ids stay unknown.
create function svc.record_kind(id uuid) returns text language sql stable as $$
  select case
    when exists (select from public.programs p where p.id = record_kind.id) then 'program'
    when exists (select from public.units u where u.id = record_kind.id) then 'unit'
    when exists (select from public.lessons l where l.id = record_kind.id) then 'lesson'
    when exists (select from public.activities a where a.id = record_kind.id) then 'activity'
  end
$$;

create function svc.position_out_of_range(tbl text, parent uuid, wanted integer, max_allowed integer, n integer) returns void
  language plpgsql as $$
begin
  raise exception 'position % is out of range: % % has % %, so give a position from 1 to %',
    wanted,
    case tbl when 'units' then 'program' when 'lessons' then 'unit' else 'lesson' end,
    parent, n, case when n = 1 then svc.record_name(tbl) else tbl end, max_allowed
    using errcode = 'SVP01';
end $$;

------------------------------------------------------------------------------------------
-- 5. Triggers
------------------------------------------------------------------------------------------

-- BEFORE INSERT (replaces 0001's body; the triggers units/lessons/activities_inherit stay):
-- inherit tenant and program from the parent (read under the caller's RLS: an invisible
-- parent is P0002, with the kind of record the id really is, if visible, as HINT), then place
-- the row: append, or insert at the given position and shift the rest.
create or replace function svc.inherit_from_parent() returns trigger language plpgsql set search_path = public, pg_temp as $$
declare
  parent record;
  parent_id uuid;
  n integer;
begin
  if tg_table_name = 'units' then
    parent_id := new.program_id;
    select p.tenant_id, p.id as program_id into parent from programs p where p.id = new.program_id;
  elsif tg_table_name = 'lessons' then
    parent_id := new.unit_id;
    select u.tenant_id, u.program_id into parent from units u where u.id = new.unit_id;
  else
    parent_id := new.lesson_id;
    select l.tenant_id, l.program_id into parent from lessons l where l.id = new.lesson_id;
  end if;
  if not found then
    raise exception 'parent of % not found', tg_table_name
      using errcode = 'P0002', hint = coalesce(svc.record_kind(parent_id), '');
  end if;
  new.tenant_id := parent.tenant_id;
  if tg_table_name <> 'units' then
    new.program_id := parent.program_id;
  end if;

  perform svc.lock_program_order(parent.program_id);
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

-- BEFORE UPDATE OF position: move the row, shifting the siblings in between. Updates issued by
-- these triggers themselves (depth > 1) are the shifts and pass through.
create function svc.move_in_parent() returns trigger language plpgsql set search_path = public, pg_temp as $$
declare
  parent_id uuid;
  n integer;
begin
  if new.position is not distinct from old.position or pg_trigger_depth() > 1 then
    return new;
  end if;
  if tg_table_name = 'units' then
    parent_id := old.program_id;
  elsif tg_table_name = 'lessons' then
    parent_id := old.unit_id;
  else
    parent_id := old.lesson_id;
  end if;
  perform svc.lock_program_order(old.program_id);
  n := svc.child_count(tg_table_name, old.tenant_id, parent_id);
  if new.position > n then
    perform svc.position_out_of_range(tg_table_name, parent_id, new.position, n, n);
  end if;
  if new.position < old.position then
    perform svc.shift_children(tg_table_name, old.tenant_id, parent_id, new.position, old.position - 1, 1, old.id);
  else
    perform svc.shift_children(tg_table_name, old.tenant_id, parent_id, old.position + 1, new.position, -1, old.id);
  end if;
  return new;
end $$;

-- AFTER DELETE, once per statement: close the gaps in every parent that lost children and still
-- exists (when the parent itself is being deleted, the cascade needs no renumbering).
create function svc.close_gaps() returns trigger language plpgsql set search_path = public, pg_temp as $$
declare
  r record;
begin
  for r in execute format(
    'select distinct g.tenant_id, g.program_id, g.%1$I as parent_id from gone g
      where exists (select from %2$I p where p.id = g.%1$I)
      order by g.program_id, parent_id',
    svc.parent_column(tg_table_name),
    case tg_table_name when 'units' then 'programs' when 'lessons' then 'units' else 'lessons' end)
  loop
    perform svc.lock_program_order(r.program_id);
    perform svc.renumber_children(tg_table_name, r.tenant_id, r.parent_id);
  end loop;
  return null;
end $$;

create trigger units_move before update of position on units for each row execute function svc.move_in_parent();
create trigger lessons_move before update of position on lessons for each row execute function svc.move_in_parent();
create trigger activities_move before update of position on activities for each row execute function svc.move_in_parent();
create trigger units_close_gaps after delete on units referencing old table as gone
  for each statement execute function svc.close_gaps();
create trigger lessons_close_gaps after delete on lessons referencing old table as gone
  for each statement execute function svc.close_gaps();
create trigger activities_close_gaps after delete on activities referencing old table as gone
  for each statement execute function svc.close_gaps();

-- (The functions above keep PostgreSQL's default EXECUTE for PUBLIC; no blanket grant on schema
-- svc here, which would undo another migration's revoke.)
