-- 0152 (issue #22 "Grades back"): Assignment and Grade Services 2.0 — the scores the tool owes
-- the platforms, kept until delivered (src/lti/ags/).
--
-- Every change of a launched learner's result on an activity — a new submission, a verdict, a
-- hold, an override, a review decision, a calibration release — writes an outbox row here in the
-- transaction that makes the change, for each placement (resource link with an AGS endpoint) of
-- that activity in a course the learner belongs to. A trigger does it, so no writer of results can
-- forget it. It is a deferred constraint trigger: it runs at commit, once the transaction's
-- writes are all done, and sees the final result and latest artifact (a verdict writes the
-- artifact before the result). One row per (placement, learner, transaction); a change that
-- leaves the score inputs as they were (a waiting grading rewriting its note) adds no row.
--
-- The delivery (src/lti/ags/deliver.ts) sends each placement and learner's rows in order, once
-- each, retrying while the platform is down and recording a refusal (4xx) as failed.
--
-- Who sees what: as 0150/0151, only the service (database owner); RLS on, no policy. The trigger
-- function is SECURITY DEFINER so writers under RLS (an author's override) still queue scores.

create table lti_score_deliveries (
  tenant_id        uuid not null,
  id               uuid not null default svc.uuid_v7(),
  link             uuid not null,                       -- lti_resource_links.id: the placement
  user_id          uuid not null references users on delete cascade,
  result_id        uuid not null,
  xact             text not null,                       -- the transaction that changed the result
  subject          text not null,                       -- the learner's LTI `sub` (personal data)
  -- The score's inputs at commit: {result_status, result_score, artifact: {id, status, reason,
  -- review, score, feedback}} — mapped to a score when sent (src/lti/ags/mapping.ts).
  snapshot         jsonb not null,
  state            text not null default 'queued' check (state in ('queued', 'sending', 'delivered', 'failed', 'skipped')),
  attempts         int not null default 0,
  next_attempt_at  timestamptz not null default now(),
  lease_until      timestamptz,
  lineitem_url     text,
  sent             jsonb,                               -- the score as sent (delivered) or as it would have been
  passed           boolean,                             -- a pass (FullyGraded, result completed) was delivered
  http_status      int,
  last_error       text check (length(last_error) <= 1000),
  created_at       timestamptz not null default clock_timestamp(),
  updated_at       timestamptz not null default clock_timestamp(),
  delivered_at     timestamptz,
  primary key (tenant_id, id),
  unique (tenant_id, link, user_id, xact),
  foreign key (tenant_id, link) references lti_resource_links (tenant_id, id) on delete cascade,
  foreign key (tenant_id, result_id) references activity_results (tenant_id, id) on delete cascade
);
-- A stream (placement, learner) in order; the due rows; a learner's rows (erasure, export).
create index lti_score_deliveries_stream_idx on lti_score_deliveries (tenant_id, link, user_id, id);
create index lti_score_deliveries_due_idx on lti_score_deliveries (next_attempt_at) where state in ('queued', 'sending');
create index lti_score_deliveries_user_idx on lti_score_deliveries (tenant_id, user_id);
create index lti_score_deliveries_list_idx on lti_score_deliveries (tenant_id, created_at);
alter table lti_score_deliveries enable row level security;

-- The line item a placement's scores go to when its launches named none (`lineitem`): found by
-- resourceId in its `lineitems` container, or created there (AGS 2.0 §3.2).
create table lti_score_lineitems (
  tenant_id     uuid not null,
  link          uuid not null,
  lineitem_url  text not null check (lineitem_url ~ '^https?://' and length(lineitem_url) <= 2048),
  created       boolean not null,                      -- made by the tool (else found)
  created_at    timestamptz not null default now(),
  primary key (tenant_id, link),
  foreign key (tenant_id, link) references lti_resource_links (tenant_id, id) on delete cascade
);
alter table lti_score_lineitems enable row level security;

-- The outbox write: result `p_result` of `p_tenant` changed in this transaction.
create function svc.lti_score_outbox(p_tenant uuid, p_result uuid) returns void
  language plpgsql security definer set search_path = public, pg_temp as $$
declare
  r record;
  snap jsonb;
begin
  select tenant_id, id, activity_id, user_id, status, score into r
    from activity_results where tenant_id = p_tenant and id = p_result;
  if not found then return; end if;
  -- Cheap exit for everything that is not an LTI placement's learner.
  if not exists (select 1 from lti_resource_links l
                  where l.tenant_id = r.tenant_id and l.activity_id = r.activity_id
                    and (l.lineitem_url is not null or l.lineitems_url is not null)) then
    return;
  end if;
  select jsonb_build_object(
           'result_status', r.status,
           'result_score', r.score::float8,
           'artifact', (select jsonb_build_object(
                                 'id', a.id,
                                 'status', a.verification->>'status',
                                 'reason', a.verification->>'reason',
                                 'review', a.verification->>'review',
                                 'score', (a.verification->>'score')::float8,
                                 'feedback', left(a.verification->>'feedback', 4000))
                          from artifacts a where a.tenant_id = r.tenant_id and a.result_id = r.id
                         order by a.created_at desc, a.id desc limit 1))
    into snap;
  insert into lti_score_deliveries (tenant_id, link, user_id, result_id, xact, subject, snapshot)
  select l.tenant_id, l.id, r.user_id, r.id, pg_current_xact_id()::text, i.provider_id, snap
    from lti_resource_links l
    join lti_context_members m on m.tenant_id = l.tenant_id and m.context = l.context and m.user_id = r.user_id
    join lti_platforms p on p.tenant_id = l.tenant_id and p.id = l.platform_id
    join users u on u.id = r.user_id
    join auth.identities i on i.user_id = u.auth_user_id and i.provider = 'lti:' || l.tenant_id || ':' || p.issuer
   where l.tenant_id = r.tenant_id and l.activity_id = r.activity_id
     and (l.lineitem_url is not null or l.lineitems_url is not null)
     and snap is distinct from (select d.snapshot from lti_score_deliveries d
                                 where d.tenant_id = l.tenant_id and d.link = l.id and d.user_id = r.user_id
                                 order by d.id desc limit 1)
  on conflict (tenant_id, link, user_id, xact) do nothing;
  if found then perform pg_notify('svc_lti_scores', p_tenant::text); end if;
end $$;

create function svc.lti_score_artifact_changed() returns trigger
  language plpgsql security definer set search_path = public, pg_temp as $$
begin
  perform svc.lti_score_outbox(new.tenant_id, new.result_id);
  return null;
end $$;

create function svc.lti_score_result_changed() returns trigger
  language plpgsql security definer set search_path = public, pg_temp as $$
begin
  perform svc.lti_score_outbox(new.tenant_id, new.id);
  return null;
end $$;

create constraint trigger artifacts_lti_score after insert or update of verification on artifacts
  deferrable initially deferred for each row execute function svc.lti_score_artifact_changed();
create constraint trigger activity_results_lti_score after update of status, score on activity_results
  deferrable initially deferred for each row execute function svc.lti_score_result_changed();
