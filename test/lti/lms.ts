/**
 * A loopback LMS for the LTI tests (issue #22): its own node:http server on 127.0.0.1 (the tool is
 * served on `localhost`: another site), built from LTI Core 1.3 and the Security Framework:
 *
 *   GET  /course?activity=<id>&sub=<sub>  a course page framing the tool: the iframe opens the tool's
 *                                         login URL (third-party initiated login); `&post` posts the
 *                                         login into the frame instead, as Canvas does (the tool then
 *                                         answers with a page, whose frame-ancestors apply)
 *   GET  /auth  (or POST)                 the OIDC authorization endpoint: answers with a page that
 *                                         form-posts an id_token (signed with the LMS's RS256 key)
 *                                         and the state to the redirect_uri
 *   GET  /jwks                            its public keys; `keysMode` makes it answer garbage, slowly
 *                                         or not at all
 *
 * Other endpoints (AGS token/line items/scores, NRPS memberships, dynamic registration) are added
 * by their own modules with `route(path, handler)`; the handler gets the parsed URL.
 *
 * `idToken(claims, header)` signs a token as the LMS does, for HTTP-level tests; `launchClaims`
 * are the claims of a learner's resource-link launch, to override per test.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK, type JWTPayload } from 'jose';

export const ISSUER_PATH = '';
export const CLIENT_ID = 'tool-client-1';
export const DEPLOYMENT_ID = 'deployment-1';

export interface TestLms {
  origin: string;
  /** The platform's issuer (its origin). */
  issuer: string;
  clientId: string;
  /** What `svc lti platforms add` takes for this LMS. */
  registration: { issuer: string; client_id: string; auth_url: string; token_url: string; jwks_url: string; deployments: string[] };
  /** Sign `claims` as the LMS (RS256, its kid unless `header` says otherwise). */
  idToken(claims: JWTPayload, header?: Record<string, unknown>, key?: CryptoKey): Promise<string>;
  /**
   * A learner's resource-link launch claims for `activity`, `sub`, `nonce` (override per test);
   * `target_link_uri` is `target`, else the tool's launch URL (`setTool`), as the login named it.
   */
  launchClaims(p: { activity: string; sub: string; nonce: string; target?: string }): JWTPayload;
  /** The tool's base URL, whose `/lti/v1/launch` the launches target (LTI Core 1.3 §5.3.4: the login's target_link_uri). */
  setTool(baseUrl: string): void;
  /** The course page that frames the tool's login, for a browser. */
  coursePage(p: { activity: string; sub: string; toolUrl: string; storage?: boolean; post?: boolean }): string;
  /** The JWKS endpoint's behaviour: 'ok' | 'garbage' | 'slow' | 'down'. */
  keysMode: 'ok' | 'garbage' | 'slow' | 'down';
  /** Set `keysMode` (through a fixture handle, which cannot assign). */
  setKeysMode(mode: TestLms['keysMode']): void;
  /** Claims changes the authorization endpoint applies (a browser test's misbehaving LMS). */
  tamper?: (claims: JWTPayload) => JWTPayload;
  /** Set `tamper` (through a fixture handle, which cannot assign). */
  setTamper(fn: TestLms['tamper']): void;
  publicJwk: JWK;
  kid: string;
  /** Serve `path` (exact pathname) with `handler`, replacing an earlier one. */
  route(path: string, handler: LmsHandler): void;
  close(): Promise<void>;
}

/** An extra LMS endpoint (see `TestLms.route`). */
export type LmsHandler = (req: http.IncomingMessage, res: http.ServerResponse, url: URL) => void | Promise<void>;

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');

export async function startTestLms(): Promise<TestLms> {
  const { publicKey, privateKey } = await generateKeyPair('RS256', { extractable: true });
  const kid = `lms-${randomUUID().slice(0, 8)}`;
  const publicJwk = { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' };
  const launches = new Map<string, { activity: string; sub: string; target: string }>();
  let toolLaunch = 'https://tool.example/lti/v1/launch';
  const extra = new Map<string, LmsHandler>();
  let lms!: TestLms;
  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', lms.origin);
    if (url.pathname === '/jwks') {
      if (lms.keysMode === 'down') return req.socket.destroy();
      if (lms.keysMode === 'slow') await new Promise((r) => setTimeout(r, 8_000));
      res.setHeader('content-type', 'application/json');
      return res.end(lms.keysMode === 'garbage' ? '<html>oops</html>' : JSON.stringify({ keys: [publicJwk] }));
    }
    if (url.pathname === '/course') {
      const hint = randomUUID();
      launches.set(hint, {
        activity: url.searchParams.get('activity') ?? '',
        sub: url.searchParams.get('sub') ?? '',
        target: `${url.searchParams.get('tool') ?? ''}/lti/v1/launch`,
      });
      res.setHeader('content-type', 'text/html; charset=utf-8');
      return res.end(
        lms.coursePage({
          activity: hint,
          sub: url.searchParams.get('sub') ?? '',
          toolUrl: url.searchParams.get('tool') ?? '',
          storage: url.searchParams.has('storage'),
          post: url.searchParams.has('post'),
        }),
      );
    }
    if (url.pathname === '/auth') {
      // The authentication request comes as a redirect (GET, query) or, from the tool's login page, a form post (OIDC Core §3.1.2.1).
      const q = req.method === 'POST' ? new URLSearchParams(Buffer.concat(await req.toArray()).toString()) : url.searchParams;
      const launch = launches.get(q.get('lti_message_hint') ?? '');
      const ok =
        q.get('scope') === 'openid' &&
        q.get('response_type') === 'id_token' &&
        q.get('response_mode') === 'form_post' &&
        q.get('prompt') === 'none' &&
        q.get('client_id') === CLIENT_ID;
      if (!launch || !ok || q.get('login_hint') !== launch.sub) {
        res.statusCode = 400;
        return res.end('bad authentication request');
      }
      let claims = lms.launchClaims({ activity: launch.activity, sub: launch.sub, nonce: q.get('nonce') ?? '', target: launch.target });
      if (lms.tamper) claims = lms.tamper(claims);
      const token = await lms.idToken(claims);
      res.setHeader('content-type', 'text/html; charset=utf-8');
      return res.end(
        `<!doctype html><html lang="en"><title>LMS</title><body><form method="post" action="${esc(q.get('redirect_uri') ?? '')}">` +
          `<input type="hidden" name="id_token" value="${esc(token)}"><input type="hidden" name="state" value="${esc(q.get('state') ?? '')}"></form>` +
          `<script>document.forms[0].submit()</script></body></html>`,
      );
    }
    const handler = extra.get(url.pathname);
    if (handler) return handler(req, res, url);
    res.statusCode = 404;
    res.end('not found');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  lms = {
    origin,
    issuer: origin,
    clientId: CLIENT_ID,
    registration: {
      issuer: origin,
      client_id: CLIENT_ID,
      auth_url: `${origin}/auth`,
      token_url: `${origin}/token`,
      jwks_url: `${origin}/jwks`,
      deployments: [DEPLOYMENT_ID],
    },
    keysMode: 'ok',
    setKeysMode: (mode) => {
      lms.keysMode = mode;
    },
    setTamper: (fn) => {
      lms.tamper = fn;
    },
    publicJwk,
    kid,
    idToken: (claims, header = {}, key = privateKey) => new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid, typ: 'JWT', ...header } as never).sign(key),
    setTool: (baseUrl) => {
      toolLaunch = `${baseUrl}/lti/v1/launch`;
    },
    launchClaims: ({ activity, sub, nonce, target = toolLaunch }) => {
      const now = Math.floor(Date.now() / 1000);
      return {
        iss: origin,
        aud: CLIENT_ID,
        sub,
        iat: now,
        exp: now + 300,
        nonce,
        name: 'Ada Lovelace',
        given_name: 'Ada',
        family_name: 'Lovelace',
        email: `${sub}@school.example`,
        'https://purl.imsglobal.org/spec/lti/claim/message_type': 'LtiResourceLinkRequest',
        'https://purl.imsglobal.org/spec/lti/claim/version': '1.3.0',
        'https://purl.imsglobal.org/spec/lti/claim/deployment_id': DEPLOYMENT_ID,
        'https://purl.imsglobal.org/spec/lti/claim/target_link_uri': target,
        'https://purl.imsglobal.org/spec/lti/claim/resource_link': { id: `link-${activity.slice(0, 8)}`, title: 'Design note' },
        'https://purl.imsglobal.org/spec/lti/claim/roles': ['http://purl.imsglobal.org/vocab/lis/v2/membership#Learner'],
        'https://purl.imsglobal.org/spec/lti/claim/context': { id: 'course-1', title: 'Systems design' },
        'https://purl.imsglobal.org/spec/lti/claim/custom': { activity_id: activity },
        'https://purl.imsglobal.org/spec/lti/claim/launch_presentation': { document_target: 'iframe', return_url: `${origin}/course` },
      };
    },
    coursePage: ({ activity, sub, toolUrl, storage, post }) => {
      const login = new URL(`${toolUrl}/lti/v1/login`);
      for (const [k, v] of Object.entries({
        iss: origin,
        login_hint: sub,
        target_link_uri: `${toolUrl}/lti/v1/launch`,
        lti_message_hint: activity,
        client_id: CLIENT_ID,
        lti_deployment_id: DEPLOYMENT_ID,
      }))
        login.searchParams.set(k, v);
      if (storage) login.searchParams.set('lti_storage_target', '_parent');
      // 1EdTech platform storage (lti.put_data / lti.get_data), kept per origin, as Canvas does it; the put
      // is answered after 1 s, so a test can drop the tool's cookie meanwhile (a browser that blocks it).
      const platformStorage = storage
        ? `<script>const store={};addEventListener('message',e=>{const m=e.data;if(!m||typeof m.subject!=='string')return;const k=e.origin+'|'+m.key;` +
          `if(m.subject==='lti.put_data'){store[k]=m.value;setTimeout(()=>e.source.postMessage({subject:'lti.put_data.response',message_id:m.message_id,key:m.key,value:m.value},e.origin),1000)}` +
          `if(m.subject==='lti.get_data'){e.source.postMessage({subject:'lti.get_data.response',message_id:m.message_id,key:m.key,value:store[k]},e.origin)}});</script>`
        : '';
      const frame = `<iframe title="Activity" name="tool" ${post ? '' : `src="${esc(login.toString())}" `}style="width:860px;height:1400px;border:0" allow="clipboard-write"></iframe>`;
      const postLogin = post
        ? `<form method="post" action="${esc(`${login.origin}${login.pathname}`)}" target="tool">${[...login.searchParams].map(([k, v]) => `<input type="hidden" name="${esc(k)}" value="${esc(v)}">`).join('')}</form><script>document.forms[0].submit()</script>`
        : '';
      return `<!doctype html><html lang="en"><head><title>Course</title>${platformStorage}</head><body><main><h1>Systems design</h1>${frame}${postLogin}</main></body></html>`;
    },
    route: (path, handler) => void extra.set(path, handler),
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
  return lms;
}
