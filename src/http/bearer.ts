/**
 * The one parser of bearer credentials, for every surface (identity gateway, admin ops, MCP
 * authoring, results API, embed).
 *
 * RFC 6750 §2.1: `Authorization: Bearer <b64token>`, where the scheme is case-insensitive
 * (RFC 9110 §11.1), separated from the token by one or more spaces (RFC 9110 §11.4: `1*SP`), and
 * `b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="`. Node already strips
 * the optional whitespace around a header value. Anything else — another scheme, no token, two
 * tokens, a tab, a character outside b64token, a repeated header — is not a bearer credential.
 */

const BEARER_RE = /^Bearer +([A-Za-z0-9\-._~+/]+=*)$/i;

/**
 * The token of an `Authorization` header value, or undefined when the value is absent or is not
 * a well-formed RFC 6750 bearer credential. Never throws.
 */
export function bearerToken(authorization: string | string[] | undefined): string | undefined {
  return typeof authorization === 'string' ? BEARER_RE.exec(authorization)?.[1] : undefined;
}
