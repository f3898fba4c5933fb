/**
 * Deep Linking 2.0: an instructor places activities from the LMS.
 *
 * 1. `deepLinkingLaunch` — a verified `LtiDeepLinkingRequest` launch (launch.ts, routes.ts):
 *    an instructor's (Instructor, ContentDeveloper or Administrator role, no Learner role:
 *    `isInstructorLaunch`; else `not_instructor`, 403) with valid `deep_linking_settings` (§4.4.1:
 *    `deep_link_return_url` http(s), `accept_types` holding `ltiResourceLink`, `accept_multiple`
 *    a boolean when present, `data` a string when present; else `invalid_deep_linking`, 400).
 *    One transaction uses the launch's state and nonce once; then the picker page (page.ts) lists
 *    the registration's tenant's content (content.ts) with a picker token (token.ts) bound to the
 *    launch. Nothing else is stored.
 * 2. `POST /lti/v1/deep-linking/response` (`deepLinkingRoutes`) — the picker's form: refused unless
 *    the browser says it comes from our own page when it says anything (`Sec-Fetch-Site`
 *    same-origin, else `Origin` = ours: a cross-site form post is refused, `forbidden`, 403); the
 *    picker token must verify and be unexpired (`invalid_picker` / `picker_expired`, 400); the
 *    picks must be activity ids (`invalid_request`), one unless `accept_multiple` (`too_many`),
 *    at most `MAX_PICKS`, at least one (`no_pick`), each an unarchived activity of the token's
 *    tenant (`activity_not_available`, 403); the registration must still exist. Then, in one
 *    transaction, the token is used once (`replayed`, 400, on a second submission) and the
 *    response is signed (token.ts) and auto-submitted to `deep_link_return_url` (page.ts).
 *
 * Every refusal is a readable HTML page (pages.ts `sendErrorPage`), framed like the picker once the
 * token is read (an expired one's signature still verifies), before that by any registered platform.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { Deps } from '../../deps.ts';
import { currentKey } from '../keys.ts';
import { CLAIM, consumeOnce, isInstructorLaunch, LaunchError, useLaunchOnce, type VerifiedLaunch } from '../launch.ts';
import { STATE_SECONDS } from '../login.ts';
import { pageErrorHandler, sendErrorPage } from '../pages.ts';
import { recordContext } from '../contexts.ts';
import { queueRosterRead } from '../nrps.ts';
import { MAX_PICKS, pickableActivities, pickedActivities } from './content.ts';
import { sendPickerPage, sendReturnPage } from './page.ts';
import { readPickerToken, signPickerToken, signResponse, type ResourceLinkItem } from './token.ts';

/** Where the picker posts, under the LTI routes' prefix. */
export const RESPONSE_PATH = '/deep-linking/response';
/** Longest `data` we carry back, in characters (platforms send an opaque value or a JWT of a few KB). */
const MAX_DATA_CHARS = 8192;

const settingsSchema = z.object({
  deep_link_return_url: z
    .string()
    .max(2048)
    .refine((u) => URL.canParse(u) && /^https?:$/.test(new URL(u).protocol), 'must be an http(s) URL'),
  accept_types: z.array(z.string()).refine((types) => types.includes('ltiResourceLink'), 'must include ltiResourceLink'),
  accept_multiple: z.boolean().optional(),
  data: z.string().max(MAX_DATA_CHARS).optional(),
});

const refusedTitle = 'This activity could not be placed';

/** Answer a verified deep-linking launch: the picker, or a refusal page. */
export async function deepLinkingLaunch(deps: Deps, launch: VerifiedLaunch, reply: FastifyReply) {
  const { platform, claims, framed } = launch;
  // 1. An instructor.
  if (!isInstructorLaunch(claims)) {
    return sendErrorPage(
      reply,
      403,
      'not_instructor',
      refusedTitle,
      'Only an instructor (or a content developer or administrator) of the course can place activities. Nothing was recorded.',
      framed,
    );
  }
  // 2. Settings we can answer.
  const settings = settingsSchema.safeParse(claims[CLAIM.deepLinkingSettings]);
  if (!settings.success) {
    const issue = settings.error.issues[0];
    const where = issue?.path.length ? `deep_linking_settings.${issue.path.join('.')}` : 'deep_linking_settings';
    return sendErrorPage(
      reply,
      400,
      'invalid_deep_linking',
      refusedTitle,
      `The LMS did not ask for something this tool can place (${where}: ${issue?.message ?? 'missing'}). This tool places LTI resource links.`,
      framed,
    );
  }
  // 3. The launch used once; the tenant's content.
  const activities = await deps.db.transaction(async (tx) => {
    await useLaunchOnce(tx, launch, STATE_SECONDS);
    // The course's roster (NRPS, ../nrps.ts) when the launch names one: the course is recorded for it.
    if (claims[CLAIM.nrps]) await queueRosterRead(tx, platform.tenant_id, await recordContext(tx, platform, claims));
    return pickableActivities(tx, platform.tenant_id);
  });
  const s = settings.data;
  const token = await signPickerToken(
    deps.config,
    {
      tenantId: platform.tenant_id,
      platformId: platform.id,
      deploymentId: claims[CLAIM.deploymentId] as string,
      returnUrl: s.deep_link_return_url,
      ...(s.data !== undefined && { data: s.data }),
      acceptMultiple: s.accept_multiple === true,
      ancestors: framed,
    },
    deps.now(),
  );
  const context = claims[CLAIM.context] as { title?: unknown } | undefined;
  reply.header('set-cookie', launch.clearCookie);
  return sendPickerPage(
    reply,
    {
      activities,
      acceptMultiple: s.accept_multiple === true,
      token,
      action: `/lti/v1${RESPONSE_PATH}`,
      ...(typeof context?.title === 'string' && context.title.length <= 200 && { course: context.title }),
    },
    framed,
  );
}

const uuid = z.uuid();

/** The picker's form: `picker_token` once, `activity` any number of times. */
function pickerForm(body: unknown): { token: string; picks: string[] } | undefined {
  if (typeof body !== 'string') return undefined;
  const form = new URLSearchParams(body);
  const tokens = form.getAll('picker_token');
  if (tokens.length !== 1 || !tokens[0]) return undefined;
  return { token: tokens[0], picks: form.getAll('activity') };
}

/** Whether the browser says the request comes from one of our own pages (or says nothing: not a browser). */
function fromOurPage(req: FastifyRequest, base: string): boolean {
  const site = req.headers['sec-fetch-site'];
  if (site !== undefined) return site === 'same-origin';
  const origin = req.headers.origin;
  return origin === undefined || origin === new URL(base).origin;
}

/**
 * Mount `POST /deep-linking/response` on the LTI routes (they parse forms as strings); its refusals
 * are HTML pages framed by every registered platform (`everyPlatform`, routes.ts's cache).
 */
export function deepLinkingRoutes(app: FastifyInstance, deps: Deps, everyPlatform: { last(): string; get(): Promise<string> }) {
  const base = () => deps.config.baseUrl.replace(/\/$/, '');
  app.register(async (scope) => {
    scope.setErrorHandler(
      pageErrorHandler(
        {
          title: refusedTitle,
          tooLarge: 'The form sent more data than a picker holds.',
          malformed: 'The form is malformed.',
          busy: 'The service cannot place activities right now. Try again in a few seconds.',
          failed: 'The activity could not be placed because of an error on our side.',
          log: 'lti deep linking: unexpected error',
        },
        everyPlatform,
      ),
    );

    scope.post(RESPONSE_PATH, async (req, reply) => {
      const refuse = (status: number, code: string, message: string, ancestors: string) => sendErrorPage(reply, status, code, refusedTitle, message, ancestors);
      // Before the token is read, who frames the page is unknown: any registered platform (as at login).
      const anyPlatform = () => everyPlatform.get();
      // 1. From our picker page, with its token.
      if (!fromOurPage(req, base())) return refuse(403, 'forbidden', 'This form can only be sent from the activity picker.', await anyPlatform());
      const form = /^application\/x-www-form-urlencoded\b/i.test(req.headers['content-type'] ?? '') ? pickerForm(req.body) : undefined;
      if (!form) return refuse(400, 'invalid_request', 'The form is malformed (a form post carrying one picker token).', await anyPlatform());
      const now = deps.now();
      const picker = await readPickerToken(deps.config, form.token, now);
      if (picker === 'invalid')
        return refuse(400, 'invalid_picker', 'This picker is not valid. Open the activity picker again from the LMS.', await anyPlatform());
      if ('expired' in picker) return refuse(400, 'picker_expired', 'This picker has expired. Open the activity picker again from the LMS.', picker.ancestors);
      const framed = picker.ancestors;
      // 2. The picks.
      if (!form.picks.length) return refuse(400, 'no_pick', 'No activity was chosen. Go back and choose one.', framed);
      if (!form.picks.every((id) => uuid.safeParse(id).success))
        return refuse(400, 'invalid_request', 'The form names an activity that is not an activity id.', framed);
      const picks = [...new Set(form.picks)];
      if (picks.length > 1 && !picker.acceptMultiple) return refuse(400, 'too_many', 'The LMS asked for one activity here: choose only one.', framed);
      if (picks.length > MAX_PICKS) return refuse(400, 'too_many', `Choose at most ${MAX_PICKS} activities at a time.`, framed);
      const [platform] = await deps.db.query<{ issuer: string; client_id: string }>(
        'select issuer, client_id from lti_platforms where tenant_id = $1 and id = $2',
        [picker.tenantId, picker.platformId],
      );
      if (!platform) return refuse(400, 'unknown_platform', 'This LMS is no longer registered with the service.', framed);
      const activities = await pickedActivities(deps.db, picker.tenantId, picks);
      if (activities.length !== picks.length) {
        return refuse(
          403,
          'activity_not_available',
          'An activity you chose is not available: it belongs to another organisation than the one this LMS is registered with, or it was archived.',
          framed,
        );
      }
      // 3. The token used once; the signed response back to the platform.
      const url = `${base()}/lti/v1/launch`;
      const items: ResourceLinkItem[] = activities.map((a) => ({
        type: 'ltiResourceLink',
        title: a.title,
        text: a.summary,
        url,
        custom: { activity_id: a.id },
        lineItem: { scoreMaximum: 100, label: a.title, resourceId: a.id },
      }));
      const jwt = await deps.db
        .transaction(async (tx) => {
          try {
            await consumeOnce(tx, picker.tenantId, 'picker', picker.id, new Date((picker.exp + 120) * 1000));
          } catch (err) {
            if (err instanceof LaunchError && err.code === 'replayed') {
              throw new LaunchError(
                400,
                'replayed',
                refusedTitle,
                'These activities were already placed from this picker. Open the activity picker again from the LMS to place more.',
              );
            }
            throw err;
          }
          return signResponse(await currentKey(tx), { clientId: platform.client_id, issuer: platform.issuer, picker, items, now });
        })
        .catch((err: unknown) => {
          if (err instanceof LaunchError) return err;
          throw err;
        });
      if (jwt instanceof LaunchError) return refuse(jwt.status, jwt.code, jwt.message, framed);
      return sendReturnPage(reply, picker.returnUrl, jwt, framed);
    });
  });
}
