/**
 * Service access tokens for LTI Advantage services (AGS, NRPS): the OAuth 2 client-credentials
 * grant with a JWT client assertion (RFC 6749 §4.4, RFC 7523 §2.2; 1EdTech Security Framework
 * 1.0 §4.1). The assertion is signed RS256 with the tool's current key (keys.ts, `kid` in the
 * header): `iss` = `sub` = the registration's client id, `aud` = its token audience when set
 * (Brightspace) else its token URL — one string, never an array (Brightspace answers 500 to one) —
 * `iat`, `exp` (`TOKEN_LIFETIME_SECONDS` = 5 minutes, inside what the published retired keys
 * cover), and a random `jti`. The request is a form POST to the token URL through the outbound
 * guard (src/http/outbound.ts) with `scope` = the scopes asked, space-separated.
 *
 * Tokens are cached in the process per (registration, scope set) until `REFRESH_MARGIN_SECONDS`
 * before they expire; `dropServiceToken` forgets one (the platform answered 401 with it).
 * Failures throw `ServiceTokenError` with `status` = the token endpoint's HTTP status when it
 * answered one (a 4xx is the registration's problem, a 5xx or none the platform's outage).
 */
import { randomUUID } from 'node:crypto';
import { SignJWT } from 'jose';
import { z } from 'zod';
import type { Deps } from '../deps.ts';
import { epochSeconds } from '../deps.ts';
import { fetchResource, FetchRefused } from '../http/outbound.ts';
import { currentKey, TOKEN_LIFETIME_SECONDS } from './keys.ts';
import type { Platform } from './platforms.ts';

/** Bound of a token request, in milliseconds. */
export const TOKEN_TIMEOUT_MS = 10_000;
/** A cached token is replaced this long before its `expires_in` runs out, in seconds. */
export const REFRESH_MARGIN_SECONDS = 60;
/** Lifetime assumed when the platform gives no `expires_in`, in seconds. */
const DEFAULT_EXPIRES_SECONDS = 3600;
const CLIENT_ASSERTION_TYPE = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

/** A token request that failed; `status` is the token endpoint's HTTP status when it answered one outside 2xx. */
export class ServiceTokenError extends Error {
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

/** What a registration needs for a token. */
export type TokenPlatform = Pick<Platform, 'id' | 'client_id' | 'token_url' | 'token_audience'>;

const TokenAnswer = z.object({
  access_token: z.string().min(1).max(8192),
  token_type: z.string().optional(),
  expires_in: z.coerce.number().positive().optional(),
  scope: z.string().optional(),
});

const cache = new Map<string, { token: string; expiresAt: number }>();
const keyOf = (p: TokenPlatform, scopes: string[]) => `${p.id}\n${p.token_url}\n${p.client_id}\n${[...new Set(scopes)].sort().join(' ')}`;

/** The signed client assertion for `platform` (RFC 7523 §3), valid `TOKEN_LIFETIME_SECONDS`. */
export async function clientAssertion(deps: Pick<Deps, 'db' | 'now'>, platform: TokenPlatform): Promise<string> {
  const key = await currentKey(deps.db);
  const now = epochSeconds(deps.now());
  return new SignJWT({})
    .setProtectedHeader({ alg: 'RS256', kid: key.kid, typ: 'JWT' })
    .setIssuer(platform.client_id)
    .setSubject(platform.client_id)
    .setAudience(platform.token_audience ?? platform.token_url)
    .setIssuedAt(now)
    .setExpirationTime(now + TOKEN_LIFETIME_SECONDS)
    .setJti(randomUUID())
    .sign(key.privateKey);
}

/**
 * An access token of `platform` for `scopes` (cached; header). Throws `ServiceTokenError`.
 */
export async function serviceToken(deps: Pick<Deps, 'db' | 'now' | 'config'>, platform: TokenPlatform, scopes: string[]): Promise<string> {
  const key = keyOf(platform, scopes);
  const now = deps.now().getTime();
  const kept = cache.get(key);
  if (kept && kept.expiresAt - REFRESH_MARGIN_SECONDS * 1000 > now) return kept.token;
  const form = new URLSearchParams({
    grant_type: 'client_credentials',
    client_assertion_type: CLIENT_ASSERTION_TYPE,
    client_assertion: await clientAssertion(deps, platform),
    scope: [...new Set(scopes)].join(' '),
  });
  let body: Buffer;
  try {
    const r = await fetchResource(platform.token_url, {
      allowPrivate: deps.config.fetchAllowPrivate,
      ca: deps.config.fetchCa,
      timeoutMs: TOKEN_TIMEOUT_MS,
      maxBytes: 64 * 1024,
      maxRedirects: 0,
      method: 'POST',
      body: form.toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      accept: () => true,
      acceptHeader: 'application/json',
    });
    body = r.body;
  } catch (err) {
    if (err instanceof FetchRefused) throw new ServiceTokenError(`the platform's token endpoint: ${err.message}`, err.status);
    throw err;
  }
  let answer: z.infer<typeof TokenAnswer>;
  try {
    answer = TokenAnswer.parse(JSON.parse(body.toString('utf8')));
  } catch {
    throw new ServiceTokenError("the platform's token endpoint answered something that is not a token");
  }
  const expiresAt = deps.now().getTime() + (answer.expires_in ?? DEFAULT_EXPIRES_SECONDS) * 1000;
  cache.set(key, { token: answer.access_token, expiresAt });
  if (cache.size > 1000) cache.delete(cache.keys().next().value!);
  return answer.access_token;
}

/** Forget the cached token of `platform` for `scopes` (the platform refused it). */
export function dropServiceToken(platform: TokenPlatform, scopes: string[]): void {
  cache.delete(keyOf(platform, scopes));
}

/** Bound of one service request (a score, a line item, a roster page), in milliseconds. */
export const SERVICE_TIMEOUT_MS = 15_000;

/** A service answer: status, the body as text, the response headers. */
export interface ServiceAnswer {
  status: number;
  text: string;
  headers: Record<string, string | string[] | undefined>;
}

/**
 * One request to a platform's service URL with a bearer token for `scopes` (through the outbound
 * guard; no redirects followed). A 401 drops the token and tries once more with a new one.
 * Throws `ServiceTokenError` (`status` = the HTTP status when the platform answered one outside 2xx).
 */
export async function callService(
  deps: Pick<Deps, 'db' | 'now' | 'config'>,
  platform: TokenPlatform,
  scopes: string[],
  url: string,
  request: { method?: 'GET' | 'POST'; body?: string; contentType?: string; accept: string; maxBytes?: number },
): Promise<ServiceAnswer> {
  for (let attempt = 0; ; attempt++) {
    const token = await serviceToken(deps, platform, scopes);
    try {
      const r = await fetchResource(url, {
        allowPrivate: deps.config.fetchAllowPrivate,
        ca: deps.config.fetchCa,
        timeoutMs: SERVICE_TIMEOUT_MS,
        maxBytes: request.maxBytes ?? 1024 * 1024,
        maxRedirects: 0,
        method: request.method ?? 'GET',
        body: request.body,
        headers: { authorization: `Bearer ${token}`, ...(request.contentType && { 'content-type': request.contentType }) },
        accept: () => true,
        acceptHeader: request.accept,
      });
      if (r.truncated) throw new ServiceTokenError('the platform answered more than the tool reads');
      return { status: r.status, text: r.body.toString('utf8'), headers: r.headers };
    } catch (err) {
      if (!(err instanceof FetchRefused)) throw err;
      if (err.status === 401 && attempt === 0) {
        dropServiceToken(platform, scopes);
        continue;
      }
      throw new ServiceTokenError(`the platform: ${err.message}`, err.status);
    }
  }
}
