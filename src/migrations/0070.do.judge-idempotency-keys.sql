-- 0070 (issue #11): Idempotency-Key on POST /v1/embed/judge. A client that lost its answer
-- retries with the same key: within 24 h the retry gets the first submission's answer and
-- creates nothing (src/embed/idempotency.ts). Keys are per learner and tenant; the request's
-- sha256 tells a true retry from a key reused for another body (422). Only the database owner
-- reads or writes it (RLS on, no policies, no grants).
create table judge_idempotency_keys (
  tenant_id       uuid not null references tenants on delete cascade,
  user_id         uuid not null references users on delete cascade,
  key             text not null check (length(key) between 1 and 255),
  request_sha256  text not null check (request_sha256 ~ '^[0-9a-f]{64}$'),
  result_id       uuid not null,
  artifact_id     uuid not null references artifacts on delete cascade,
  created_at      timestamptz not null default now(),
  primary key (tenant_id, user_id, key)
);
create index judge_idempotency_keys_age_idx on judge_idempotency_keys (tenant_id, created_at);
alter table judge_idempotency_keys enable row level security;
