-- 0010 identity admin: the admin user list (GET /auth/v1/admin/users, svc user list) is ordered
-- newest first by (created_at, id). This index serves both of its modes: page mode reads
-- offset + per_page rows in order instead of sorting the table, and keyset mode (?cursor=)
-- starts at the cursor position, so a late page costs what the first one costs.

create index users_created_at_id_idx on auth.users (created_at desc, id desc);
