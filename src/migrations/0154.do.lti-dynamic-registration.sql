-- 0154 (issue #22): LTI Dynamic Registration 1.0 — the single-use registration codes that
-- `svc lti registration-url <tenant>` mints, and registrations that accept any deployment id.
-- See src/lti/registration/README.md.
--
-- Who sees what: as in 0150, only the service itself (database owner) reads and writes; RLS on,
-- no policy, nothing granted.

-- A code is found by its hash before its tenant is known (the platform opens
-- /lti/v1/register/<code>), so code_sha256 is unique on its own: a reference table like
-- lti_platforms (test/sql/tenant-keys.test.ts). Only the SHA-256 of the code is stored.
-- claimed_until: a registration in progress holds the code (one at a time); used_at: consumed
-- in the transaction that stored the registration (platform_id).
create table lti_registration_codes (
  tenant_id      uuid not null references tenants on delete cascade,
  id             uuid not null default svc.uuid_v7(),
  code_sha256    text not null unique check (code_sha256 ~ '^[0-9a-f]{64}$'),
  created_at     timestamptz not null default now(),
  expires_at     timestamptz not null,
  claimed_until  timestamptz,
  used_at        timestamptz,
  platform_id    uuid,
  primary key (tenant_id, id)
);
alter table lti_registration_codes enable row level security;

-- A registration made by dynamic registration whose platform named no deployment id (Canvas
-- creates deployments later, when the tool is installed in an account or course): launches with
-- any deployment id the platform signs are accepted for it (src/lti/platforms.ts hasDeployment).
alter table lti_platforms add column any_deployment boolean not null default false;
