/**
 * Session JWTs (DESIGN §5, §6): HS256 with the project's JWT secret.
 *
 * Audiences (DESIGN §8 "Token audiences"): first-party sessions carry `aud` "authenticated";
 * sessions an OAuth client started (issue #12) carry `aud` = the `/mcp` resource URL (RFC 8707)
 * plus `client_id` and `scope` claims. Each surface names the audiences it accepts.
 *
 * `verifyAccessToken` accepts only HS256 (any other `alg`, including `none` and RS256 with the
 * secret as a key, is refused by jose's algorithm allow-list), checks the signature, `exp`
 * (required), `aud` (one of the surface's), and requires `sub` and `session_id`. It does not
 * check that the session still exists: see `sessions.ts#verifySession`, which every surface uses.
 */
import { SignJWT, jwtVerify, errors as joseErrors } from 'jose';
import type { Deps } from '../deps.ts';
import { epochSeconds } from '../deps.ts';

export const AUDIENCE = 'authenticated';

/** The access-token claims of DESIGN §6 (GoTrue's AccessTokenClaims). */
export interface AccessTokenClaims {
  sub: string;
  aud: string;
  role: string;
  exp: number;
  iat: number;
  iss: string;
  email: string;
  phone: string;
  app_metadata: Record<string, unknown>;
  user_metadata: Record<string, unknown>;
  session_id: string;
  aal: string;
  amr: { method: string; timestamp: number }[];
  is_anonymous: boolean;
  /** The tenant an embed session is bound to (absent for password sign-ins): RLS acts in it only. */
  tenant_id?: string;
  /** The OAuth client that started the session (OAuth access tokens only). */
  client_id?: string;
  /** The granted scopes, space-separated (OAuth access tokens only). */
  scope?: string;
}

export class TokenError extends Error {
  constructor(
    message: string,
    readonly reason: 'expired' | 'invalid',
  ) {
    super(message);
  }
}

const key = (secret: string) => new TextEncoder().encode(secret);

export function issuer(deps: Pick<Deps, 'config'>): string {
  return `${deps.config.baseUrl}/auth/v1`;
}

/** The `/mcp` resource URL: the audience of OAuth access tokens and the RFC 8707 `resource`. */
export function mcpResource(deps: Pick<Deps, 'config'>): string {
  return `${deps.config.baseUrl.replace(/\/+$/, '')}/mcp`;
}

/**
 * Sign claims (minus iat/exp/iss, which are set here) into an HS256 access token that
 * expires after `accessTokenTtl` seconds, or at `notAfter` (epoch seconds: the end of the
 * session's maximum lifetime) if that comes first. `aud` defaults to "authenticated".
 * Returns the token with its `iat` and `exp` (epoch seconds), read from one clock reading so a
 * response's `expires_in` is exactly `exp − iat`.
 */
export async function signAccessToken(
  deps: Pick<Deps, 'config' | 'now'>,
  claims: Omit<AccessTokenClaims, 'iat' | 'exp' | 'iss' | 'aud'> & { aud?: string },
  notAfter?: number,
): Promise<{ token: string; issuedAt: number; expiresAt: number }> {
  const iat = epochSeconds(deps.now());
  const expiresAt = Math.min(iat + deps.config.accessTokenTtl, notAfter ?? Number.POSITIVE_INFINITY);
  const token = await new SignJWT({ ...claims, aud: claims.aud ?? AUDIENCE, iss: issuer(deps) })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuedAt(iat)
    .setExpirationTime(expiresAt)
    .sign(key(deps.config.jwtSecret));
  return { token, issuedAt: iat, expiresAt };
}

/**
 * Verify an access token for a surface that accepts `audiences` (default: first-party only);
 * throws `TokenError` (reason `expired` or `invalid`; a token of another audience is invalid).
 */
export async function verifyAccessToken(deps: Pick<Deps, 'config' | 'now'>, token: string, audiences: string[] = [AUDIENCE]): Promise<AccessTokenClaims> {
  try {
    const { payload } = await jwtVerify(token, key(deps.config.jwtSecret), {
      algorithms: ['HS256'],
      audience: audiences,
      requiredClaims: ['exp', 'sub', 'session_id'],
      currentDate: deps.now(),
    });
    return payload as unknown as AccessTokenClaims;
  } catch (err) {
    if (err instanceof joseErrors.JWTExpired) throw new TokenError('token has expired', 'expired');
    throw new TokenError('invalid JWT: unable to verify the token', 'invalid');
  }
}
