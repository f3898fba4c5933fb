/**
 * An instructor's launch of a placed activity (issue #22 "Deep Linking 2.0": "An instructor's
 * launch of a placed activity shows it as learners see it, marked as a preview (nothing stored,
 * nothing sent to the gradebook), with the course's learners' latest results on it").
 *
 * The answer is the player page in its preview mode (`PlayerConfig.preview`, src/player): the
 * activity exactly as `GET /v1/embed/activities/{id}` gives it to a learner (same spec rendering,
 * rubric and threshold; `result` null), marked "Preview", submitting off — the page holds no
 * session, so it could not submit or read anything anyway — and the course's learners (the
 * launch context's `lti_context_members` with a Learner role, from launches and the NRPS roster)
 * with their latest result on the activity: status, best score, latest submission.
 *
 * What is stored: in one transaction, the launch's state and nonce used once (a replayed preview
 * launch is refused), and the course and placement (contexts.ts: the context with its roster URL,
 * the resource link with its AGS endpoint — what scores and the roster read need, no learner
 * data). The instructor is not made a user, a learner or a course member; no submission, no score.
 */
import type { FastifyReply } from 'fastify';
import type { Deps } from '../deps.ts';
import type { Queryable } from '../db/index.ts';
import { attemptOf, MAX_CONTENT_BYTES, playerActivity } from '../embed/index.ts';
import type { PlayerAssets, PlayerConfig, PreviewLearner } from '../player/index.ts';
import { recordContext, recordResourceLink } from './contexts.ts';
import { queueRosterRead } from './nrps.ts';
import { CLAIM, useLaunchOnce, type VerifiedLaunch } from './launch.ts';
import { ltiProvider } from './learners.ts';
import { STATE_SECONDS } from './login.ts';
import { sendPlayer } from './pages.ts';

/** Most learners listed on a preview (a course's roster; the rest are counted). */
export const MAX_PREVIEW_LEARNERS = 500;

/** A role of the LIS vocabulary (or its short form) that makes a course member a learner. */
const LEARNER_ROLE_SQL = `'^(http://purl\\.imsglobal\\.org/vocab/lis/v2/membership#)?Learner$'`;

interface LearnerRow {
  name: string | null;
  sub: string | null;
  status: 'completed' | 'in_progress' | 'failed' | null;
  score: string | null;
  artifact_id: string | null;
  submitted_at: string | null;
  verification: Record<string, unknown> | null;
  total: number;
}

/**
 * The learners of course `context` (row id) and their latest result on `activityId`, by name
 * (at most `MAX_PREVIEW_LEARNERS`) and how many more there are.
 */
export async function courseResults(
  q: Queryable,
  launch: Pick<VerifiedLaunch, 'platform'>,
  context: string,
  activityId: string,
): Promise<{ learners: PreviewLearner[]; more: number }> {
  const { platform } = launch;
  const rows = await q.query<LearnerRow>(
    `select coalesce(nullif(i.identity_data ->> 'name', ''), nullif(concat_ws(' ', i.identity_data ->> 'given_name', i.identity_data ->> 'family_name'), '')) as name,
            i.provider_id as sub, r.status, r.score::text as score,
            last.id as artifact_id, to_json(last.created_at) #>> '{}' as submitted_at, last.verification,
            count(*) over ()::int as total
       from lti_context_members m
       join users u on u.id = m.user_id
       left join auth.identities i on i.user_id = u.auth_user_id and i.provider = $4
       left join activity_results r on r.tenant_id = m.tenant_id and r.activity_id = $3 and r.user_id = m.user_id
       left join lateral (
         select a.id, a.created_at, a.verification from artifacts a
          where a.tenant_id = m.tenant_id and a.result_id = r.id
          order by a.created_at desc, a.id desc limit 1) last on true
      where m.tenant_id = $1 and m.context = $2
        and exists (select 1 from unnest(m.roles) role where role ~ ${LEARNER_ROLE_SQL})
      order by name nulls last, sub, m.user_id
      limit ${MAX_PREVIEW_LEARNERS}`,
    [platform.tenant_id, context, activityId, ltiProvider(platform)],
  );
  const learners = rows.map((r): PreviewLearner => {
    const attempt = r.artifact_id ? attemptOf(r.artifact_id, r.submitted_at!, r.verification) : undefined;
    const status: PreviewLearner['status'] = !r.status
      ? 'not_started'
      : attempt?.status === 'pending'
        ? attempt.reason === 'review_required'
          ? 'review'
          : 'grading'
        : r.status === 'completed'
          ? 'passed'
          : attempt?.status === 'not_gradable'
            ? 'not_gradable'
            : r.status === 'failed'
              ? 'failed'
              : 'in_progress';
    return { name: r.name ?? r.sub ?? 'A learner', status, score: r.score === null ? null : Number(r.score), at: r.submitted_at };
  });
  return { learners, more: Math.max(0, (rows[0]?.total ?? 0) - rows.length) };
}

/**
 * Answer an instructor's verified resource-link launch of `activityId` (an activity of the
 * registration's tenant, `slug`): the player in preview mode.
 */
export async function instructorPreview(deps: Deps, launch: VerifiedLaunch, reply: FastifyReply, assets: PlayerAssets, activityId: string, slug: string) {
  const { platform, claims } = launch;
  const view = await deps.db.transaction(async (tx) => {
    await useLaunchOnce(tx, launch, STATE_SECONDS);
    const context = await recordContext(tx, platform, claims);
    await recordResourceLink(tx, platform, claims, context, activityId);
    // The course's roster (NRPS, nrps.ts), read in the background, fills the list below before anyone launches.
    await queueRosterRead(tx, platform.tenant_id, context);
    const found = await playerActivity(tx, activityId, platform.tenant_id);
    const activity = found ? { ...found, result: null } : null;
    const results = context ? await courseResults(tx, launch, context, activityId) : { learners: [], more: 0 };
    return { activity, ...results };
  });
  const course = (claims[CLAIM.context] as { title?: unknown } | undefined)?.title;
  const config: PlayerConfig = {
    tenant: slug,
    activity: activityId,
    host: '',
    origins: [],
    anonKey: deps.config.anonKey,
    maxContentBytes: MAX_CONTENT_BYTES,
    preview: {
      activity: view.activity,
      ...(!view.activity && { unavailable: 'This activity is archived: learners who open this link are told it is not available.' }),
      ...(typeof course === 'string' && course.length <= 200 && { course }),
      learners: view.learners,
      more: view.more,
    },
  };
  return sendPlayer(reply, launch, config, assets);
}
