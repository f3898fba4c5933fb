/**
 * A resource-link launch (LTI Core 1.3 §5.3, `LtiResourceLinkRequest`) that passed every check:
 * the placed activity (`custom.activity_id`, an activity of the registration's tenant, else a
 * refusal page) opens in the player, signed in as the LTI learner with a session bound to the
 * tenant handed to the page (no cookie needed after the launch). One transaction uses the state
 * and nonce once, maps the learner (learners.ts), records the course, the membership and the
 * placement with its AGS endpoint (contexts.ts) and starts the session.
 *
 * An instructor's launch (isInstructorLaunch) gets the preview (preview.ts) and makes nobody a learner.
 */
import type { FastifyReply } from 'fastify';
import { z } from 'zod';
import type { Deps } from '../deps.ts';
import { startSession } from '../identity/index.ts';
import { MAX_CONTENT_BYTES } from '../embed/index.ts';
import type { PlayerAssets, PlayerConfig } from '../player/index.ts';
import { recordContext, recordMember, recordResourceLink } from './contexts.ts';
import { CLAIM, isInstructorLaunch, useLaunchOnce, type VerifiedLaunch } from './launch.ts';
import { ltiLearner } from './learners.ts';
import { STATE_SECONDS } from './login.ts';
import { sendErrorPage, sendPlayer } from './pages.ts';
import { instructorPreview } from './preview.ts';

const uuid = z.uuid();

/** Answer a verified resource-link launch: the player page, or a refusal page. */
export async function resourceLinkLaunch(deps: Deps, launch: VerifiedLaunch, reply: FastifyReply, assets: PlayerAssets) {
  const { platform, claims, framed } = launch;
  const custom = claims[CLAIM.custom] as Record<string, unknown> | undefined;
  const activityId = custom?.activity_id;
  if (typeof activityId !== 'string' || !uuid.safeParse(activityId).success) {
    return sendErrorPage(
      reply,
      400,
      'no_activity',
      'No activity is placed here',
      'This link does not name an activity of the service (custom parameter activity_id). Ask your instructor to place the activity again.',
      framed,
    );
  }
  const [activity] = await deps.db.query<{ slug: string }>(
    'select t.slug from activities a join tenants t on t.id = a.tenant_id where a.id = $1 and a.tenant_id = $2',
    [activityId, platform.tenant_id],
  );
  if (!activity) {
    return sendErrorPage(
      reply,
      403,
      'activity_not_available',
      'This activity is not available here',
      'The activity this link names does not belong to the organisation this LMS is registered with.',
      framed,
    );
  }
  // An instructor's launch: the preview (preview.ts) — as learners see it, with the course's
  // learners' results; no learner made, nothing submitted, nothing sent to the gradebook.
  if (isInstructorLaunch(claims)) return instructorPreview(deps, launch, reply, assets, activityId, activity.slug);
  const session = await deps.db.transaction(async (tx) => {
    await useLaunchOnce(tx, launch, STATE_SECONDS);
    const user = await ltiLearner(tx, platform, claims, { now: launch.now });
    const context = await recordContext(tx, platform, claims);
    if (context) await recordMember(tx, platform.tenant_id, context, user.svc_user_id, claims[CLAIM.roles] as string[], 'launch');
    await recordResourceLink(tx, platform, claims, context, activityId);
    return startSession(tx, deps, user, 'lti', platform.tenant_id);
  });
  const config: PlayerConfig = {
    tenant: activity.slug,
    activity: activityId,
    host: '',
    origins: [],
    anonKey: deps.config.anonKey,
    maxContentBytes: MAX_CONTENT_BYTES,
    session: { access_token: session.access_token, refresh_token: session.refresh_token, expires_in: session.expires_in },
  };
  return sendPlayer(reply, launch, config, assets);
}
