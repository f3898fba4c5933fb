-- 0166: the key of the audit log's keyed hashes. An author grant to an email address (or an IdP
-- subject) with no account yet names its target by a hash, never the address: a plain SHA-256
-- of a guessable school address can be reversed by anyone who reads the log (a tenant through
-- GET /v1/audit-events) by hashing candidates, and audit rows are never deleted. The hash is now
-- HMAC-SHA256 under this database's own random key (src/admin/audited.ts): the service can still
-- tell two acts on one address apart from acts on another; a reader without the key cannot test
-- guesses. One row, made here with 244 bits from the server's strong random source
-- (gen_random_uuid: pg_strong_random); read by the service (owner) only — RLS on, no policy,
-- nothing granted. Rows written before keep their `email_sha256` / `subject_sha256` targets.
create table audit_target_key (
  id         boolean primary key default true check (id),
  hmac_key   text not null check (length(hmac_key) = 64)
);
alter table audit_target_key enable row level security;
insert into audit_target_key (hmac_key) values (replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''));
