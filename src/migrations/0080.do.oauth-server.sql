-- 0080 (issue #12): the OAuth 2.1 authorization server MCP hosts connect through
-- (src/identity/oauth/). Only the database owner reads or writes these tables (no grants to
-- `authenticated`): the identity platform runs as the owner, never as a caller.
--
-- Clients are of two kinds: `registered` (RFC 7591 dynamic registration; client_id a UUID) and
-- `metadata_document` (a Client ID Metadata Document: client_id is the https URL of the document;
-- the row is the cache of its last fetch, fresh until `expires_at`). A revoked client keeps its
-- row (`revoked_at`) so that a metadata document URL stays refused.
create table auth.oauth_clients (
  client_id      text primary key check (length(client_id) between 1 and 2048),
  kind           text not null check (kind in ('registered', 'metadata_document')),
  client_name    text check (length(client_name) <= 200),
  client_uri     text check (length(client_uri) <= 2048),
  logo_uri       text check (length(logo_uri) <= 2048),
  redirect_uris  text[] not null check (cardinality(redirect_uris) between 1 and 10),
  expires_at     timestamptz,
  revoked_at     timestamptz,
  created_at     timestamptz not null default now(),
  updated_at     timestamptz not null default now()
);

-- One authorization request: created by GET /oauth/authorize, bound to the user who signs in,
-- approved or denied once. The page forms carry a token whose sha256 is `csrf_hash` (a new one
-- per step). On approval `code_hash` holds the sha256 of the authorization code (never the code);
-- `code_used_at` is set by the one redemption that wins; `session_id` is the session it started,
-- ended again if the code is replayed (RFC 6749 §4.1.2).
create table auth.oauth_authorizations (
  id                uuid primary key default gen_random_uuid(),
  client_id         text not null references auth.oauth_clients on delete cascade,
  redirect_uri      text not null,
  scope             text not null,
  state             text,
  resource          text not null,
  code_challenge    text not null check (code_challenge ~ '^[A-Za-z0-9_-]{43}$'),
  user_id           uuid references auth.users on delete cascade,
  status            text not null default 'pending' check (status in ('pending', 'approved', 'denied')),
  csrf_hash         text not null,
  code_hash         text unique,
  code_expires_at   timestamptz,
  code_used_at      timestamptz,
  session_id        uuid references auth.sessions on delete set null,
  expires_at        timestamptz not null,
  created_at        timestamptz not null default now()
);
create index oauth_authorizations_expiry_idx on auth.oauth_authorizations (expires_at);
create index oauth_authorizations_user_idx on auth.oauth_authorizations (user_id, client_id);

-- What a user allowed a client (GoTrue's oauth_consents): a later request whose scopes it covers
-- is approved without asking again. Deleting it (DELETE /user/oauth/grants) ends the client's
-- sessions of that user.
create table auth.oauth_consents (
  user_id     uuid not null references auth.users on delete cascade,
  client_id   text not null references auth.oauth_clients on delete cascade,
  scopes      text[] not null,
  granted_at  timestamptz not null default now(),
  primary key (user_id, client_id)
);
create index oauth_consents_client_idx on auth.oauth_consents (client_id);

-- A session started by an OAuth client: its tokens carry `aud` = the /mcp resource, `client_id`
-- and `scope`; its refresh tokens are redeemed only by that client at /oauth/token.
alter table auth.sessions
  add column oauth_client_id text references auth.oauth_clients on delete cascade,
  add column oauth_scope text;
create index sessions_oauth_client_idx on auth.sessions (oauth_client_id, user_id) where oauth_client_id is not null;
