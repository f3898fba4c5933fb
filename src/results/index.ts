/**
 * The results module's public entry point: everything another folder (app, admin, bench,
 * scripts) may use of the results API `/v1`. Other folders import from here, never from the
 * files behind it, so the module's internals can change without touching them (STYLE.md §8);
 * tests may import the files directly.
 *
 * - the plugins: `resultsRoutes` (`/v1`, mounted by src/app.ts) and `resultsDocs` (the rendered
 *   reference `/docs`, registered at the root);
 * - API keys, for `svc key …` and the benches: `createApiKey`, `listApiKeys`, `revokeApiKey`;
 * - erasure and export: `resultsLearnerData`, the results part of the learner-data registry
 *   (src/admin/learner-data.ts);
 * - the statement builders and cursor codec, for bench/results-api.ts, which measures them:
 *   `listStatement`, `statementCall` (the query the API sends), `cursorCodec` and their types.
 */

export { type ApiKeyInfo, createApiKey, listApiKeys, revokeApiKey } from './api-keys.ts';
export { cursorCodec, type Endpoint, type Position } from './cursor.ts';
export { resultsLearnerData } from './learner-data.ts';
export { resultsDocs } from './openapi.ts';
export { type ListOptions, listStatement, type PageStatement, statementCall } from './queries.ts';
export { default as resultsRoutes } from './routes.ts';
