-- 0002 results: keyset indexes for the Results API filters that 0001 does not cover.
-- Each leads with tenant_id and ends with (created_at, id), so a filtered page deep in a large
-- tenant costs what its first page costs (DESIGN §7): the scan starts at the cursor position
-- and reads limit + 1 rows, instead of walking the tenant's rows and discarding non-matches.
--   GET /v1/activity-results?user_id=…   ?status=…
--   GET /v1/progress?user_id=…           ?program_id=…
-- (activity_id on results/artifacts and user_id on artifacts are served by 0001's indexes.)

create index activity_results_user_page_idx on activity_results (tenant_id, user_id, created_at, id);
create index activity_results_status_page_idx on activity_results (tenant_id, status, created_at, id);
create index progress_user_page_idx on progress (tenant_id, user_id, created_at, id);
create index progress_program_page_idx on progress (tenant_id, program_id, created_at, id);
