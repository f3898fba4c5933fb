/**
 * What every group of admin operations (this folder) shares: the error they throw, the argument
 * schemas several groups check, and the tenant lookup by slug. One home, so the wording of a
 * refusal is the same in every `svc` command.
 *
 * Errors: `AdminError` with a stable `code` (`not_found`, `conflict`, `invalid`) and a message
 * meant for the person at the terminal; `POST /admin/v1/ops/:op` answers them 404/409/400.
 */
import { z } from 'zod';
import type { Queryable } from '../../db/index.ts';
import { normalizeOrigin } from '../../embed/index.ts';
import { slugSchema } from '../../lib/ids.ts';

export class AdminError extends Error {
  constructor(
    readonly code: 'not_found' | 'conflict' | 'invalid',
    message: string,
  ) {
    super(message);
  }
}

/** A tenant slug argument. */
export const slug = slugSchema('a tenant slug is 1–63 lower-case letters, digits and dashes, starting with a letter or digit');
/** An email address argument (normalised by identity, not here). */
export const email = z.string().min(3).max(320);
/** An http(s) URL argument. */
export const url = z.url().refine((u) => /^https?:\/\//.test(u), 'must be an http(s) URL');

/** The id of the tenant with slug `tenantSlug`, or null when there is none. */
export async function findTenantId(q: Queryable, tenantSlug: unknown): Promise<string | null> {
  const [row] = await q.query<{ id: string }>('select id from tenants where slug = $1', [tenantSlug]);
  return row?.id ?? null;
}

/** The id of the tenant with slug `tenantSlug`; AdminError `not_found` when there is none. */
export async function tenantId(q: Queryable, tenantSlug: string): Promise<string> {
  const id = await findTenantId(q, tenantSlug);
  if (id === null) throw new AdminError('not_found', `no tenant "${tenantSlug}"`);
  return id;
}

/**
 * An origin entry (`https://host[:port]` or `https://*.example.com`, normalised by
 * `normalizeOrigin`) for `svc embed origins` and `svc lti platforms add --frame-origin`;
 * AdminError `invalid` when it is not one.
 */
export function originEntry(input: string): string {
  const parsed = normalizeOrigin(input);
  if ('error' in parsed) throw new AdminError('invalid', parsed.error);
  return parsed.origin;
}
