-- 0040 embed (issue #6): authorship granted to identity-provider users, and the index the
-- grading queue's backlog sweep reads.
--
-- embed_author_grants: an admin grants authorship in a tenant to an IdP subject (issuer +
-- subject) or to an email address, possibly before that person ever signed in. The embed
-- session applies the grants of its tenant at every sign-in (src/embed/author-grants.ts): a
-- subject grant matches the token's (iss, sub); an email grant matches the token's `email` when
-- the IdP marks it `email_verified`. Only the database owner (admin operations, the embed
-- surface) reads or writes it: RLS on, no policies, no grants to the request roles.
create table embed_author_grants (
  tenant_id   uuid not null references tenants on delete cascade,
  id          uuid primary key default svc.uuid_v7(),
  issuer      text,
  subject     text,
  email       text check (email = lower(btrim(email))),
  created_at  timestamptz not null default now(),
  check ((issuer is not null and subject is not null and email is null) or (issuer is null and subject is null and email is not null))
);
create unique index embed_author_grants_subject_key on embed_author_grants (tenant_id, issuer, subject) where subject is not null;
create unique index embed_author_grants_email_key on embed_author_grants (tenant_id, email) where email is not null;
alter table embed_author_grants enable row level security;

-- Artifacts still waiting for a verdict (src/embed/queue.ts re-enqueues those without a job).
create index artifacts_pending_idx on artifacts (tenant_id, created_at) where (verification ->> 'status') = 'pending';
