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

------------------------------------------------------------------------------------------
-- 4. /v1/learners lists a learner's LTI identities too: {issuer, subject, source: 'lti'} — the
--    platform issuer and the launch's `sub` — after the tenant's IdP ones (as in 0100). An LTI
--    identity is auth.identities(provider = 'lti:<tenant id>:<issuer>', provider_id = sub,
--    identity_data.iss = issuer), src/lti/learners.ts. The email rule is unchanged (an LMS email
--    is not taken as verified).
------------------------------------------------------------------------------------------
create or replace function svc.results_learner_json(p_user uuid, p_created timestamptz, p_updated timestamptz) returns json
  language sql stable security definer set search_path = public, pg_temp as $$
  with ids as (
    select i.provider_id as subject, i.identity_data
      from users u join auth.identities i on i.user_id = u.auth_user_id
     where u.id = p_user and i.provider = 'idp:' || svc.results_tenant_issuer()
     order by i.provider_id),
  lti as (
    select i.identity_data ->> 'iss' as issuer, i.provider_id as subject
      from users u join auth.identities i on i.user_id = u.auth_user_id
     where u.id = p_user and i.provider like 'lti:' || svc.results_tenant_id()::text || ':%'
     order by 1, 2)
  select json_build_object(
    'svc_user_id', p_user,
    'external_ids', coalesce((select json_agg(e) from (
        select json_build_object('issuer', svc.results_tenant_issuer(), 'subject', ids.subject) as e from ids
        union all
        select json_build_object('issuer', lti.issuer, 'subject', lti.subject, 'source', 'lti') from lti) x), '[]'::json),
    'email', coalesce(
      (select ids.identity_data ->> 'email' from ids where ids.identity_data -> 'email_verified' = 'true'::jsonb limit 1),
      (select a.email from users u join auth.users a on a.id = u.auth_user_id where u.id = p_user and a.email_confirmed_at is not null)),
    'created_at', to_char(p_created at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
    'updated_at', to_char(p_updated at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'))
  where exists (select 1 from memberships m where m.tenant_id = svc.results_tenant_id() and m.user_id = p_user)
$$;
