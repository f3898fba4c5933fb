/**
 * Query-string and path-parameter validation of the Results API (zod).
 *
 * The raw query string is read with URLSearchParams rather than Fastify's parsed object, so a
 * repeated parameter (`?limit=1&limit=2`) is caught instead of being merged into an array or
 * silently resolved to one value. Each endpoint accepts a closed set of parameters:
 *
 *   all lists          limit (1–200, default 50), cursor
 *   activity-results   activity_id, user_id (uuids), status (completed | in_progress | failed)
 *   progress           user_id, program_id (uuids)
 *   artifacts          activity_id, user_id (uuids)
 *   single objects     none
 *
 * Anything else — an unknown or repeated parameter, an empty value, a uuid that is not
 * 8-4-4-4-12 hex, a limit that is not a plain integer in range — throws `invalid_request`
 * whose message starts with the parameter's name. Uuids are lower-cased.
 */
import type { FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { Endpoint } from './cursor.ts';
import { invalidParam } from './errors.ts';

/** Rows per page when `limit` is not given, and the largest `limit` accepted. */
export const DEFAULT_LIMIT = 50;
export const MAX_LIMIT = 200;

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const uuid = z
  .string()
  .regex(UUID_RE, 'must be a uuid (8-4-4-4-12 hexadecimal digits)')
  .transform((s) => s.toLowerCase());
const limit = z
  .string()
  .regex(/^[1-9][0-9]{0,2}$/, `must be an integer from 1 to ${MAX_LIMIT}`)
  .transform(Number)
  .refine((n) => n <= MAX_LIMIT, `must be an integer from 1 to ${MAX_LIMIT}`);
const cursor = z.string().min(1, 'must not be empty');
const status = z.enum(['completed', 'in_progress', 'failed'], 'must be one of completed, in_progress, failed');

/** The filters each list endpoint accepts (besides limit and cursor). */
const FILTERS = {
  'activity-results': { activity_id: uuid, user_id: uuid, status },
  progress: { user_id: uuid, program_id: uuid },
  artifacts: { activity_id: uuid, user_id: uuid },
} satisfies Record<Endpoint, Record<string, z.ZodType<string, string>>>;

/** The filters of endpoint `E` that are set, by name (uuids lower-cased). */
export type Filters<E extends Endpoint> = { [K in keyof (typeof FILTERS)[E]]?: string };

/** A validated list request: `limit` rows per page, the raw `cursor` if any, the filters set. */
export interface ListParams<E extends Endpoint> {
  limit: number;
  cursor?: string;
  filters: Filters<E>;
}

function listSchema(endpoint: Endpoint) {
  const filters = Object.fromEntries(Object.entries(FILTERS[endpoint]).map(([name, schema]) => [name, schema.optional()]));
  return z.strictObject({ limit: limit.optional(), cursor: cursor.optional(), ...filters });
}

const LIST_SCHEMAS = {
  'activity-results': listSchema('activity-results'),
  progress: listSchema('progress'),
  artifacts: listSchema('artifacts'),
} as const;
const NO_PARAMS = z.strictObject({});

/** The query string's parameters as a plain object; throws on a repeated parameter. */
function rawQuery(req: FastifyRequest): Record<string, string> {
  const url = req.raw.url ?? req.url;
  const at = url.indexOf('?');
  const out: Record<string, string> = Object.create(null);
  if (at === -1) return out;
  for (const [name, value] of new URLSearchParams(url.slice(at + 1))) {
    if (Object.hasOwn(out, name)) throw invalidParam(name, 'is given more than once');
    out[name] = value;
  }
  return out;
}

function parseWith<T>(schema: z.ZodType<T>, input: Record<string, string>, accepted: string[]): T {
  const parsed = schema.safeParse(input);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  if (issue.code === 'unrecognized_keys') {
    const list = accepted.length ? `accepted: ${accepted.join(', ')}` : 'this endpoint takes no query parameters';
    throw invalidParam(issue.keys[0]!, `unknown query parameter (${list})`);
  }
  throw invalidParam(String(issue.path[0] ?? 'query'), issue.message);
}

/** Validate the query of a list endpoint. Throws `invalid_request` naming the parameter. */
export function parseListQuery<E extends Endpoint>(req: FastifyRequest, endpoint: E): ListParams<E> {
  const accepted = ['limit', 'cursor', ...Object.keys(FILTERS[endpoint])];
  const { limit: n, cursor: c, ...filters } = parseWith(LIST_SCHEMAS[endpoint], rawQuery(req), accepted) as {
    limit?: number;
    cursor?: string;
  } & Record<string, string | undefined>;
  return { limit: n ?? DEFAULT_LIMIT, cursor: c, filters: filters as Filters<E> };
}

/** Validate a single-object request: the path `id` must be a uuid, and no query parameters. */
export function parseIdParams(req: FastifyRequest): string {
  parseWith(NO_PARAMS, rawQuery(req), []);
  const parsed = uuid.safeParse((req.params as { id?: unknown }).id);
  if (!parsed.success) throw invalidParam('id', parsed.error.issues[0]!.message);
  return parsed.data;
}
