/**
 * `svc lti …`: the LTI 1.3 tool — platform registrations per tenant, the tool's keys, what an LMS
 * administrator types in, Dynamic Registration URLs, score delivery (issue #22, src/lti/).
 * Registered in ../ops.ts.
 */
import { z } from 'zod';
import type { Queryable } from '../../db/index.ts';
import {
  addPlatform,
  listKeys,
  listPlatforms,
  listScores,
  mintRegistrationUrl,
  type PlatformInput,
  PlatformTaken,
  removePlatform,
  rotateKey,
  toolConfig,
} from '../../lti/index.ts';
import { sqlState } from '../../db/errors.ts';
import { AdminError, originEntry, slug, tenantId, url } from './shared.ts';

/** Most frame origins of one registration (the check of migration 0165). */
const MAX_FRAME_ORIGINS = 20;

export const ltiOps = {
  'lti.platforms.add': {
    args: z.object({
      tenant: slug,
      issuer: url.max(2048),
      client_id: z.string().trim().min(1, '--client-id is required').max(255),
      auth_url: url.max(2048),
      token_url: url.max(2048),
      jwks_url: url.max(2048),
      token_audience: z.string().trim().min(1).max(2048).optional(),
      deployments: z.array(z.string().trim().min(1, 'a deployment id is not empty').max(255)).max(100).default([]),
      frame_origins: z.array(z.string().min(1).max(300)).max(MAX_FRAME_ORIGINS).default([]),
    }),
    run: async (q: Queryable, a: PlatformInput & { tenant: string }) => {
      const id = await tenantId(q, a.tenant);
      try {
        const { platform, created } = await addPlatform(q, id, { ...a, frame_origins: (a.frame_origins ?? []).map(originEntry) });
        return { ...platform, created };
      } catch (err) {
        if (err instanceof PlatformTaken) throw new AdminError('conflict', err.message);
        if (sqlState(err) === '23514') throw new AdminError('invalid', `a registration keeps at most ${MAX_FRAME_ORIGINS} frame origins`);
        throw err;
      }
    },
  },
  'lti.platforms.list': {
    args: z.object({ tenant: slug.optional() }),
    run: async (q: Queryable, a: { tenant?: string }) => listPlatforms(q, a.tenant === undefined ? undefined : await tenantId(q, a.tenant)),
  },
  'lti.platforms.remove': {
    args: z.object({ tenant: slug, issuer: z.string().min(1).max(2048), client_id: z.string().min(1).max(255) }),
    run: async (q: Queryable, a: { tenant: string; issuer: string; client_id: string }) => {
      if (!(await removePlatform(q, await tenantId(q, a.tenant), a.issuer, a.client_id))) {
        throw new AdminError('not_found', `"${a.tenant}" has no registration of ${a.issuer} client ${a.client_id}`);
      }
      return { tenant: a.tenant, issuer: a.issuer, client_id: a.client_id, removed: true };
    },
  },
  // svc lti registration-url: a single-use LTI Dynamic Registration URL for a tenant (24 h; src/lti/registration/).
  'lti.registration_url': {
    args: z.object({ tenant: slug, base_url: url }),
    run: async (q: Queryable, a: { tenant: string; base_url: string }) => mintRegistrationUrl(q, await tenantId(q, a.tenant), a.tenant, a.base_url),
  },
  'lti.config': { args: z.object({ base_url: url }), run: async (_q: Queryable, a: { base_url: string }) => toolConfig(a.base_url) },
  'lti.keys.list': { args: z.object({}), run: (q: Queryable) => listKeys(q) },
  'lti.keys.rotate': { args: z.object({}), run: (q: Queryable) => rotateKey(q) },
  'lti.scores': {
    args: z.object({ tenant: slug, failed: z.boolean().default(false) }),
    run: async (q: Queryable, a: { tenant: string; failed: boolean }) => listScores(q, await tenantId(q, a.tenant), { failed: a.failed }),
  },
} as const;
