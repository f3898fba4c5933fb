-- Keyset indexes of the updated_since feed filtered by activity (issue #4).
--
-- A page statement runs a generic plan (src/results/queries.ts: plan_cache_mode =
-- force_generic_plan), so each shape needs a plan that holds whatever the tenant's size. Without
-- these, `updated_since` + `activity_id` read every result of the activity through its created-order
-- index and sorted them for each page (45,000 rows in the 1M-row benchmark). Filters by learner
-- (`user_id`) keep a sort of the learner's rows — one per activity, a bounded few — and `status`
-- and progress filters walk the sync index from `updated_since`. test/results/plans.test.ts checks
-- every shape's plan.
--
-- Numbering: postgrator applies only versions above a database's current one, so a new
-- migration always takes a number above the highest in this folder.
create index activity_results_activity_sync_idx on activity_results (tenant_id, activity_id, updated_at, id);
create index artifacts_activity_sync_idx on artifacts (tenant_id, activity_id, updated_at, id);
