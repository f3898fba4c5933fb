/**
 * The id and key patterns every surface checks input against: one home, so a rule changes in
 * one place (the database's own checks, src/migrations/0001.do.init.sql, are the source).
 *
 * - `UUID_RE`: 8-4-4-4-12 hexadecimal digits, either case (PostgreSQL's `uuid` input accepts
 *   both; it does not check version or variant bits, and neither do we).
 * - `CANONICAL_UUID_RE`: the same in lower case only — a uuid as PostgreSQL prints it (what
 *   answers carry).
 * - `SLUG_RE`: a tenant slug, 1–63 lower-case letters, digits and dashes, starting with a letter
 *   or digit (the `tenants.slug` check; a DNS label's length).
 * - `PG_TIMESTAMP_RE`: a timestamp as PostgreSQL prints `timestamptz` to text (space or `T`,
 *   up to microseconds, an offset or `Z`), as keyset cursors carry it.
 */
import { z } from 'zod';

export const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const CANONICAL_UUID_RE = new RegExp(UUID_RE.source);
export const SLUG_RE = /^[a-z0-9][a-z0-9-]{0,62}$/;
export const PG_TIMESTAMP_RE = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d{1,6})?([+-]\d{2}(:\d{2})?|Z)$/;

/** A tenant slug as a zod string; `message` is the surface's wording of the error. */
export const slugSchema = (message: string) => z.string().regex(SLUG_RE, message);
