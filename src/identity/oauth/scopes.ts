/**
 * The scopes of OAuth access tokens for `/mcp` and what each lets a client do (shown on the
 * consent page). One scope today: what a signed-in instructor can do through the MCP tools,
 * still limited by RLS to the tenants the user authors.
 *
 * Requested scopes are narrowed to the supported ones (RFC 6749 §3.3 lets the server grant less
 * than asked; the token response says what was granted). An absent or wholly unknown scope gets
 * the default — ChatGPT omits `scope` on reconnect, other hosts ask for `openid profile`.
 */
export const SCOPES: Record<string, string> = {
  authoring: 'Read and change the programs, units, lessons and activities of the tenants you author, acting as you',
};

export const DEFAULT_SCOPE = 'authoring';

export const SUPPORTED_SCOPES = Object.keys(SCOPES);

/** The scope to grant for `requested` (space-separated; may be absent): supported ones, else the default. */
export function grantedScope(requested: string | undefined): string {
  const wanted = (requested ?? '').split(' ').filter((s) => Object.hasOwn(SCOPES, s));
  return wanted.length ? [...new Set(wanted)].join(' ') : DEFAULT_SCOPE;
}

/** True when every scope of `scope` is among `granted`. */
export const scopesCover = (granted: string[], scope: string) => scope.split(' ').every((s) => granted.includes(s));
