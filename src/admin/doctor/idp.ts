/**
 * Each tenant's identity provider (tenant_idps, `svc idp set`): its OIDC discovery document when it
 * has one (which must name a `jwks_uri`), then its JWKS (a JSON object with a non-empty `keys`
 * array) — both through the outbound guard (src/http/outbound.ts `fetchResource`), as the
 * service's own fetches of URLs it did not choose, so a URL the service would refuse is reported.
 */
import { fetchResource } from '../../http/outbound.ts';
import type { Db } from '../../db/index.ts';
import { error, ok, type DoctorContext, type Finding } from './types.ts';

const JSON_TYPE = (type: string) => !type || /json/i.test(type);

/** GET `url` as JSON through the outbound guard; throws with the guard's or the parser's reason. */
async function getJson(url: string, ctx: DoctorContext): Promise<Record<string, unknown>> {
  const res = await fetchResource(url, {
    allowPrivate: ctx.config.fetchAllowPrivate,
    timeoutMs: ctx.timeoutMs,
    accept: JSON_TYPE,
    acceptHeader: 'application/json',
  });
  let parsed: unknown;
  try {
    parsed = JSON.parse(res.body.toString('utf8'));
  } catch {
    throw new Error('the answer is not JSON');
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('the answer is not a JSON object');
  return parsed as Record<string, unknown>;
}

/** One tenant's provider. */
async function checkOne(row: { slug: string; issuer: string; jwks_url: string | null; discovery_url: string | null }, ctx: DoctorContext): Promise<Finding> {
  const check = `idp ${row.slug}`;
  const fix = `check that ${row.issuer} is up, or set the right URL: svc idp set ${row.slug} --issuer <url> (--jwks-url <url> | --discovery)`;
  let jwksUrl = row.jwks_url;
  if (!jwksUrl) {
    try {
      const doc = await getJson(row.discovery_url!, ctx);
      if (typeof doc.jwks_uri !== 'string') throw new Error('it names no jwks_uri');
      jwksUrl = doc.jwks_uri;
    } catch (err) {
      return error(check, `discovery ${row.discovery_url} failed: ${(err as Error).message}`, fix);
    }
  }
  try {
    const jwks = await getJson(jwksUrl, ctx);
    if (!Array.isArray(jwks.keys) || jwks.keys.length === 0) throw new Error('it holds no keys');
    return ok(check, `${row.issuer}: ${row.discovery_url ? 'discovery and ' : ''}JWKS answer (${jwks.keys.length} key(s))`);
  } catch (err) {
    return error(check, `JWKS ${jwksUrl} failed: ${(err as Error).message}`, fix);
  }
}

export async function checkIdps(db: Db, ctx: DoctorContext): Promise<Finding[]> {
  const rows = await db.query<{ slug: string; issuer: string; jwks_url: string | null; discovery_url: string | null }>(
    'select t.slug, i.issuer, i.jwks_url, i.discovery_url from tenant_idps i join tenants t on t.id = i.tenant_id order by t.slug',
  );
  if (rows.length === 0) return [ok('idp', 'no tenant has an identity provider (svc idp set)')];
  return Promise.all(rows.map((row) => checkOne(row, ctx)));
}
