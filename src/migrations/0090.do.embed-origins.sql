-- 0090 (issue #13): the embeddable player.
--
-- 1. embed_origins: the partner origins allowed to frame a tenant's player
--    (`svc embed origins add|remove|list`). An exact origin (`https://learn.example.com`,
--    `http://127.0.0.1:5173`) or one wildcard level of subdomains (`https://*.example.com`).
--    They become the player page's `Content-Security-Policy: frame-ancestors`; none → 'none'.
-- 2. Learner reads (/v1/embed/{activities,results,progress}) run as the learner
--    (role `authenticated`, the session's claims): a learner reads their own results,
--    artifacts and progress in the tenants current_member_tenant_ids() gives (the session's
--    tenant only, for an embed session — migration 0060).

create table embed_origins (
  tenant_id   uuid not null references tenants on delete cascade,
  origin      text not null check (origin ~ '^https?://(\*\.)?[a-z0-9.-]+(:[0-9]{1,5})?$' or origin ~ '^https?://\[[0-9a-f:.]+\](:[0-9]{1,5})?$'),
  created_at  timestamptz not null default now(),
  primary key (tenant_id, origin)
);
alter table embed_origins enable row level security;

grant select on activity_results, artifacts, progress to authenticated;
create policy activity_results_learner_read on activity_results for select to authenticated
  using (user_id = public.current_itera_user_id() and tenant_id in (select public.current_member_tenant_ids()));
create policy artifacts_learner_read on artifacts for select to authenticated
  using (user_id = public.current_itera_user_id() and tenant_id in (select public.current_member_tenant_ids()));
create policy progress_learner_read on progress for select to authenticated
  using (user_id = public.current_itera_user_id() and tenant_id in (select public.current_member_tenant_ids()));
