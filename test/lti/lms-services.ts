/**
 * The loopback LMS's LTI Advantage services (issue #22), added to a `TestLms` (lms.ts) with
 * `route`: built from AGS 2.0, NRPS 2.0 and the 1EdTech Security Framework 1.0 §4.1.
 *
 *   POST /token                      client-credentials grant: verifies the tool's RFC 7523 client
 *                                    assertion against the tool's `/lti/v1/jwks` (RS256, kid,
 *                                    iss = sub = client id, aud, exp within 5 minutes, jti once) and
 *                                    answers a bearer token for the scopes asked
 *   GET  /lineitems[?resource_id=]   the course's line items (filtered), container media type
 *   POST /lineitems                  a new line item (its id: `<origin>/lineitems/<n>`)
 *   POST /lineitems/<n>/scores       a score: checked (bearer token with the score scope, media type)
 *                                    and recorded in `scores`
 *   GET  /memberships                the course roster, `pageSize` members a page, `Link: rel="next"`
 *
 * `mode` makes the services (not /token unless `tokenMode`) answer: 'ok', 'down' (connection
 * dropped), 'garbage' (200 with HTML), 'slow' (no answer for 20 s), 'error' (503), 'refuse' (400).
 */
import type http from 'node:http';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { randomBytes } from 'node:crypto';
import type { TestLms } from './lms.ts';

export type ServiceMode = 'ok' | 'down' | 'garbage' | 'slow' | 'error' | 'refuse';

export interface LineItem {
  id: string;
  scoreMaximum: number;
  label: string;
  resourceId?: string;
  resourceLinkId?: string;
}

export interface ReceivedScore {
  lineitem: string;
  /** When it arrived (ms since the epoch). */
  at: number;
  score: Record<string, any>;
  contentType: string;
}

export interface Member {
  user_id: string;
  roles: string[];
  status?: string;
  name?: string;
  given_name?: string;
  family_name?: string;
  email?: string;
}

export interface LmsServices {
  lineItems: LineItem[];
  scores: ReceivedScore[];
  /** Every token request's verified assertion claims (and the scope asked). */
  tokenRequests: { claims: Record<string, unknown>; scope: string }[];
  /** Requests refused by the token endpoint, with why. */
  tokenRefusals: string[];
  members: Member[];
  pageSize: number;
  /** Roster pages served. */
  memberPages: number;
  mode: ServiceMode;
  tokenMode: ServiceMode;
  setMode(mode: ServiceMode): void;
  setTokenMode(mode: ServiceMode): void;
  /** Forget every token issued (the next request with one gets 401). */
  revokeTokens(): void;
  /** Add a line item (as the platform makes one when an instructor places a link). */
  addLineItem(item: Omit<LineItem, 'id'>): LineItem;
  /** The claim a launch carries (AGS 2.0 §3.1): with `lineitem` unless `withLineItem` is false. */
  agsClaim(p?: { lineitem?: string; scopes?: string[] }): Record<string, unknown>;
  membershipsUrl: string;
  /** The aud the token endpoint expects (default: the token URL). */
  expectedAudience: string;
}

export const AGS_SCOPES = [
  'https://purl.imsglobal.org/spec/lti-ags/scope/lineitem',
  'https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly',
  'https://purl.imsglobal.org/spec/lti-ags/scope/score',
];
const NRPS_SCOPE = 'https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly';

async function readBody(req: http.IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req as AsyncIterable<Buffer>) chunks.push(c);
  return Buffer.concat(chunks).toString('utf8');
}

/** Add the services to `lms`; `toolUrl()` is the tool's base URL (its JWK set at /lti/v1/jwks). */
export function addLmsServices(lms: TestLms, toolUrl: () => string): LmsServices {
  const tokens = new Map<string, string[]>();
  const jtis = new Set<string>();
  let jwks: ReturnType<typeof createRemoteJWKSet> | undefined;
  let jwksFor = '';
  const s: LmsServices = {
    lineItems: [],
    scores: [],
    tokenRequests: [],
    tokenRefusals: [],
    members: [],
    pageSize: 2,
    memberPages: 0,
    mode: 'ok',
    tokenMode: 'ok',
    setMode: (m) => {
      s.mode = m;
    },
    setTokenMode: (m) => {
      s.tokenMode = m;
    },
    revokeTokens: () => tokens.clear(),
    addLineItem: (item) => {
      const li = { id: `${lms.origin}/lineitems/${s.lineItems.length + 1}`, ...item };
      s.lineItems.push(li);
      lms.route(`/lineitems/${s.lineItems.length}/scores`, scoresHandler(li));
      return li;
    },
    agsClaim: (p = {}) => ({
      scope: p.scopes ?? AGS_SCOPES,
      lineitems: `${lms.origin}/lineitems`,
      ...(p.lineitem && { lineitem: p.lineitem }),
    }),
    membershipsUrl: `${lms.origin}/memberships`,
    expectedAudience: lms.registration.token_url,
  };

  /** Misbehave per `mode`; true when the request was answered. */
  const misbehave = async (mode: ServiceMode, req: http.IncomingMessage, res: http.ServerResponse): Promise<boolean> => {
    if (mode === 'ok') return false;
    if (mode === 'down') {
      req.socket.destroy();
      return true;
    }
    if (mode === 'slow') await new Promise((r) => setTimeout(r, 20_000));
    if (mode === 'garbage') {
      res.setHeader('content-type', 'text/html');
      res.end('<html>oops</html>');
      return true;
    }
    res.statusCode = mode === 'refuse' ? 400 : 503;
    res.end(mode === 'refuse' ? '{"error":"invalid_request"}' : 'unavailable');
    return true;
  };

  const authorized = (req: http.IncomingMessage, res: http.ServerResponse, scope: string | string[]): boolean => {
    const token = /^Bearer (.+)$/.exec(String(req.headers.authorization ?? ''))?.[1];
    const granted = token ? tokens.get(token) : undefined;
    if (!granted || ![scope].flat().some((x) => granted.includes(x))) {
      res.statusCode = 401;
      res.end('{"error":"invalid_token"}');
      return false;
    }
    return true;
  };

  const json = (res: http.ServerResponse, status: number, type: string, body: unknown, headers: Record<string, string> = {}) => {
    res.statusCode = status;
    res.setHeader('content-type', type);
    for (const [k, v] of Object.entries(headers)) res.setHeader(k, v);
    res.end(JSON.stringify(body));
  };

  lms.route('/token', async (req, res) => {
    if (await misbehave(s.tokenMode, req, res)) return;
    const form = new URLSearchParams(await readBody(req));
    const refuse = (why: string) => {
      s.tokenRefusals.push(why);
      json(res, 400, 'application/json', { error: 'invalid_client', error_description: why });
    };
    if (req.method !== 'POST' || form.get('grant_type') !== 'client_credentials') return refuse('grant_type');
    if (form.get('client_assertion_type') !== 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer') return refuse('client_assertion_type');
    if (jwksFor !== toolUrl()) {
      jwksFor = toolUrl();
      jwks = createRemoteJWKSet(new URL(`${jwksFor}/lti/v1/jwks`));
    }
    let claims: Record<string, unknown>;
    try {
      const v = await jwtVerify(form.get('client_assertion') ?? '', jwks!, {
        algorithms: ['RS256'],
        issuer: lms.clientId,
        subject: lms.clientId,
        audience: s.expectedAudience,
        maxTokenAge: 300,
        requiredClaims: ['jti', 'exp', 'iat'],
      });
      if (!v.protectedHeader.kid) return refuse('no kid');
      if (typeof v.payload.aud !== 'string') return refuse('aud is not a string');
      if ((v.payload.exp ?? 0) - (v.payload.iat ?? 0) > 300) return refuse('exp more than 5 minutes after iat');
      if (jtis.has(v.payload.jti!)) return refuse('jti replayed');
      jtis.add(v.payload.jti!);
      claims = v.payload as Record<string, unknown>;
    } catch (err) {
      return refuse(`assertion: ${(err as Error).message}`);
    }
    const scope = form.get('scope') ?? '';
    const allowed = [...AGS_SCOPES, NRPS_SCOPE, 'https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly'];
    const asked = scope.split(' ').filter(Boolean);
    if (!asked.length || asked.some((x) => !allowed.includes(x))) return refuse(`scope ${scope}`);
    s.tokenRequests.push({ claims, scope });
    const token = randomBytes(16).toString('hex');
    tokens.set(token, asked);
    json(res, 200, 'application/json', { access_token: token, token_type: 'Bearer', expires_in: 3600, scope });
  });

  lms.route('/lineitems', async (req, res, url) => {
    if (await misbehave(s.mode, req, res)) return;
    if (req.method === 'POST') {
      if (!authorized(req, res, AGS_SCOPES[0]!)) return;
      if (!String(req.headers['content-type']).startsWith('application/vnd.ims.lis.v2.lineitem+json'))
        return json(res, 415, 'application/json', { error: 'media type' });
      const body = JSON.parse(await readBody(req));
      const li = s.addLineItem({ scoreMaximum: body.scoreMaximum, label: body.label, resourceId: body.resourceId, resourceLinkId: body.resourceLinkId });
      return json(res, 201, 'application/vnd.ims.lis.v2.lineitem+json', li);
    }
    if (!authorized(req, res, [AGS_SCOPES[0]!, 'https://purl.imsglobal.org/spec/lti-ags/scope/lineitem.readonly'])) return;
    const rid = url.searchParams.get('resource_id');
    json(
      res,
      200,
      'application/vnd.ims.lis.v2.lineitemcontainer+json',
      s.lineItems.filter((li) => !rid || li.resourceId === rid),
    );
  });

  const scoresHandler = (li: LineItem) => async (req: http.IncomingMessage, res: http.ServerResponse) => {
    if (await misbehave(s.mode, req, res)) return;
    if (req.method !== 'POST' || !authorized(req, res, AGS_SCOPES[2]!)) return;
    const contentType = String(req.headers['content-type'] ?? '');
    if (contentType !== 'application/vnd.ims.lis.v1.score+json') return json(res, 415, 'application/json', { error: 'media type' });
    s.scores.push({ lineitem: li.id, at: Date.now(), score: JSON.parse(await readBody(req)), contentType });
    res.statusCode = 200;
    res.setHeader('content-type', 'application/json');
    res.end('{}');
  };

  lms.route('/memberships', async (req, res, url) => {
    if (await misbehave(s.mode, req, res)) return;
    if (!authorized(req, res, NRPS_SCOPE)) return;
    const page = Number(url.searchParams.get('page') ?? '1');
    s.memberPages++;
    const slice = s.members.slice((page - 1) * s.pageSize, page * s.pageSize);
    const more = page * s.pageSize < s.members.length;
    json(
      res,
      200,
      'application/vnd.ims.lti-nrps.v2.membershipcontainer+json',
      { id: `${lms.origin}/memberships`, context: { id: 'course-1', title: 'Systems design' }, members: slice },
      more ? { link: `<${lms.origin}/memberships?page=${page + 1}>; rel="next"` } : {},
    );
  });
  return s;
}
