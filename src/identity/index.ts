/**
 * The identity module's public entry point: everything another surface (app, authoring, embed,
 * admin) may use of `/auth/v1`'s users, sessions and OAuth server. Other surfaces import from
 * here, never from the files behind it, so identity's internals can change without touching
 * them (STYLE.md §8).
 *
 * - the plugins: `identityRoutes` (`/auth/v1`), `oauthDiscoveryRoutes` (root `/.well-known/*`);
 * - errors: `AuthError` (GoTrue's codes) and its renderer `sendAuthError`; `TokenError`;
 * - sessions: `verifySession` (an access token → its live session; the `/mcp` and embed
 *   credential check), `startSession` (the embed sign-in), `VerifiedSession`;
 * - access tokens: `AUDIENCE`, `mcpResource` (the `/mcp` resource indicator), the OAuth scopes;
 * - users: `createUser`, `findUserById`, `findUserByEmail`, `userJson`, `normaliseEmail` (the
 *   one email normalisation, applied on every path), and the administration behind `svc user …`;
 * - OAuth clients and grants, for `svc oauth …`.
 */
export { default as identityRoutes } from './routes.ts';
export { identityLearnerData } from './learner-data.ts';
export { oauthDiscoveryRoutes } from './oauth/metadata.ts';
export { AuthError, sendAuthError } from './errors.ts';
export { AUDIENCE, mcpResource } from './jwt.ts';
export { DEFAULT_SCOPE, SUPPORTED_SCOPES } from './oauth/scopes.ts';
export { startSession, TokenError, verifySession, type VerifiedSession } from './sessions.ts';
export { createUser, findUserByEmail, findUserById, normaliseEmail, userJson, type UserRow } from './users.ts';
export { deleteUser, getUserByIdOrEmail, listParams, listUsers, updateUser, type UserUpdate } from './admin-users.ts';
export { listClients, revokeClient } from './oauth/clients.ts';
export { listGrants, revokeGrant } from './oauth/grants.ts';
