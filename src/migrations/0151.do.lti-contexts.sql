-- 0151 (issue #22): what a launch tells the tool about where it was placed — the course (LTI
-- context), who is in it, and the resource links (placements) with their Assignment and Grade
-- Services endpoint. Written by every launch (src/lti/contexts.ts `recordLaunch`), by the Names
-- and Role Provisioning roster read (members of source 'nrps'), read by the score delivery (AGS),
-- the instructor's preview (the course's learners) and a learner's erasure (src/lti/learner-data.ts).
--
-- Who sees what: as in 0150, only the service itself (database owner) reads and writes these
-- tables; RLS on, no policy, nothing granted.

-- A course of a registration (`context.id` of a launch, LTI Core 1.3 §5.4.1), with the roster
-- URL of its NRPS claim when the platform sends one.
create table lti_contexts (
  tenant_id        uuid not null,
  id               uuid not null default svc.uuid_v7(),
  platform_id      uuid not null,
  context_id       text not null check (length(context_id) between 1 and 255),
  title            text check (length(title) <= 500),
  label            text check (length(label) <= 500),
  memberships_url  text check (memberships_url ~ '^https?://' and length(memberships_url) <= 2048),
  created_at       timestamptz not null default now(),
  updated_at       timestamptz not null default now(),
  primary key (tenant_id, id),
  unique (tenant_id, platform_id, context_id),
  foreign key (tenant_id, platform_id) references lti_platforms (tenant_id, id) on delete cascade
);
alter table lti_contexts enable row level security;

-- Who is in a course: the service user of an LTI identity, their roles there, and how we know
-- (a launch, or the NRPS roster). One row per (context, user).
create table lti_context_members (
  tenant_id   uuid not null,
  context     uuid not null,
  user_id     uuid not null references users on delete cascade,
  roles       text[] not null default '{}',
  source      text not null check (source in ('launch', 'nrps')),
  updated_at  timestamptz not null default now(),
  primary key (tenant_id, context, user_id),
  foreign key (tenant_id, context) references lti_contexts (tenant_id, id) on delete cascade
);
create index lti_context_members_user_idx on lti_context_members (tenant_id, user_id);
alter table lti_context_members enable row level security;

-- A placement: a resource link of a course that opens one of the tenant's activities, with the
-- AGS endpoint claim of its latest launch (`lineitem`, `lineitems`, `scope`; AGS 2.0 §3.1).
create table lti_resource_links (
  tenant_id         uuid not null,
  id                uuid not null default svc.uuid_v7(),
  platform_id       uuid not null,
  context           uuid,
  resource_link_id  text not null check (length(resource_link_id) between 1 and 255),
  activity_id       uuid not null references activities on delete cascade,
  lineitem_url      text check (lineitem_url ~ '^https?://' and length(lineitem_url) <= 2048),
  lineitems_url     text check (lineitems_url ~ '^https?://' and length(lineitems_url) <= 2048),
  ags_scopes        text[] not null default '{}',
  created_at        timestamptz not null default now(),
  updated_at        timestamptz not null default now(),
  primary key (tenant_id, id),
  unique (tenant_id, platform_id, resource_link_id),
  foreign key (tenant_id, platform_id) references lti_platforms (tenant_id, id) on delete cascade,
  foreign key (tenant_id, context) references lti_contexts (tenant_id, id) on delete cascade
);
create index lti_resource_links_activity_idx on lti_resource_links (tenant_id, activity_id);
alter table lti_resource_links enable row level security;
