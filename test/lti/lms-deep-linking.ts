/**
 * The loopback LMS's side of Deep Linking 2.0 (lms.ts `route`):
 *
 *   POST /deep-link-return   the `deep_link_return_url`: reads the form's `JWT`, verifies it as a
 *                            platform must (Deep Linking 2.0 §4.5; Security Framework §5.1.3)
 *                            against the tool's published keys (`<tool>/lti/v1/jwks`, fetched
 *                            every time, so a rotation is seen): RS256 only, the `kid`, `iss` =
 *                            our client id, `aud` = our issuer, `exp`/`iat`; keeps what it got in
 *                            `received` and answers a page naming the placed items (400 with the
 *                            reason when the token does not verify).
 *
 * `install(lms, toolUrl)` adds the route and an authorization-endpoint hook (`lms.tamper`) so a
 * browser test can drive instructor launches from the course page: `/course?activity=deep-link&…`
 * becomes an `LtiDeepLinkingRequest` (settings below), and a `sub` starting with `prof` launches
 * as an Instructor (the preview).
 */
import type http from 'node:http';
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify, type JWTPayload } from 'jose';
import type { TestLms } from './lms.ts';

export const RETURN_PATH = '/deep-link-return';
export const DL_DATA = 'opaque data: 1/2+3 "quoted"';
const LTI = 'https://purl.imsglobal.org/spec/lti/claim/';
export const DL_SETTINGS = 'https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings';
export const INSTRUCTOR = 'http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor';

/** What the return URL got: the verified payload and header, or why it did not verify. */
export type Received = { ok: true; payload: JWTPayload; header: Record<string, unknown> } | { ok: false; error: string };

export interface DeepLinkingLms {
  returnUrl: string;
  received: Received[];
  /** `claims` (a learner's resource-link launch of lms.ts) turned into an instructor's deep-linking request. */
  /** `settings` null: no deep_linking_settings claim; absent: the defaults below. */
  deepLinkClaims(claims: JWTPayload, settings?: Record<string, unknown> | null): JWTPayload;
}

const readBody = (req: http.IncomingMessage) =>
  new Promise<string>((resolve, reject) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => resolve(body));
    req.on('error', reject);
  });

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');

/** Add the deep-linking endpoints to `lms` (the real object, not a fixture handle); `toolUrl()` is the tool's base URL. */
export function installDeepLinking(lms: TestLms, toolUrl: () => string): DeepLinkingLms {
  const returnUrl = `${lms.origin}${RETURN_PATH}`;
  const received: Received[] = [];
  const deepLinkClaims = (
    claims: JWTPayload,
    settings: Record<string, unknown> | null = {
      deep_link_return_url: returnUrl,
      accept_types: ['ltiResourceLink'],
      accept_presentation_document_targets: ['iframe', 'window'],
      accept_multiple: false,
      data: DL_DATA,
    },
  ) => {
    const c: JWTPayload = { ...claims, [`${LTI}message_type`]: 'LtiDeepLinkingRequest', [`${LTI}roles`]: [INSTRUCTOR] };
    delete c[`${LTI}resource_link`];
    delete c[`${LTI}custom`];
    if (settings) c[DL_SETTINGS] = settings;
    return c;
  };
  lms.route(RETURN_PATH, async (req, res) => {
    const form = new URLSearchParams(await readBody(req));
    const jwt = form.get('JWT') ?? '';
    res.setHeader('content-type', 'text/html; charset=utf-8');
    try {
      const header = decodeProtectedHeader(jwt) as Record<string, unknown>;
      const keys = createRemoteJWKSet(new URL(`${toolUrl()}/lti/v1/jwks`), { cacheMaxAge: 0 });
      const { payload } = await jwtVerify(jwt, keys, {
        algorithms: ['RS256'],
        issuer: lms.clientId,
        audience: lms.issuer,
        maxTokenAge: '10m',
        requiredClaims: ['iat', 'exp', 'nonce'],
      });
      received.push({ ok: true, payload, header });
      const items = (payload['https://purl.imsglobal.org/spec/lti-dl/claim/content_items'] as Array<{ title: string }>) ?? [];
      res.end(
        `<!doctype html><html lang="en"><title>Course</title><body><main><h1>Activity placed</h1><ul>${items.map((i) => `<li>${esc(i.title)}</li>`).join('')}</ul></main></body></html>`,
      );
    } catch (err) {
      received.push({ ok: false, error: String(err) });
      res.statusCode = 400;
      res.end(`<!doctype html><html lang="en"><title>Course</title><body><main><h1>Placement refused</h1><p>${esc(String(err))}</p></main></body></html>`);
    }
  });
  lms.tamper = (claims) => {
    const custom = claims[`${LTI}custom`] as { activity_id?: string } | undefined;
    if (custom?.activity_id === 'deep-link') return deepLinkClaims(claims);
    if (typeof claims.sub === 'string' && claims.sub.startsWith('prof')) return { ...claims, [`${LTI}roles`]: [INSTRUCTOR] };
    return claims;
  };
  return { returnUrl, received, deepLinkClaims };
}
