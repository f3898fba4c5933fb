/**
 * A Deep Linking launch (Deep Linking 2.0, `LtiDeepLinkingRequest`) that passed every check: the
 * instructor's picker. Not built yet: a page that says so, storing nothing.
 */
import type { FastifyReply } from 'fastify';
import type { Deps } from '../deps.ts';
import type { VerifiedLaunch } from './launch.ts';
import { sendErrorPage } from './pages.ts';

/** Answer a verified deep-linking launch. */
export async function deepLinkingLaunch(_deps: Deps, launch: VerifiedLaunch, reply: FastifyReply) {
  return sendErrorPage(reply, 501, 'unsupported_message', 'Placing activities is not available yet', 'The activity picker is not built yet.', launch.framed);
}
