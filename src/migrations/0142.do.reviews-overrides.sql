-- 0142 (issue #21): human overrides of the judge's verdicts, learners' appeals, one review queue.
--
-- 1. reviews: the one review queue of a tenant — a learner's appeal of a verdict (kind 'appeal',
--    filed through POST /v1/embed/results/{id}/appeal) and a pass held as a possible prompt
--    injection (kind 'injection', filed by the judge when it holds a pass: src/embed/grading/
--    verdict.ts). open → upheld (the model's verdict stands) or overridden (an author's override,
--    src/embed/grading/override.ts). One open appeal per result; one injection review per held
--    artifact. Existing held artifacts are backfilled (decided ones as upheld / overridden).
-- 2. verdict_overrides: the audit of every override — who (by_user_id; null for an admin through
--    `svc review reject`), when, why, the result and artifact, the verdict before and after.
-- 3. Authors act on their tenants' learners' work as themselves (role authenticated, RLS decides,
--    DESIGN §5): they read results, artifacts and progress of the tenants they author and may
--    change only the columns an override changes (a result's status, score and completed_at; an
--    artifact's verification; progress' completed_count and last_activity_at; updated_at, which the
--    0020 trigger sets anyway). Learners read
--    their own appeals and file an appeal only on a result of their own (the result must be
--    visible to them under 0090's learner policy) in a tenant they are a member of.
--    Learner reads (src/embed/reads.ts) name the learner in their WHERE clause too, so an author
--    using the player sees only their own results.

------------------------------------------------------------------------------------------
-- 1. The review queue
------------------------------------------------------------------------------------------
create table reviews (
  tenant_id    uuid not null references tenants on delete cascade,
  id           uuid not null default svc.uuid_v7(),
  kind         text not null check (kind in ('appeal', 'injection')),
  status       text not null default 'open' check (status in ('open', 'upheld', 'overridden')),
  result_id    uuid not null,
  artifact_id  uuid not null,
  user_id      uuid not null references users on delete cascade,
  message      text check (char_length(message) between 1 and 1000),
  created_at   timestamptz not null default clock_timestamp(),
  resolved_at  timestamptz,
  resolved_by  uuid references users on delete set null,
  reason       text check (char_length(reason) between 1 and 1000),
  primary key (tenant_id, id),
  foreign key (tenant_id, result_id) references activity_results (tenant_id, id) on delete cascade,
  foreign key (tenant_id, artifact_id) references artifacts (tenant_id, id) on delete cascade,
  check ((kind = 'appeal') = (message is not null)),
  check ((status = 'open') = (resolved_at is null))
);
create unique index reviews_open_appeal_key on reviews (tenant_id, result_id) where kind = 'appeal' and status = 'open';
create unique index reviews_injection_key on reviews (tenant_id, artifact_id) where kind = 'injection';
create index reviews_queue_idx on reviews (tenant_id, status, created_at, id);
create index reviews_result_idx on reviews (tenant_id, result_id);
create index reviews_id_idx on reviews (id);
alter table reviews enable row level security;

grant select on reviews to authenticated;
grant insert (tenant_id, kind, result_id, artifact_id, user_id, message) on reviews to authenticated;
grant update (status, resolved_at, resolved_by, reason) on reviews to authenticated;
create policy reviews_author_read on reviews for select to authenticated
  using (tenant_id in (select public.current_author_tenant_ids()));
create policy reviews_author_update on reviews for update to authenticated
  using (tenant_id in (select public.current_author_tenant_ids()))
  with check (tenant_id in (select public.current_author_tenant_ids()));
create policy reviews_learner_read on reviews for select to authenticated
  using (kind = 'appeal' and user_id = public.current_itera_user_id() and tenant_id in (select public.current_member_tenant_ids()));
create policy reviews_learner_appeal on reviews for insert to authenticated
  with check (
    kind = 'appeal' and status = 'open' and user_id = public.current_itera_user_id()
    and tenant_id in (select public.current_member_tenant_ids())
    and exists (select 1 from activity_results r
                 where r.tenant_id = reviews.tenant_id and r.id = reviews.result_id and r.user_id = public.current_itera_user_id())
    and exists (select 1 from artifacts a
                 where a.tenant_id = reviews.tenant_id and a.id = reviews.artifact_id and a.result_id = reviews.result_id));

-- Backfill: every held artifact becomes an injection review (decided ones with their decision).
insert into reviews (tenant_id, kind, status, result_id, artifact_id, user_id, created_at, resolved_at)
select a.tenant_id, 'injection',
       case a.verification->>'review' when 'required' then 'open' when 'approved' then 'upheld' else 'overridden' end,
       a.result_id, a.id, a.user_id, a.updated_at,
       case when a.verification->>'review' = 'required' then null
            else coalesce((a.verification->>'reviewed_at')::timestamptz, a.updated_at) end
  from artifacts a
 where a.verification->>'review' in ('required', 'approved', 'rejected');

------------------------------------------------------------------------------------------
-- 2. The audit of overrides
------------------------------------------------------------------------------------------
create table verdict_overrides (
  tenant_id    uuid not null references tenants on delete cascade,
  id           uuid not null default svc.uuid_v7(),
  result_id    uuid not null,
  artifact_id  uuid not null,
  review_id    uuid,
  by_user_id   uuid references users on delete set null,
  reason       text not null check (char_length(reason) between 1 and 1000),
  before       jsonb not null,
  after        jsonb not null,
  created_at   timestamptz not null default clock_timestamp(),
  primary key (tenant_id, id),
  foreign key (tenant_id, result_id) references activity_results (tenant_id, id) on delete cascade,
  foreign key (tenant_id, artifact_id) references artifacts (tenant_id, id) on delete cascade
);
create index verdict_overrides_result_idx on verdict_overrides (tenant_id, result_id, created_at);
alter table verdict_overrides enable row level security;

grant select, insert on verdict_overrides to authenticated;
create policy verdict_overrides_author_read on verdict_overrides for select to authenticated
  using (tenant_id in (select public.current_author_tenant_ids()));
create policy verdict_overrides_author_insert on verdict_overrides for insert to authenticated
  with check (tenant_id in (select public.current_author_tenant_ids()) and by_user_id = public.current_itera_user_id());

------------------------------------------------------------------------------------------
-- 3. Authors act on their tenants' learners' work
------------------------------------------------------------------------------------------
grant update (status, score, completed_at, updated_at) on activity_results to authenticated;
grant update (verification, updated_at) on artifacts to authenticated;
grant insert (tenant_id, user_id, program_id, completed_count, last_activity_at), update (completed_count, last_activity_at, updated_at) on progress to authenticated;
create policy activity_results_author_read on activity_results for select to authenticated
  using (tenant_id in (select public.current_author_tenant_ids()));
create policy activity_results_author_update on activity_results for update to authenticated
  using (tenant_id in (select public.current_author_tenant_ids()))
  with check (tenant_id in (select public.current_author_tenant_ids()));
create policy artifacts_author_read on artifacts for select to authenticated
  using (tenant_id in (select public.current_author_tenant_ids()));
create policy artifacts_author_update on artifacts for update to authenticated
  using (tenant_id in (select public.current_author_tenant_ids()))
  with check (tenant_id in (select public.current_author_tenant_ids()));
create policy progress_author_read on progress for select to authenticated
  using (tenant_id in (select public.current_author_tenant_ids()));
create policy progress_author_insert on progress for insert to authenticated
  with check (tenant_id in (select public.current_author_tenant_ids()));
create policy progress_author_update on progress for update to authenticated
  using (tenant_id in (select public.current_author_tenant_ids()))
  with check (tenant_id in (select public.current_author_tenant_ids()));
