/**
 * Learner reads of the embed surface (issue #13), for the player and for partner players:
 *
 *   GET /v1/embed/activities/{id}   the activity to work on: title, kind, spec (Markdown and
 *                                   sanitised HTML), rubric criteria with weights, pass threshold,
 *                                   its program / unit / lesson with titles, and the learner's
 *                                   result on it (with the attempt history)
 *   GET /v1/embed/results/{id}      one result of the learner: status, best score, and each
 *                                   attempt's verdict (grading/verdict-view.ts) — poll it while pending
 *   GET /v1/embed/progress          the learner's progress per program (`?program_id=` for one,
 *                                   also before any activity of it is passed)
 *
 *   Authorization: Bearer <session access_token> (from POST /v1/embed/session)
 *
 * 1. Authenticate: a session token of this service (`trySessionToken`), else 401.
 * 2. Query as the learner (`asUser`: the token's claims, role `authenticated`): RLS decides —
 *    content of the tenants the learner is a member of (the session's tenant only, for an embed
 *    session), and only their own results, artifacts and progress (migration 0090). Another
 *    tenant's or another learner's id is therefore simply not there: 404 `not_found`, never 403.
 *    (Authors also read their tenants' results under RLS, for overrides — migration 0142 — so the
 *    queries name the learner as well.) A result shows the learner's appeal (appeal.ts).
 *    With DATABASE_READ_URL these reads run on the read replica (`asLearner`).
 * 3. Archived content (migration 0110: the record or one above it is archived) is not there
 *    either — hidden from members by RLS, and filtered here too, so an author trying the player
 *    sees what learners see: the activity 404, the program left out of progress, its archived
 *    activities left out of `total_count`. The learner's own results stay readable
 *    (`GET /results/{id}`): a verdict still pending when the content was archived arrives.
 */
import { z } from 'zod';
import { asUser, type Queryable } from '../db/index.ts';
import { fromReplica } from '../db/replica.ts';
import type { Deps } from '../deps.ts';
import { rubricCriteria } from './grading/prompt.ts';
import { ApiError } from '../http/api-errors.ts';
import { notFound, unauthorized } from './errors.ts';
import { trySessionToken } from './learner.ts';
import { markdownToSafeHtml } from './markdown.ts';
import { attemptOf, attemptView } from './grading/verdict-view.ts';
import { appealOf, appealView } from './appeal.ts';
import { ARTIFACT_KINDS } from '../lib/artifact-kinds.ts';

/** Attempts listed with a result, newest first. */
export const MAX_ATTEMPTS = 20;

const titled = z.object({ id: z.uuid(), title: z.string() });

export const resultView = z.object({
  id: z.uuid().describe("The learner's ActivityResult."),
  activity_id: z.uuid(),
  status: z.enum(['completed', 'in_progress', 'failed']).describe('completed from the first pass on; failed when graded and never passed.'),
  score: z.number().nullable().describe('The best graded score, 0–100, or null.'),
  completed_at: z.string().nullable().describe('RFC 3339, the first pass.'),
  attempts: z.array(attemptView).describe(`The submissions, newest first (at most ${MAX_ATTEMPTS}).`),
  appeal: appealView.nullable().describe("The learner's latest request for a review of this result (POST …/appeal), or null."),
});
export type ResultView = z.infer<typeof resultView>;

export const activityView = z.object({
  id: z.uuid(),
  title: z.string(),
  kind: z.enum(ARTIFACT_KINDS).describe('The kind of artifact the activity expects.'),
  spec: z.string().describe('What to do, in Markdown.'),
  spec_html: z.string().describe('The spec rendered to sanitised HTML.'),
  rubric: z.array(z.object({ id: z.string(), criterion: z.string(), weight: z.number() })).describe('The criteria the work is graded on.'),
  pass_threshold: z.number().describe('The score (0–100) a submission needs to pass.'),
  program: titled,
  unit: titled,
  lesson: titled,
  result: resultView.nullable().describe("The learner's result on this activity, or null before the first submission."),
});

export const progressView = z.object({
  data: z.array(
    z.object({
      program_id: z.uuid(),
      program_title: z.string(),
      completed_count: z.number().int(),
      total_count: z.number().int().describe('Activities of the program now, archived ones left out.'),
      percent: z.number().int().describe('floor(completed / total × 100), 0 when total is 0, at most 100.'),
      last_activity_at: z.string().nullable(),
    }),
  ),
});

export const idParams = z.object({ id: z.uuid('must be a uuid') });
export const progressQuery = z.object({ program_id: z.uuid('must be a uuid').optional() }).strict();

/**
 * Run `fn` as the learner of session token `token`; 401 when it is not a valid session token. The
 * session is checked on the primary (a logout holds at once); `fn` reads on the read replica when
 * there is one, and on the primary when the replica does not have the record yet (404: a result
 * just submitted) or cannot serve (src/db/replica.ts).
 */
async function asLearner<T>(deps: Deps, token: string | undefined, fn: (tx: Queryable) => Promise<T>): Promise<T> {
  const session = token === undefined ? undefined : await trySessionToken(deps, token);
  if (!session) throw unauthorized(token === undefined ? 'no bearer token' : 'not a session token of this service');
  return fromReplica(deps, (db) => asUser(db, session.claims, fn), { error: (err) => err instanceof ApiError && err.code === 'not_found' });
}

interface ResultRow {
  id: string;
  activity_id: string;
  status: 'completed' | 'in_progress' | 'failed';
  score: string | null;
  completed_at: string | null;
}

const RESULT_COLUMNS = `r.id, r.activity_id, r.status, r.score::text as score, to_json(r.completed_at) #>> '{}' as completed_at`;

/** The result `row` with its attempts (visible to the learner under RLS). */
async function withAttempts(tx: Queryable, row: ResultRow): Promise<ResultView> {
  const attempts = await tx.query<{ id: string; created_at: string; verification: Record<string, unknown> | null }>(
    `select a.id, to_json(a.created_at) #>> '{}' as created_at, a.verification
       from artifacts a where a.tenant_id = (select tenant_id from activity_results where id = $1) and a.result_id = $1
      order by a.created_at desc, a.id desc limit ${MAX_ATTEMPTS}`,
    [row.id],
  );
  return {
    id: row.id,
    activity_id: row.activity_id,
    status: row.status,
    score: row.score === null ? null : Number(row.score),
    completed_at: row.completed_at,
    attempts: attempts.map((a) => attemptOf(a.id, a.created_at, a.verification)),
    appeal: await appealOf(tx, row.id),
  };
}

/**
 * Activity `id` as the player shows it, without the learner's result: the unarchived activity
 * with its spec as safe HTML, its rubric criteria, and its program, unit and lesson; undefined
 * when there is none (or it is archived). `tenantId` narrows it to one tenant (the LTI preview,
 * which reads outside RLS); null under RLS, which already narrows it to the caller's tenants.
 */
export async function playerActivity(q: Queryable, id: string, tenantId: string | null): Promise<Omit<z.infer<typeof activityView>, 'result'> | undefined> {
  const [a] = await q.query<{
    id: string;
    title: string;
    kind: 'diagram' | 'document' | 'site' | 'repo';
    spec: string;
    rubric: unknown;
    pass_threshold: string;
    program_id: string;
    program_title: string;
    unit_id: string;
    unit_title: string;
    lesson_id: string;
    lesson_title: string;
  }>(
    `select a.id, a.title, a.kind, a.spec, a.rubric, a.pass_threshold::text as pass_threshold,
            p.id as program_id, p.title as program_title, u.id as unit_id, u.title as unit_title, l.id as lesson_id, l.title as lesson_title
       from activities a
       join lessons l on l.id = a.lesson_id
       join units u on u.id = l.unit_id
       join programs p on p.id = a.program_id
      where a.id = $1 and a.tenant_id = coalesce($2::uuid, a.tenant_id) and not a.archived`,
    [id, tenantId],
  );
  if (!a) return undefined;
  return {
    id: a.id,
    title: a.title,
    kind: a.kind,
    spec: a.spec,
    spec_html: markdownToSafeHtml(a.spec),
    rubric: rubricCriteria(a.rubric),
    pass_threshold: Number(a.pass_threshold),
    program: { id: a.program_id, title: a.program_title },
    unit: { id: a.unit_id, title: a.unit_title },
    lesson: { id: a.lesson_id, title: a.lesson_title },
  };
}

/** `GET /activities/{id}`; 404 when the learner cannot see it. */
export function readActivity(deps: Deps, token: string | undefined, id: string): Promise<z.infer<typeof activityView>> {
  return asLearner(deps, token, async (tx) => {
    const a = await playerActivity(tx, id, null);
    if (!a) throw notFound(`activity ${id} not found`);
    const [result] = await tx.query<ResultRow>(
      `select ${RESULT_COLUMNS} from activity_results r where r.activity_id = $1 and r.user_id = public.current_itera_user_id()`,
      [id],
    );
    return { ...a, result: result ? await withAttempts(tx, result) : null };
  });
}

/** `GET /results/{id}`; 404 when it is not one of the learner's results. */
export function readResult(deps: Deps, token: string | undefined, id: string): Promise<ResultView> {
  return asLearner(deps, token, async (tx) => {
    // The learner named too: RLS also lets an author read their tenants' results (migration 0142).
    const [row] = await tx.query<ResultRow>(`select ${RESULT_COLUMNS} from activity_results r where r.id = $1 and r.user_id = public.current_itera_user_id()`, [
      id,
    ]);
    if (!row) throw notFound(`result ${id} not found`);
    return withAttempts(tx, row);
  });
}

/** `GET /progress[?program_id=]`; 404 when `programId` names a program the learner cannot see. */
export function readProgress(deps: Deps, token: string | undefined, programId?: string): Promise<z.infer<typeof progressView>> {
  return asLearner(deps, token, async (tx) => {
    const rows = await tx.query<{
      program_id: string;
      program_title: string;
      completed_count: number;
      total_count: number;
      last_activity_at: string | null;
    }>(
      `select p.id as program_id, p.title as program_title, coalesce(g.completed_count, 0) as completed_count,
              (select count(*)::int from activities a where a.tenant_id = p.tenant_id and a.program_id = p.id and not a.archived) as total_count,
              to_json(g.last_activity_at) #>> '{}' as last_activity_at
         from programs p
         left join progress g on g.tenant_id = p.tenant_id and g.program_id = p.id and g.user_id = public.current_itera_user_id()
        where p.tenant_id is not null and not p.archived and (case when $1::uuid is null then g.id is not null else p.id = $1::uuid end)
        order by p.title, p.id`,
      [programId ?? null],
    );
    if (programId !== undefined && rows.length === 0) throw notFound(`program ${programId} not found`);
    return {
      data: rows.map((r) => ({
        ...r,
        percent: r.total_count === 0 ? 0 : Math.min(100, Math.floor((r.completed_count * 100) / r.total_count)),
      })),
    };
  });
}
