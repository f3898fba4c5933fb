/**
 * The loopback LMS's side of LTI Dynamic Registration 1.0 (issue #22), added to a `TestLms` with
 * its `route(path, handler)`:
 *
 *   GET  /.well-known/openid-configuration   the platform's OpenID configuration (needs the current
 *                                            registration token as Bearer, as Canvas does)
 *   POST /lti/register                       the registration endpoint: checks the Bearer token,
 *                                            keeps the tool's request, answers with the client id
 *                                            and (unless `deploymentId` is null) a deployment id
 *   GET  /admin/add-tool?url=<tool url>       an admin page that opens the tool's registration URL
 *                                            with `openid_configuration` and `registration_token`
 *                                            in an iframe and shows "Closed by the tool" when the
 *                                            tool posts `org.imsglobal.lti.close`
 *
 * `mode` makes the configuration or the registration misbehave: an issuer on another host,
 * garbage, slow, down, the registration refused (400).
 */
import type http from 'node:http';
import { randomUUID } from 'node:crypto';
import { CLIENT_ID, DEPLOYMENT_ID, type TestLms } from './lms.ts';

export type RegistrationMode = 'ok' | 'issuer-mismatch' | 'garbage' | 'no-registration-endpoint' | 'slow' | 'down' | 'refuse' | 'answer-garbage';

export interface LmsRegistration {
  /** The `openid_configuration` URL the LMS passes. */
  configUrl: string;
  /** The registration token the LMS issued last (a new one per `newToken`). */
  token: string;
  newToken(): string;
  mode: RegistrationMode;
  setMode(mode: RegistrationMode): void;
  /** The deployment id the registration answers with (null: none, as Canvas). */
  deploymentId: string | null;
  setDeploymentId(id: string | null): void;
  /** The tool's registration requests received, with their Authorization header. */
  requests: Array<{ authorization: string | undefined; body: Record<string, unknown> }>;
  /** Hits on the configuration endpoint. */
  configHits: number;
  /** The tool URL to open with the LMS's parameters. */
  openUrl(toolUrl: string): string;
  /** The admin page (for a browser) that opens `toolUrl` in a frame. */
  adminPage(toolUrl: string): string;
}

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;');

async function readBody(req: http.IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** Add the dynamic-registration endpoints to `lms`. */
export function addRegistration(lms: TestLms): LmsRegistration {
  const reg: LmsRegistration = {
    configUrl: `${lms.origin}/.well-known/openid-configuration`,
    token: randomUUID(),
    newToken: () => {
      reg.token = randomUUID();
      return reg.token;
    },
    mode: 'ok',
    setMode: (mode) => {
      reg.mode = mode;
    },
    deploymentId: DEPLOYMENT_ID,
    setDeploymentId: (id) => {
      reg.deploymentId = id;
    },
    requests: [],
    configHits: 0,
    openUrl: (toolUrl) =>
      `${toolUrl}${toolUrl.includes('?') ? '&' : '?'}${new URLSearchParams({ openid_configuration: reg.configUrl, registration_token: reg.token })}`,
    adminPage: (toolUrl) => `${lms.origin}/admin/add-tool?${new URLSearchParams({ url: toolUrl })}`,
  };
  const bearerOk = (req: http.IncomingMessage) => req.headers.authorization === `Bearer ${reg.token}`;

  lms.route('/.well-known/openid-configuration', async (req, res): Promise<void> => {
    reg.configHits++;
    if (reg.mode === 'down') return void req.socket.destroy();
    if (reg.mode === 'slow') await new Promise((r) => setTimeout(r, 20_000));
    if (!bearerOk(req)) {
      res.statusCode = 401;
      return void res.end('{"error":"invalid registration token"}');
    }
    res.setHeader('content-type', 'application/json');
    if (reg.mode === 'garbage') return void res.end('<html>maintenance</html>');
    const issuer = reg.mode === 'issuer-mismatch' ? lms.origin.replace('127.0.0.1', 'localhost') : lms.issuer;
    res.end(
      JSON.stringify({
        issuer,
        authorization_endpoint: `${lms.origin}/auth`,
        token_endpoint: `${lms.origin}/token`,
        token_endpoint_auth_methods_supported: ['private_key_jwt'],
        token_endpoint_auth_signing_alg_values_supported: ['RS256'],
        jwks_uri: `${lms.origin}/jwks`,
        ...(reg.mode !== 'no-registration-endpoint' && { registration_endpoint: `${lms.origin}/lti/register` }),
        authorization_server: `${lms.origin}/token-audience`,
        scopes_supported: ['openid', 'https://purl.imsglobal.org/spec/lti-ags/scope/score'],
        response_types_supported: ['id_token'],
        subject_types_supported: ['public', 'pairwise'],
        id_token_signing_alg_values_supported: ['RS256'],
        claims_supported: ['sub', 'iss', 'name', 'email'],
        'https://purl.imsglobal.org/spec/lti-platform-configuration': {
          product_family_code: 'loopback-lms',
          version: '1.0',
          messages_supported: [{ type: 'LtiResourceLinkRequest' }, { type: 'LtiDeepLinkingRequest' }],
        },
      }),
    );
  });

  lms.route('/lti/register', async (req, res): Promise<void> => {
    const raw = await readBody(req);
    let body: Record<string, unknown> = {};
    try {
      body = JSON.parse(raw);
    } catch {
      // kept as {}
    }
    reg.requests.push({ authorization: req.headers.authorization, body });
    res.setHeader('content-type', 'application/json');
    if (req.method !== 'POST' || !bearerOk(req) || reg.mode === 'refuse') {
      res.statusCode = 400;
      return void res.end('{"error":"invalid_client_metadata"}');
    }
    if (reg.mode === 'answer-garbage') return void res.end('{"registered": true}');
    const tool = body['https://purl.imsglobal.org/spec/lti-tool-configuration'] as Record<string, unknown>;
    res.statusCode = 200;
    res.end(
      JSON.stringify({
        ...body,
        client_id: CLIENT_ID,
        'https://purl.imsglobal.org/spec/lti-tool-configuration': { ...tool, ...(reg.deploymentId !== null && { deployment_id: reg.deploymentId }) },
      }),
    );
  });

  lms.route('/admin/add-tool', (_req, res, url) => {
    const frame = reg.openUrl(url.searchParams.get('url') ?? '');
    res.setHeader('content-type', 'text/html; charset=utf-8');
    res.end(
      `<!doctype html><html lang="en"><head><title>LMS administration</title></head><body><main><h1>Add a tool</h1>` +
        `<p id="state" role="status">Registering…</p>` +
        `<iframe title="Tool registration" src="${esc(frame)}" style="width:760px;height:520px;border:1px solid #888"></iframe></main>` +
        `<script>addEventListener('message',e=>{if(e.data&&e.data.subject==='org.imsglobal.lti.close'){document.getElementById('state').textContent='Closed by the tool';document.querySelector('iframe').remove()}})</script></body></html>`,
    );
  });
  return reg;
}
