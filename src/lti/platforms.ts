/**
 * Platform registrations (LTI Core 1.3 §3.1.3 "Tool deployment", §5.1.1 "Platform registration"):
 * what an LMS administrator's registration of the tool gave us — the platform's `issuer`, the
 * `client_id` it assigned the tool, its OIDC authorization URL (login answers are sent there), its
 * OAuth 2 token URL (AGS/NRPS service tokens) with an optional separate token audience
 * (Brightspace), its JWK set URL (the id_tokens' keys), and the deployment ids it launches with.
 *
 * A registration belongs to exactly one tenant and is unique on issuer + client id (every Canvas
 * Cloud instance shares `https://canvas.instructure.com`): a launch finds its tenant by them
 * (`findPlatform`). Rows live in `lti_platforms` / `lti_deployments` (migration 0150).
 */
import type { Queryable } from '../db/index.ts';

/** A registration as stored and as `svc lti platforms list` shows it. */
export interface Platform {
  id: string;
  tenant_id: string;
  /** The tenant's slug. */
  tenant: string;
  issuer: string;
  client_id: string;
  auth_url: string;
  token_url: string;
  jwks_url: string;
  /** `aud` of our client assertions when the token URL is not it (Brightspace); null → the token URL. */
  token_audience: string | null;
  /** Registered deployment ids, sorted. */
  deployments: string[];
  /**
   * True for a dynamic registration whose platform named no deployment id (Canvas): any deployment
   * id the platform signs is accepted (migration 0154). Absent on rows read before 0154.
   */
  any_deployment?: boolean;
  /**
   * LMS hosts that frame its launches besides its issuer's and authorization URL's origins
   * (origins or `https://*.example.com` wildcards, sorted; migration 0165, src/lti/framing.ts).
   */
  frame_origins: string[];
  created_at: string;
}

/** What `svc lti platforms add` gives. */
export interface PlatformInput {
  issuer: string;
  client_id: string;
  auth_url: string;
  token_url: string;
  jwks_url: string;
  token_audience?: string;
  deployments: string[];
  /** Accept any deployment id (dynamic registration without one); kept true once set. */
  any_deployment?: boolean;
  /** Frame origins to add (normalised entries: `normalizeOrigin`); kept once added. */
  frame_origins?: string[];
}

const SELECT = `
  select p.id, p.tenant_id, t.slug as tenant, p.issuer, p.client_id, p.auth_url, p.token_url, p.jwks_url,
         p.token_audience, p.any_deployment, p.frame_origins, to_json(p.created_at) #>> '{}' as created_at,
         coalesce((select array_agg(d.deployment_id order by d.deployment_id) from lti_deployments d
                    where d.tenant_id = p.tenant_id and d.platform_id = p.id), '{}') as deployments
    from lti_platforms p join tenants t on t.id = p.tenant_id`;

/** Thrown by `addPlatform` when the issuer + client id is registered to another tenant. */
export class PlatformTaken extends Error {}

/**
 * Register a platform for tenant `tenantId`, or update the URLs of its registration with the same
 * issuer + client id and add deployments and frame origins to it. Throws `PlatformTaken` when
 * another tenant holds that issuer + client id; the database refuses more than 20 frame origins
 * (check violation). Returns the registration and whether it was new.
 */
export async function addPlatform(q: Queryable, tenantId: string, input: PlatformInput): Promise<{ platform: Platform; created: boolean }> {
  const [existing] = await q.query<{ id: string; tenant_id: string }>(
    'select id, tenant_id from lti_platforms where issuer = $1 and client_id = $2 for update',
    [input.issuer, input.client_id],
  );
  if (existing && existing.tenant_id !== tenantId) throw new PlatformTaken(`${input.issuer} client ${input.client_id} is registered to another tenant`);
  const values = [input.auth_url, input.token_url, input.jwks_url, input.token_audience ?? null, input.any_deployment ?? false, input.frame_origins ?? []];
  const [row] = existing
    ? await q.query<{ id: string }>(
        `update lti_platforms set auth_url = $3, token_url = $4, jwks_url = $5, token_audience = $6, any_deployment = any_deployment or $7,
                frame_origins = array(select distinct o from unnest(frame_origins || $8::text[]) o order by o)
          where tenant_id = $1 and id = $2 returning id`,
        [tenantId, existing.id, ...values],
      )
    : await q.query<{ id: string }>(
        `insert into lti_platforms (tenant_id, issuer, client_id, auth_url, token_url, jwks_url, token_audience, any_deployment, frame_origins)
         values ($1, $2, $3, $4, $5, $6, $7, $8, array(select distinct o from unnest($9::text[]) o order by o)) returning id`,
        [tenantId, input.issuer, input.client_id, ...values],
      );
  for (const deployment of new Set(input.deployments)) {
    await q.query('insert into lti_deployments (tenant_id, platform_id, deployment_id) values ($1, $2, $3) on conflict do nothing', [
      tenantId,
      row!.id,
      deployment,
    ]);
  }
  const [platform] = await q.query<Platform>(`${SELECT} where p.tenant_id = $1 and p.id = $2`, [tenantId, row!.id]);
  return { platform: platform!, created: !existing };
}

/** The registrations of tenant `tenantId` (all tenants when undefined), by tenant, issuer, client id. */
export async function listPlatforms(q: Queryable, tenantId?: string): Promise<Platform[]> {
  return tenantId === undefined
    ? q.query<Platform>(`${SELECT} order by t.slug, p.issuer, p.client_id`)
    : q.query<Platform>(`${SELECT} where p.tenant_id = $1 order by p.issuer, p.client_id`, [tenantId]);
}

/** Remove tenant `tenantId`'s registration of issuer + client id (its deployments go with it); false when there is none. */
export async function removePlatform(q: Queryable, tenantId: string, issuer: string, clientId: string): Promise<boolean> {
  const rows = await q.query('delete from lti_platforms where tenant_id = $1 and issuer = $2 and client_id = $3 returning id', [tenantId, issuer, clientId]);
  return rows.length > 0;
}

/**
 * The registration of issuer + client id (whatever the tenant), or undefined. `clientId`
 * undefined: the platform's only registration with that issuer (a login may omit `client_id`
 * — LTI Core 1.3 §5.1.1.1 makes it optional); undefined when there are several.
 */
export async function findPlatform(q: Queryable, issuer: string, clientId: string | undefined): Promise<Platform | undefined> {
  const rows =
    clientId === undefined
      ? await q.query<Platform>(`${SELECT} where p.issuer = $1 limit 2`, [issuer])
      : await q.query<Platform>(`${SELECT} where p.issuer = $1 and p.client_id = $2`, [issuer, clientId]);
  return rows.length === 1 ? rows[0] : undefined;
}

/** Tenant `tenantId`'s registration `id` with its deployments (a launch's one read of it), or undefined. */
export async function platformById(q: Queryable, tenantId: string, id: string): Promise<Platform | undefined> {
  const [row] = await q.query<Platform>(`${SELECT} where p.tenant_id = $1 and p.id = $2`, [tenantId, id]);
  return row;
}

/**
 * Whether `deploymentId` is accepted for `platform` (as read with its deployments: no query) —
 * registered, or any deployment id for a dynamic registration without one (`any_deployment`).
 */
export function hasDeployment(platform: Pick<Platform, 'deployments' | 'any_deployment'>, deploymentId: string): boolean {
  return platform.any_deployment === true || platform.deployments.includes(deploymentId);
}
