/**
 * Redirect URIs of OAuth clients: which may be registered, and when a request's matches.
 *
 * Registration (RFC 7591 §2, OAuth 2.1 §2.3.1, RFC 8252 §7, §8.3): an absolute URI without a
 * fragment or credentials, at most 2,000 characters; `https`; `http` only on a loopback host
 * (`localhost`, `127.0.0.1`, `[::1]`: native apps such as Claude Code listen there); or a native
 * app's private-use scheme (`cursor://…`, `com.example.app:/cb`) — never `javascript:`, `data:`,
 * `vbscript:`, `file:`, `blob:` or `about:`.
 *
 * Matching (OAuth 2.1 §4.1.1, RFC 8252 §7.3): the exact registered string, except that a
 * loopback `http` URI matches on any port (native apps take a free port at each start).
 */
const MAX_LENGTH = 2000;
const REFUSED_SCHEMES = new Set(['javascript:', 'data:', 'vbscript:', 'file:', 'blob:', 'about:', 'filesystem:']);
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

const isLoopbackHttp = (url: URL) => url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname);

/** Why `uri` cannot be registered as a redirect URI, or undefined when it can. */
export function redirectUriProblem(uri: string): string | undefined {
  if (typeof uri !== 'string' || !uri) return 'a redirect URI must be a non-empty string';
  if (uri.length > MAX_LENGTH) return `a redirect URI must be at most ${MAX_LENGTH} characters`;
  if (!URL.canParse(uri)) return `${JSON.stringify(uri.slice(0, 100))} is not an absolute URI`;
  if (uri.includes('#')) return 'a redirect URI must not have a fragment';
  const url = new URL(uri);
  if (REFUSED_SCHEMES.has(url.protocol)) return `the ${url.protocol} scheme is not allowed`;
  if (url.username || url.password) return 'a redirect URI must not carry credentials';
  if (url.protocol === 'http:' && !isLoopbackHttp(url))
    return 'http redirect URIs are allowed only on a loopback host (localhost, 127.0.0.1, [::1]); use https';
  if (url.protocol === 'https:' && !url.hostname) return 'an https redirect URI must name a host';
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this check refuses
  if (/[\u0000-\u001f\u007f\s]/.test(uri)) return 'a redirect URI must not contain spaces or control characters';
  return undefined;
}

/** True when `requested` is one of `registered` (exact, or a loopback http URI on another port). */
export function redirectUriMatches(registered: readonly string[], requested: string): boolean {
  if (registered.includes(requested)) return true;
  if (!URL.canParse(requested) || requested.includes('#')) return false;
  const want = new URL(requested);
  if (!isLoopbackHttp(want) || want.username || want.password) return false;
  return registered.some((r) => {
    if (!URL.canParse(r)) return false;
    const have = new URL(r);
    return isLoopbackHttp(have) && have.hostname === want.hostname && have.pathname === want.pathname && have.search === want.search;
  });
}

/** True when every redirect URI is a loopback one (the consent page warns: a local program). */
export const onlyLoopback = (uris: readonly string[]) => uris.every((u) => URL.canParse(u) && isLoopbackHttp(new URL(u)));
