-- 0150 (issue #22): LTI 1.3 Advantage — the tool's signing keys, platform registrations per
-- tenant, their deployments, and the single-use values of a launch (state, nonce). See
-- src/lti/README.md for the design.
--
-- Who sees what. Everything here is read and written by the service itself (the LTI routes and
-- the `svc lti …` admin operations run as the database owner, outside RLS, like the grading job);
-- RLS is enabled with no policy and nothing is granted to `authenticated` or `svc_results`, so a
-- signed-in user, an embed session or an API key reads none of it — least of all the tool's
-- private keys.

------------------------------------------------------------------------------------------
-- 1. The tool's RS256 signing keys (service-wide: one key set at /lti/v1/jwks for every
--    tenant, as an LMS administrator registers one tool). The current key has retired_at null
--    (at most one); `svc lti keys rotate` retires it and adds a new one. A retired key stays in
--    the published set until tokens signed with it have expired (src/lti/keys.ts).
------------------------------------------------------------------------------------------
create table lti_keys (
  kid            text primary key check (kid ~ '^[A-Za-z0-9_-]{8,64}$'),
  private_pkcs8  text not null,                 -- PEM; never leaves the server
  public_jwk     jsonb not null check (jsonb_typeof(public_jwk) = 'object'),
  created_at     timestamptz not null default now(),
  retired_at     timestamptz
);
create unique index lti_keys_one_current on lti_keys ((true)) where retired_at is null;
alter table lti_keys enable row level security;

------------------------------------------------------------------------------------------
-- 2. Platform registrations. A registration belongs to exactly one tenant and is found by
--    issuer + client id before the tenant is known (every Canvas Cloud instance shares one
--    issuer), so (issuer, client_id) is unique on its own: like api_keys, a reference table
--    (test/sql/tenant-keys.test.ts).
------------------------------------------------------------------------------------------
create table lti_platforms (
  tenant_id       uuid not null references tenants on delete cascade,
  id              uuid not null default svc.uuid_v7(),
  issuer          text not null check (issuer ~ '^https?://' and length(issuer) <= 2048),
  client_id       text not null check (length(client_id) between 1 and 255),
  auth_url        text not null check (auth_url ~ '^https?://' and length(auth_url) <= 2048),
  token_url       text not null check (token_url ~ '^https?://' and length(token_url) <= 2048),
  jwks_url        text not null check (jwks_url ~ '^https?://' and length(jwks_url) <= 2048),
  token_audience  text check (length(token_audience) <= 2048),
  created_at      timestamptz not null default now(),
  primary key (tenant_id, id),
  unique (issuer, client_id)
);
alter table lti_platforms enable row level security;

-- The deployment ids a registration accepts (`deployment_id` of a launch).
create table lti_deployments (
  tenant_id      uuid not null,
  platform_id    uuid not null,
  deployment_id  text not null check (length(deployment_id) between 1 and 255),
  created_at     timestamptz not null default now(),
  primary key (tenant_id, platform_id, deployment_id),
  foreign key (tenant_id, platform_id) references lti_platforms (tenant_id, id) on delete cascade
);
alter table lti_deployments enable row level security;

------------------------------------------------------------------------------------------
-- 3. Single-use values of a launch: a login's `state` and an id_token's `nonce` are each
--    accepted once (kind 'state' | 'nonce'); rows past expires_at are swept when new ones come.
------------------------------------------------------------------------------------------
create table lti_used_values (
  tenant_id   uuid not null references tenants on delete cascade,
  kind        text not null check (kind in ('state', 'nonce')),
  value       text not null check (length(value) between 1 and 255),
  expires_at  timestamptz not null,
  primary key (tenant_id, kind, value)
);
create index lti_used_values_expiry_idx on lti_used_values (tenant_id, expires_at);
alter table lti_used_values enable row level security;
