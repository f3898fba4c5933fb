/**
 * What an LMS administrator types in to register the tool (`svc lti config`): the URLs of the
 * LTI surface under the service's public base URL (`BASE_URL`). LTI Core 1.3 §5.1.1 (login
 * initiation URL), §5.1.2 (redirect URI), Security Framework 1.0 §6.3 (the tool's JWK set URL).
 */

/** The tool's registration values. */
export interface ToolConfig {
  /** The OpenID Connect login initiation URL (third-party initiated login). */
  login_url: string;
  /** The launch URL, also the one redirect URI to register. */
  launch_url: string;
  redirect_uris: string[];
  /** The tool's public keys (JWK set URL; "public key URL" in Canvas and Moodle). */
  jwks_url: string;
  /** The deep-linking (content selection) URL: the launch URL as well. */
  deep_linking_url: string;
  /** The tool's domain (host[:port] of BASE_URL). */
  domain: string;
  /** The scopes the tool asks for (AGS scores and line items, NRPS memberships). */
  scopes: string[];
}

/** The LTI Advantage scopes the tool uses (AGS 2.0 §3.1, NRPS 2.0 §2). */
export const TOOL_SCOPES = [
  'https://purl.imsglobal.org/spec/lti-ags/scope/lineitem',
  'https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly',
  'https://purl.imsglobal.org/spec/lti-ags/scope/score',
  'https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly',
];

/** The tool's registration values under `baseUrl` (no trailing slash). */
export function toolConfig(baseUrl: string): ToolConfig {
  const base = baseUrl.replace(/\/$/, '');
  const launch = `${base}/lti/v1/launch`;
  return {
    login_url: `${base}/lti/v1/login`,
    launch_url: launch,
    redirect_uris: [launch],
    jwks_url: `${base}/lti/v1/jwks`,
    deep_linking_url: launch,
    domain: new URL(base).host,
    scopes: TOOL_SCOPES,
  };
}
