-- 0161 (issue #23): per-tenant retention windows.
--
-- A tenant without a row keeps the defaults: model-ledger request bodies 90 days, artifact content
-- forever, tombstones 30 days. A row's null means "forever". Read and written by the owner only
-- (`svc retention`, the retention sweep src/admin/retention.ts): RLS on, no policy, no grant.
create table retention_settings (
  tenant_id              uuid not null references tenants on delete cascade,
  artifact_content_days  integer check (artifact_content_days > 0),
  model_bodies_days      integer check (model_bodies_days > 0),
  tombstones_days        integer check (tombstones_days > 0),
  updated_at             timestamptz not null default clock_timestamp(),
  primary key (tenant_id)
);
alter table retention_settings enable row level security;

-- The sweep's scans: bodies and tombstones by age within a tenant; the ledger rows that still
-- reference a body (the sweep's and erasure's `not exists`, and the foreign-key check of every
-- deleted body: model_calls had no index leading with (tenant_id, request_sha256)); artifacts
-- whose content is still there, by age.
create index model_calls_request_idx on model_calls (tenant_id, request_sha256) where request_sha256 is not null;
create index artifacts_content_age_idx on artifacts (tenant_id, created_at) where content is not null;
create index model_requests_age_idx on model_requests (tenant_id, created_at);
