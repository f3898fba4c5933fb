-- 0140 (issue #21): a tenant's settings for its judge — the calibration gate's thresholds and
-- borderline consistency. One row per tenant that changed a default; no row = the defaults.
--
-- Thresholds (`svc judge thresholds set <tenant> …`): an activity with calibration examples
-- grades learners live only while its latest non-stale calibration report has
-- cohen_kappa ≥ min_kappa, false_pass_rate ≤ max_false_pass_rate and, when
-- require_adversarial_fail, every adversarial example failed.
--
-- Borderline consistency (`svc judge consistency set <tenant> --margin M --repeats N`, opt-in):
-- a verdict whose score lies within consistency_margin points of the activity's pass mark is
-- graded up to consistency_repeats runs in all, and the majority decides. null margin = off.
--
-- Only the service reads and writes it (the CLI, the judge); authors see the thresholds through
-- get_calibration_report, which the service answers.

create table judge_settings (
  tenant_id                 uuid primary key references tenants on delete cascade,
  min_kappa                 numeric not null default 0.6 check (min_kappa between -1 and 1),
  max_false_pass_rate       numeric not null default 0.10 check (max_false_pass_rate between 0 and 1),
  require_adversarial_fail  boolean not null default true,
  consistency_margin        numeric check (consistency_margin is null or consistency_margin between 0 and 100),
  consistency_repeats       integer not null default 3 check (consistency_repeats between 2 and 3),
  updated_at                timestamptz not null default now()
);
alter table judge_settings enable row level security;
