/**
 * The LTI surface's public entry point (issue #22, DESIGN §9): everything another surface (app,
 * admin, the CLI) may use of `/lti/v1`. Other surfaces import from here, never from the files
 * behind it (STYLE.md §8). See README.md for the design and what is built.
 *
 * - the plugin `ltiRoutes` (`/lti/v1`);
 * - the tool's keys (`svc lti keys list|rotate`, `GET /lti/v1/jwks`);
 * - platform registrations (`svc lti platforms add|list|remove`);
 * - the registration values (`svc lti config`);
 * - dynamic registration URLs (`svc lti registration-url`).
 * - the score sender (`startScoreSender`, ags/runner.ts) and the deliveries (`svc lti scores`);
 * - the roster read (`queueRosterRead`, nrps.ts).
 */
export { default as ltiRoutes } from './routes.ts';
export { currentKey, listKeys, publicKeySet, rotateKey, RETIRED_KEY_SECONDS, TOKEN_LIFETIME_SECONDS, type KeyInfo, type PublicJwk } from './keys.ts';
export { addPlatform, findPlatform, listPlatforms, PlatformTaken, removePlatform, type Platform, type PlatformInput } from './platforms.ts';
export { toolConfig, TOOL_SCOPES, type ToolConfig } from './config.ts';
export { ltiLearnerData } from './learner-data.ts';
export { mintRegistrationUrl, CODE_TTL_HOURS, type MintedCode } from './registration/index.ts';
export { startScoreSender, scoresQueue, scoresSweepQueue, type ScoreSender } from './ags/runner.ts';
export { listScores, type ScoreDelivery } from './ags/list.ts';
export { queueRosterRead, readRoster, rosterQueue, type RosterRead } from './nrps.ts';
