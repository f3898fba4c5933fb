-- 0165: the LMS hosts that frame a registration's launches, when they are not its issuer's or
-- authorization URL's origin. Every Canvas Cloud instance shares one issuer
-- (https://canvas.instructure.com) and one authorization host (sso.canvaslms.com), but its course
-- pages — which frame the tool's login — are on the institution's own host
-- (https://school.instructure.com, or a vanity domain such as https://canvas.school.edu); the same
-- for Blackboard's shared issuer. The login's pages are shown before any id_token is verified,
-- so the hosts that may frame them must be known ahead: the `*.instructure.com` and
-- `*.blackboard.com` families of those shared issuers (src/lti/framing.ts), plus these entries
-- (`svc lti platforms add --frame-origin <origin>`). Entries are origins or wildcards, as
-- `embed_origins` (src/embed/origins.ts normalizeOrigin).
alter table lti_platforms
  add column frame_origins text[] not null default '{}'
    check (cardinality(frame_origins) <= 20 and array_position(frame_origins, null) is null);
