/**
 * The Results API's request and response schemas (zod), the single source of three things:
 * validation of every query string and path id (params.ts), the OpenAPI 3.1 document
 * (openapi.ts, through fastify-type-provider-zod's transforms) and the tests' checks that real
 * answers match the document.
 *
 * Query strings are strict: each endpoint accepts a closed set of parameters, all strings on
 * the wire, normalised here (uuids lower-cased, `limit` to a number, `updated_since` to UTC with
 * six fractional digits). Response objects are built by PostgreSQL (queries.ts); the schemas
 * below describe exactly what it builds (DESIGN §6 plus `updated_at`).
 */
import { z } from 'zod';
import { CANONICAL_UUID_RE, UUID_RE } from '../lib/ids.ts';
import type { Endpoint } from './cursor.ts';
import { normalizeTimestamp } from './timestamps.ts';
import { ARTIFACT_KINDS } from '../lib/artifact-kinds.ts';

/** Rows per page when `limit` is not given, and the largest `limit` accepted. */
export const DEFAULT_LIMIT = 50;
export const MAX_LIMIT = 200;

/**
 * Metadata of the OpenAPI document: components (the response objects, by `id`) and the
 * description of every parameter and field. A registry of our own (not zod's global one), so
 * no other surface's schema ids can collide with ours.
 */
export const componentRegistry = z.registry<{ id?: string; description?: string; [jsonSchemaKeyword: string]: unknown }>();

/**
 * `schema` with its description in the document, and JSON Schema keywords that override what
 * zod derives (`format`, or `type: 'integer'` for a parameter that is text on the wire; an
 * `undefined` keyword is left out).
 */
export function doc<T extends z.ZodType>(schema: T, description: string, keywords: Record<string, unknown> = {}): T {
  componentRegistry.add(schema, { description, ...keywords });
  return schema;
}

const UUID_FORMAT = { format: 'uuid', pattern: undefined };
const DATE_TIME_FORMAT = { format: 'date-time', pattern: undefined };

const RFC3339_OUT_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;

// ---------------------------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------------------------

const uuidParam = (description: string) =>
  doc(
    z
      .string()
      .regex(UUID_RE, 'must be a uuid (8-4-4-4-12 hexadecimal digits)')
      .transform((s) => s.toLowerCase()),
    `${description} A uuid.`,
    UUID_FORMAT,
  );

const limit = doc(
  z
    .string()
    .regex(/^[1-9][0-9]{0,2}$/, `must be an integer from 1 to ${MAX_LIMIT}`)
    .transform(Number)
    .refine((n) => n <= MAX_LIMIT, `must be an integer from 1 to ${MAX_LIMIT}`),
  `Rows per page: a decimal integer from 1 to ${MAX_LIMIT} (default ${DEFAULT_LIMIT}).`,
  { type: 'integer', minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT, pattern: undefined },
);

const cursor = doc(
  z.string().min(1, 'must not be empty'),
  'The `next_cursor` of the previous page, unchanged. Bound to the endpoint, the filters and `updated_since`.',
);

const updatedSince = doc(
  z.string().transform((s, ctx) => {
    const normalized = normalizeTimestamp(s);
    if (normalized === undefined) {
      ctx.addIssue({
        code: 'custom',
        message: 'must be an RFC 3339 date-time with at most 6 fractional digits, e.g. 2026-01-31T12:00:00.000001Z',
      });
      return z.NEVER;
    }
    return normalized;
  }),
  'Incremental sync: only rows created or changed at or after this RFC 3339 instant (e.g. `2026-01-31T12:00:00.000001Z`), ' +
    'ordered by (`updated_at`, `id`). Resume a later sync with the largest `updated_at` you received (rows at that exact ' +
    'instant come again). Rows of transactions still writing are held back until they commit, so a tailing consumer never misses one.',
  { format: 'date-time' },
);

/** What a tombstone can stand for. */
export const DELETED_RESOURCES = ['activity_result', 'artifact', 'progress', 'learner', 'program', 'unit', 'lesson', 'activity'] as const;

const status = doc(z.enum(['completed', 'in_progress', 'failed'], 'must be one of completed, in_progress, failed'), 'Only results with this status.');

const text = (description: string, max = 255) => doc(z.string().min(1, 'must not be empty').max(max, `must be at most ${max} characters`), description);

/** The filters each list endpoint accepts (besides limit, cursor and updated_since). */
export const FILTERS = {
  'activity-results': {
    activity_id: uuidParam('Only results of this activity.'),
    user_id: uuidParam('Only results of this learner (svc_user_id).'),
    status,
  },
  progress: {
    user_id: uuidParam('Only progress of this learner (svc_user_id).'),
    program_id: uuidParam('Only progress in this program.'),
  },
  artifacts: {
    activity_id: uuidParam('Only artifacts submitted for this activity.'),
    user_id: uuidParam('Only artifacts of this learner (svc_user_id).'),
  },
  learners: {
    external_id: text('Only the learner with this subject (`sub`) at the tenant’s identity provider.'),
    issuer: text('Only learners with an identity at this issuer (the tenant’s identity provider).', 2000),
  },
  programs: {},
  deletions: {
    resource: doc(z.enum(DELETED_RESOURCES, `must be one of ${DELETED_RESOURCES.join(', ')}`), 'Only tombstones of this kind of record.'),
  },
  'audit-events': {
    action: doc(
      z
        .string()
        .regex(/^[a-z][a-z0-9_.]*$/, 'must be a dotted lower-case action name, e.g. author.grant')
        .max(64, 'must be at most 64 characters'),
      'Only events of this action (`author.grant`, `learner.erase`, …).',
    ),
    since: doc(
      z.string().transform((s, ctx) => {
        const normalized = normalizeTimestamp(s);
        if (normalized === undefined) {
          ctx.addIssue({ code: 'custom', message: 'must be an RFC 3339 date-time with at most 6 fractional digits, e.g. 2026-01-31T12:00:00Z' });
          return z.NEVER;
        }
        return normalized;
      }),
      'Only events at or after this RFC 3339 instant.',
      { format: 'date-time' },
    ),
  },
} satisfies Record<Endpoint, Record<string, z.ZodType<string, string>>>;

function listQuery<E extends Endpoint>(endpoint: E, feed: 'optional' | 'none') {
  const filters: Record<string, z.ZodOptional<z.ZodType<string, string>>> = Object.fromEntries(
    Object.entries(FILTERS[endpoint]).map(([name, schema]) => [name, (schema as z.ZodType<string, string>).optional()]),
  );
  const since = feed === 'none' ? {} : { updated_since: updatedSince.optional() };
  return z.strictObject({ limit: limit.optional(), cursor: cursor.optional(), ...since, ...filters });
}

/**
 * The query string of each list endpoint. Programs are a listing only (no `updated_since`);
 * deletions are always the feed (`updated_since` optional, from the beginning when absent).
 */
export const LIST_QUERY = {
  'activity-results': listQuery('activity-results', 'optional'),
  progress: listQuery('progress', 'optional'),
  artifacts: listQuery('artifacts', 'optional'),
  learners: listQuery('learners', 'optional'),
  programs: listQuery('programs', 'none'),
  deletions: listQuery('deletions', 'optional'),
  'audit-events': listQuery('audit-events', 'none'),
} as const;

/** A validated list query: limit, cursor and updated_since, plus the endpoint's filters. */
export interface ListQuery {
  limit?: number;
  cursor?: string;
  updated_since?: string;
  [filter: string]: string | number | undefined;
}

/** Single-object routes take no query parameters. */
export const NO_QUERY = z.strictObject({});

/** The path of a single-object route. */
export const ID_PARAMS = z.strictObject({ id: uuidParam('The object’s id.') });

/** `GET /v1/programs/{id}`: `include=spec` adds each activity's spec text to the outline. */
export const PROGRAM_QUERY = z.strictObject({
  include: doc(z.enum(['spec'], 'must be spec (the only optional part)'), 'Optional parts: `spec` adds each activity’s spec (markdown).').optional(),
});

// ---------------------------------------------------------------------------------------------
// Responses
// ---------------------------------------------------------------------------------------------

const uuid = (description = 'A uuid.') => doc(z.string().regex(CANONICAL_UUID_RE), description, UUID_FORMAT);
const nullableUuid = (description: string) => z.union([uuid(description), z.null()]);
const timestamp = (description = 'RFC 3339, UTC, with microseconds.') => doc(z.string().regex(RFC3339_OUT_RE), description, DATE_TIME_FORMAT);
const nullableTimestamp = (description: string) => z.union([timestamp(description), z.null()]);

export const ActivityResult = z.strictObject({
  id: uuid(),
  activity_id: uuid(),
  lesson_id: uuid(),
  svc_user_id: uuid('The learner.'),
  program_id: uuid('The program of the activity.'),
  unit_id: uuid('The unit of the activity’s lesson.'),
  status: z.enum(['completed', 'in_progress', 'failed']),
  score: doc(z.number().min(0).max(100).nullable(), 'Best score of all attempts, 0–100; null until graded.'),
  completed_at: nullableTimestamp('When the activity was first passed (RFC 3339, UTC, microseconds).'),
  created_at: timestamp(),
  updated_at: timestamp('Last change of the result: a verdict, a new attempt (RFC 3339, UTC, microseconds).'),
  artifact_ids: doc(z.array(uuid()), 'The result’s artifacts, oldest first.'),
});
componentRegistry.add(ActivityResult, { id: 'ActivityResult', description: 'A learner’s result on one activity.' });

export const Progress = z.strictObject({
  svc_user_id: uuid('The learner.'),
  program_id: uuid(),
  completed_count: doc(z.number().int().min(0), 'Activities of the program the learner has passed.'),
  total_count: doc(z.number().int().min(0), 'Activities the program has now, archived ones left out (as the learner’s own progress counts them).'),
  percent: doc(z.number().int().min(0).max(100), 'floor(completed_count × 100 / total_count); 0 when total_count is 0.'),
  last_activity_at: nullableTimestamp('Time of the learner’s last verdict in the program.'),
  updated_at: timestamp('Last change: a verdict, or activities added to or removed from the program.'),
});
componentRegistry.add(Progress, { id: 'Progress', description: 'A learner’s progress in one program.' });

export const Artifact = z.strictObject({
  id: uuid(),
  result_id: uuid(),
  kind: z.enum(ARTIFACT_KINDS),
  ref_url: z.string().nullable(),
  repo_url: z.string().nullable(),
  verification: doc(z.unknown(), 'The grader’s verdict as stored (JSON), or null.'),
  created_at: timestamp(),
  updated_at: timestamp('Last change: the verdict was stored.'),
});
componentRegistry.add(Artifact, { id: 'Artifact', description: 'A submitted piece of work and its verification.' });

export const Learner = z.strictObject({
  svc_user_id: uuid('The learner: every result, progress row and artifact names it.'),
  external_ids: doc(
    z.array(z.strictObject({ issuer: z.string(), subject: z.string(), source: z.literal('lti').optional() })),
    'The learner’s identities at the tenant’s identity provider (its issuer and the token’s `sub`), then the LMS users ' +
      'who launched the tenant’s activities by LTI (the platform’s issuer and the launch’s `sub`, with `source: "lti"`).',
  ),
  email: doc(z.string().nullable(), 'The email the identity provider gave as verified (or the account’s confirmed email), else null.'),
  created_at: timestamp('When the learner joined the tenant.'),
  updated_at: timestamp('Last change: membership or identity-provider profile.'),
});
componentRegistry.add(Learner, { id: 'Learner', description: 'A learner of the tenant and their identity-provider subjects.' });

const archivedAt = () =>
  nullableTimestamp(
    'When an author archived this record (RFC 3339, UTC, microseconds), else null. Archived content and everything under it is ' +
      'hidden from learners and takes no new submissions; its results stay here.',
  );

const contentFields = {
  id: uuid(),
  title: z.string(),
  position: doc(z.number().int().min(1), 'Order among its siblings, from 1.'),
  archived_at: archivedAt(),
};

export const OutlineActivity = z.strictObject({
  ...contentFields,
  kind: z.enum(ARTIFACT_KINDS),
  pass_threshold: doc(z.number().int().min(0).max(100), 'Score at or above which a submission passes.'),
  rubric: doc(z.array(z.strictObject({ criterion: z.string(), weight: z.number().optional() })), 'Grading criteria with weights.'),
  spec: doc(z.string().optional(), 'What the learner must produce (markdown); only with `include=spec`.'),
});
componentRegistry.add(OutlineActivity, { id: 'OutlineActivity', description: 'An activity in a program outline.' });

export const Program = z.strictObject({
  id: uuid(),
  title: z.string(),
  description: z.string().nullable(),
  archived_at: archivedAt(),
  created_at: timestamp(),
  updated_at: timestamp('Last change of the program’s own fields.'),
});
componentRegistry.add(Program, { id: 'Program', description: 'A program of the tenant.' });

export const ProgramOutline = z.strictObject({
  ...Program.shape,
  units: z.array(z.strictObject({ ...contentFields, lessons: z.array(z.strictObject({ ...contentFields, activities: z.array(OutlineActivity) })) })),
});
componentRegistry.add(ProgramOutline, { id: 'ProgramOutline', description: 'A program with its units → lessons → activities.' });

export const Deletion = z.strictObject({
  resource: z.enum(DELETED_RESOURCES),
  id: uuid('The deleted record’s id (a learner’s svc_user_id).'),
  svc_user_id: nullableUuid('The learner of a deleted result, artifact, progress row or learner.'),
  program_id: nullableUuid('The program of a deleted progress row or content record.'),
  deleted_at: timestamp('When it was deleted (RFC 3339, UTC, microseconds).'),
});
componentRegistry.add(Deletion, {
  id: 'Deletion',
  description: 'A tombstone: a record that was deleted. Progress rows are identified by (svc_user_id, program_id).',
});

export const AuditEvent = z.strictObject({
  id: uuid(),
  tenant_id: nullableUuid('The tenant (always the key’s).'),
  at: timestamp('When the act happened (RFC 3339, UTC, microseconds).'),
  actor: z.strictObject({
    kind: doc(
      z.enum(['user', 'cli', 'service_role', 'key', 'system']),
      'Who acted: a user (an author, an admin), the `svc` command, the service-role key, a tenant API key, or the service itself.',
    ),
    id: doc(z.string().nullable(), 'The svc_user_id of a user, the prefix of a key; null for the others.'),
  }),
  action: doc(z.string(), 'What was done: `author.grant`, `key.create`, `verdict.override`, `learner.erase`, …'),
  target: z.strictObject({
    type: doc(z.string(), 'What kind of thing was acted on: `user`, `tenant`, `api_key`, `activity_result`, …'),
    id: doc(z.string(), 'Its id (never an email).'),
  }),
  request_id: doc(z.string().nullable(), 'The X-Request-Id of the request that did it; null for the `svc` command.'),
  detail: doc(z.record(z.string(), z.unknown()), 'Settings and ids of the act (never personal data).'),
});
componentRegistry.add(AuditEvent, { id: 'AuditEvent', description: 'One privileged act in the tenant (the audit log, append-only).' });

const consistentThrough = nullableTimestamp(
  'With `updated_since` (and always on /v1/deletions): every change committed at or before this instant has been returned ' +
    'or comes at a later cursor (also in the `Svc-Consistent-Through` header). Start the next sync there. Null while a ' +
    'writer of the database hides its start.',
).optional();

const page = <T extends z.ZodType>(item: T) =>
  z.strictObject({
    data: z.array(item),
    next_cursor: doc(z.string().nullable(), 'Pass as `cursor` for the next page; null on the last page.'),
    has_more: doc(z.boolean(), 'True when another page follows.'),
    consistent_through: consistentThrough,
  });

export const LIST_RESPONSE = {
  'activity-results': page(ActivityResult),
  progress: page(Progress),
  artifacts: page(Artifact),
  learners: page(Learner),
  programs: page(Program),
  deletions: page(Deletion),
  'audit-events': page(AuditEvent),
} as const;

export const ErrorBody = z.strictObject({
  error: z.strictObject({
    code: z.enum(['invalid_request', 'unauthorized', 'not_found', 'method_not_allowed', 'rate_limited', 'internal_error', 'unavailable']),
    message: doc(z.string(), 'For people; names the parameter on invalid_request.'),
    request_id: doc(z.string(), 'The X-Request-Id of the request, for support.'),
  }),
});
componentRegistry.add(ErrorBody, { id: 'Error', description: 'The body of every error of /v1.' });

export const Health = z.strictObject({ status: z.literal('ok'), service: z.string(), version: z.string() });
