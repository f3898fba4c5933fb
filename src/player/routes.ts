/**
 * The embeddable player, mounted at `/embed/v1` (issue #13):
 *
 *   GET /svc-embed.js   the loader partners include (client/loader.ts): `SvcEmbed.mount(...)`
 *   GET /play?tenant=<slug>&activity=<uuid>&host=<origin>
 *                       the player page (page.ts) the loader frames; its script does the rest
 *   GET /player.js, /player.css   the page's assets (build.ts), cached by content hash
 *
 * The page carries `Content-Security-Policy: frame-ancestors <the tenant's allowed origins>`
 * (`'none'` when it has none: it cannot be framed; src/embed/origins.ts), and otherwise allows
 * only its own script, styles and API calls (`default-src 'none'`). A request the page cannot
 * serve — no or a malformed tenant, an unknown tenant, no or a malformed activity id or host —
 * still gets the page, with the reason in words, which its script shows and sends to the host as
 * `svc:error` (never a blank frame); for an unknown or malformed tenant, who may frame it is
 * unknown, so that error page (which holds no data) may be framed anywhere. Unknown activities
 * and other tenants' ones are found out by the script, from the API's 404.
 *
 * Nothing here sets a cookie; the learner's session lives in the script's memory.
 */
import type { FastifyInstance, FastifyReply } from 'fastify';
import { z } from 'zod';
import type { Deps } from '../deps.ts';
import { ApiError, sendApiError } from '../http/api-errors.ts';
import { frameAncestors, MAX_CONTENT_BYTES, normalizeOrigin, tenantOrigins, tenantSlug } from '../embed/index.ts';
import { playerAssets, type Asset } from './build.ts';
import { playerCsp as pageCsp, playerPage } from './page.ts';
import type { PlayerConfig } from './protocol.ts';

const activityId = z.uuid();
const YEAR = 365 * 24 * 3600;

export default async function playerRoutes(app: FastifyInstance, deps: Deps) {
  const assets = await playerAssets();

  app.addHook('onSend', async (_req, reply) => {
    reply.header('x-content-type-options', 'nosniff');
    reply.header('referrer-policy', 'no-referrer');
  });
  app.setNotFoundHandler((req, reply) => sendApiError(reply, new ApiError('not_found', `no route ${req.method} ${req.url.split('?')[0]}`)));

  /** Send `asset` as `type`, cached for a year when the request names its hash. */
  const sendAsset = (reply: FastifyReply, asset: Asset, type: string, version: unknown, maxAge = 300) =>
    reply
      .type(type)
      .header('cache-control', version === asset.hash ? `public, max-age=${YEAR}, immutable` : `public, max-age=${maxAge}`)
      .header('etag', `"${asset.hash}"`)
      .send(asset.body);

  app.get<{ Querystring: { v?: string } }>('/svc-embed.js', (req, reply) =>
    sendAsset(reply.header('cross-origin-resource-policy', 'cross-origin'), assets.loader, 'text/javascript; charset=utf-8', req.query.v),
  );
  app.get<{ Querystring: { v?: string } }>('/player.js', (req, reply) => sendAsset(reply, assets.player, 'text/javascript; charset=utf-8', req.query.v));
  app.get<{ Querystring: { v?: string } }>('/player.css', (req, reply) => sendAsset(reply, assets.css, 'text/css; charset=utf-8', req.query.v));

  app.get<{ Querystring: Record<string, unknown> }>('/play', async (req, reply) => {
    const q = req.query;
    const config: PlayerConfig = {
      tenant: typeof q.tenant === 'string' ? q.tenant : '',
      activity: typeof q.activity === 'string' ? q.activity : '',
      host: '',
      origins: [],
      anonKey: deps.config.anonKey,
      maxContentBytes: MAX_CONTENT_BYTES,
    };
    const fail = (status: number, code: string, message: string, ancestors: string) => {
      config.error = { code, message };
      return page(reply.code(status), config, ancestors);
    };
    // 1. The embedding page's origin (the loader's `host`): where messages, errors included, go.
    const host = typeof q.host === 'string' ? normalizeOrigin(q.host) : undefined;
    if (host && 'origin' in host && !host.origin.includes('*')) config.host = host.origin;
    // 2. The tenant decides who may frame the page.
    if (!tenantSlug.safeParse(config.tenant).success) {
      return fail(400, 'invalid_request', 'The player was not told which organisation (tenant) this activity belongs to.', '*');
    }
    const tenant = await tenantOrigins(deps.db, config.tenant);
    if (!tenant) return fail(404, 'not_found', `There is no organisation "${config.tenant}" on this service.`, '*');
    config.origins = tenant.origins;
    const ancestors = frameAncestors(tenant.origins);
    // 3. The activity.
    if (!activityId.safeParse(config.activity).success) {
      return fail(400, 'invalid_request', 'The player was not given a valid activity id.', ancestors);
    }
    if (!config.host) {
      return fail(400, 'invalid_request', 'The player must be mounted with svc-embed.js (it names the embedding page).', ancestors);
    }
    return page(reply, config, ancestors);
  });

  const page = (reply: FastifyReply, config: PlayerConfig, ancestors: string) =>
    reply
      .type('text/html; charset=utf-8')
      .header('cache-control', 'no-store')
      .header('content-security-policy', pageCsp(ancestors))
      .send(playerPage(config, assets));
}
