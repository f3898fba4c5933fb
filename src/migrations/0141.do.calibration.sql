-- 0141 (issue #21): judge calibration — examples an instructor vouches for, calibration runs and
-- their reports, the per-example grades of a run, the audited grading mode of an activity
-- (set_grading), and ledger rows that belong to a calibration run instead of a learner's artifact.
-- See src/embed/calibration/README.md for the design; the gate's thresholds are judge_settings (0140).
--
-- Who sees what. Examples, runs, grades and mode changes are authors' data: under RLS only authors
-- of the row's tenant (current_author_tenant_ids(), which an embed session narrows to its own
-- tenant) select them, and they insert/delete examples and insert runs and mode changes. Learners
-- (member, not author) and the results API's svc_results role have no grant and no policy: they see
-- nothing. The judge and the calibration worker run as the database owner (outside RLS, as the
-- grading job does).

------------------------------------------------------------------------------------------
-- 1. Examples: graded work an instructor vouches for. `adversarial` work must fail.
------------------------------------------------------------------------------------------
create table calibration_examples (
  tenant_id          uuid not null references tenants on delete cascade,
  id                 uuid not null default svc.uuid_v7(),
  activity_id        uuid not null references activities on delete cascade,
  kind               text not null check (kind in ('diagram', 'document', 'site', 'repo')),
  content            text,
  ref_url            text check (length(ref_url) <= 2048),
  repo_url           text check (length(repo_url) <= 2048),
  expected_passed    boolean not null,
  expected_score     numeric check (expected_score between 0 and 100),
  -- [{id, met}] with ids of the activity's rubric (checked by the tool, rubricCriteria)
  expected_criteria  jsonb not null default '[]'::jsonb check (jsonb_typeof(expected_criteria) = 'array'),
  adversarial        boolean not null default false,
  note               text check (length(note) <= 2000),
  created_by         uuid references users on delete set null,
  created_at         timestamptz not null default now(),
  primary key (tenant_id, id),
  check (content is not null or ref_url is not null or repo_url is not null),
  check (not (adversarial and expected_passed))
);
create index calibration_examples_activity_idx on calibration_examples (tenant_id, activity_id, created_at);
create index calibration_examples_id_idx on calibration_examples (id);
alter table calibration_examples enable row level security;

------------------------------------------------------------------------------------------
-- 2. Runs (a finished run is a report): what it graded against, its state, and its figures.
--    status: queued → running ⇄ waiting (budget spent, model down) → done | failed.
------------------------------------------------------------------------------------------
create table calibration_runs (
  tenant_id        uuid not null references tenants on delete cascade,
  id               uuid not null default svc.uuid_v7(),
  activity_id      uuid not null references activities on delete cascade,
  status           text not null default 'queued' check (status in ('queued', 'running', 'waiting', 'done', 'failed')),
  repeats          integer not null default 1 check (repeats between 1 and 3),
  rubric_version   integer not null,
  model            text not null,
  prompt_version   text not null,
  -- why it ran: an author's run_calibration, or an automatic re-run (rubric / model / prompt changed)
  reason           text not null check (reason in ('requested', 'rubric_changed', 'model_changed', 'prompt_changed')),
  requested_by     uuid references users on delete set null,
  total            integer not null default 0 check (total >= 0),
  graded           integer not null default 0 check (graded >= 0),
  note             jsonb,
  report           jsonb,
  created_at       timestamptz not null default now(),
  completed_at     timestamptz,
  primary key (tenant_id, id)
);
create index calibration_runs_activity_idx on calibration_runs (tenant_id, activity_id, created_at);
create index calibration_runs_id_idx on calibration_runs (id);
-- one run waiting or going per activity: a second request answers the one under way
create unique index calibration_runs_open_idx on calibration_runs (tenant_id, activity_id) where status in ('queued', 'running', 'waiting');
alter table calibration_runs enable row level security;

-- One grade of one example in one repeat of a run (so a run that stops resumes where it was).
create table calibration_grades (
  tenant_id    uuid not null,
  run_id       uuid not null,
  example_id   uuid not null,
  repeat       integer not null check (repeat between 1 and 3),
  -- {passed, score, criteria: [{id, met}], evidence} or {not_gradable: reason}
  outcome      jsonb not null,
  call_id      uuid,
  created_at   timestamptz not null default now(),
  primary key (tenant_id, run_id, example_id, repeat),
  foreign key (tenant_id, run_id) references calibration_runs (tenant_id, id) on delete cascade,
  foreign key (tenant_id, example_id) references calibration_examples (tenant_id, id) on delete cascade
);
alter table calibration_grades enable row level security;

------------------------------------------------------------------------------------------
-- 3. Grading mode changes (set_grading), append-only: the latest row of an activity is its mode;
--    no row = `gated`. `live` + force lets learners' verdicts through without a passing report.
------------------------------------------------------------------------------------------
create table grading_mode_changes (
  tenant_id     uuid not null references tenants on delete cascade,
  id            uuid not null default svc.uuid_v7(),
  activity_id   uuid not null references activities on delete cascade,
  mode          text not null check (mode in ('gated', 'live')),
  forced        boolean not null default false,
  reason        text not null check (length(reason) between 1 and 2000),
  changed_by    uuid references users on delete set null,
  changed_at    timestamptz not null default now(),
  primary key (tenant_id, id),
  check (mode = 'gated' or forced)
);
create index grading_mode_changes_activity_idx on grading_mode_changes (tenant_id, activity_id, changed_at);
alter table grading_mode_changes enable row level security;

grant select, insert, delete on calibration_examples to authenticated;
grant select, insert on calibration_runs, grading_mode_changes to authenticated;
grant select on calibration_grades to authenticated;
do $$
declare
  t text;
begin
  foreach t in array array['calibration_examples', 'calibration_runs', 'calibration_grades', 'grading_mode_changes'] loop
    execute format($p$create policy %1$s_author_read on %1$I for select to authenticated
      using (tenant_id in (select public.current_author_tenant_ids()))$p$, t);
  end loop;
  foreach t in array array['calibration_examples', 'calibration_runs', 'grading_mode_changes'] loop
    execute format($p$create policy %1$s_author_insert on %1$I for insert to authenticated
      with check (tenant_id in (select public.current_author_tenant_ids()))$p$, t);
  end loop;
end $$;
create policy calibration_examples_author_delete on calibration_examples for delete to authenticated
  using (tenant_id in (select public.current_author_tenant_ids()));

------------------------------------------------------------------------------------------
-- 4. The ledger: a model call is for a learner's artifact or for a calibration run, never both.
------------------------------------------------------------------------------------------
alter table model_calls alter column artifact_id drop not null;
alter table model_calls add column calibration_run_id uuid;
alter table model_calls add constraint model_calls_calibration_run_id_fkey
  foreign key (tenant_id, calibration_run_id) references calibration_runs (tenant_id, id) on delete cascade;
alter table model_calls add constraint model_calls_one_subject check ((artifact_id is null) <> (calibration_run_id is null));
create index model_calls_calibration_idx on model_calls (tenant_id, calibration_run_id, started_at) where calibration_run_id is not null;

drop function svc.reserve_model_call(uuid, uuid, integer, integer, text, text, text, timestamptz, integer, integer, bigint, bigint);
-- As in 0060, with p_calibration_run: the ledger row names the artifact or the calibration run.
create function svc.reserve_model_call(
  p_tenant uuid, p_artifact uuid, p_run integer, p_attempt integer, p_model text, p_sha256 text, p_body text,
  p_now timestamptz, p_calls_hour integer, p_calls_day integer, p_tokens_hour bigint, p_tokens_day bigint,
  p_calibration_run uuid default null,
  out call_id uuid, out exhausted text, out retry_at timestamptz)
language plpgsql as $$
declare
  v_hour timestamptz := date_trunc('hour', p_now at time zone 'UTC') at time zone 'UTC';
  v_day timestamptz := date_trunc('day', p_now at time zone 'UTC') at time zone 'UTC';
  v_calls_hour bigint; v_tokens_hour bigint; v_calls_day bigint; v_tokens_day bigint;
begin
  perform pg_advisory_xact_lock(7313, hashtext(p_tenant::text));
  select coalesce(sum(calls) filter (where hour = v_hour), 0), coalesce(sum(tokens) filter (where hour = v_hour), 0),
         coalesce(sum(calls), 0), coalesce(sum(tokens), 0)
    into v_calls_hour, v_tokens_hour, v_calls_day, v_tokens_day
    from public.model_usage where tenant_id = p_tenant and hour >= v_day;
  if v_calls_day >= p_calls_day then exhausted := 'calls_per_day'; retry_at := v_day + interval '1 day'; return; end if;
  if v_tokens_day >= p_tokens_day then exhausted := 'tokens_per_day'; retry_at := v_day + interval '1 day'; return; end if;
  if v_calls_hour >= p_calls_hour then exhausted := 'calls_per_hour'; retry_at := v_hour + interval '1 hour'; return; end if;
  if v_tokens_hour >= p_tokens_hour then exhausted := 'tokens_per_hour'; retry_at := v_hour + interval '1 hour'; return; end if;
  insert into public.model_usage (tenant_id, hour, calls) values (p_tenant, v_hour, 1)
    on conflict (tenant_id, hour) do update set calls = model_usage.calls + 1;
  insert into public.model_requests (tenant_id, sha256, body) values (p_tenant, p_sha256, p_body) on conflict do nothing;
  insert into public.model_calls (tenant_id, artifact_id, calibration_run_id, run, attempt, request_sha256, model, started_at)
    values (p_tenant, p_artifact, p_calibration_run, p_run, p_attempt, p_sha256, p_model, p_now)
    returning id into call_id;
end $$;

-- Learners' submissions held by the gate (verification.reason = 'calibration_required'), found per activity at release.
create index artifacts_calibration_held_idx on artifacts (tenant_id, activity_id, created_at)
  where (verification ->> 'reason') = 'calibration_required';
