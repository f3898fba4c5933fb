/**
 * The pages a person sees while an MCP host connects (issue #12): sign-in, consent, and errors
 * that must not go back to the client. Server-rendered HTML, no script, no cookies — each form
 * carries the authorization's id and its CSRF value (authorizations.ts).
 *
 * Every page is sent with `Cache-Control: no-store`, `Content-Security-Policy` allowing only its
 * own stylesheet (by hash), `frame-ancestors 'none'` (and `X-Frame-Options: DENY`) against
 * clickjacking, `Referrer-Policy: no-referrer` (the authorize URL carries `state`), and no
 * `form-action` (browsers apply it to the redirect back to the client). Accessible: `lang`,
 * labelled inputs, errors in an `alert` region, visible focus, usable with a keyboard alone.
 */
import { createHash } from 'node:crypto';
import type { FastifyReply } from 'fastify';
import { escapeUTF8 as esc } from 'entities';
import { htmlPage } from '../../http/html-page.ts';
import { SCOPES } from './scopes.ts';

const STYLE = `
:root { color-scheme: light; font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; line-height: 1.5; }
body { margin: 0; background: #f3f4f6; color: #111827; }
main { max-width: 28rem; margin: 3rem auto; background: #fff; padding: 2rem; border-radius: 0.75rem; box-shadow: 0 1px 3px rgba(0,0,0,.15); }
h1 { font-size: 1.5rem; margin: 0 0 1rem; }
h2 { font-size: 1.1rem; margin: 1.5rem 0 .5rem; }
label { display: block; font-weight: 600; margin: 1rem 0 .25rem; }
input[type=email], input[type=password] { width: 100%; box-sizing: border-box; padding: .6rem; font-size: 1rem; border: 1px solid #6b7280; border-radius: .375rem; }
button { margin-top: 1.25rem; padding: .6rem 1.25rem; font-size: 1rem; font-weight: 600; border-radius: .375rem; border: 2px solid #1d4ed8; background: #1d4ed8; color: #fff; cursor: pointer; }
button.secondary { background: #fff; color: #1d4ed8; }
:focus-visible { outline: 3px solid #b45309; outline-offset: 2px; }
.alert { border: 2px solid #b91c1c; background: #fef2f2; color: #7f1d1d; padding: .75rem; border-radius: .375rem; }
.warning { border: 2px solid #b45309; background: #fffbeb; color: #78350f; padding: .75rem; border-radius: .375rem; }
dl { display: grid; grid-template-columns: auto 1fr; gap: .25rem 1rem; margin: 0; }
dt { font-weight: 600; } dd { margin: 0; overflow-wrap: anywhere; }
.muted { color: #4b5563; font-size: .9rem; }
`;
const STYLE_HASH = createHash('sha256').update(STYLE).digest('base64');

const layout = (title: string, body: string) =>
  htmlPage({ title: `${title} · Learning content service`, head: `<style>${STYLE}</style>`, body: `<main>\n${body}\n</main>` });

/** Send `html` with the page headers above. */
export function sendPage(reply: FastifyReply, status: number, html: string) {
  return reply
    .code(status)
    .header('content-type', 'text/html; charset=utf-8')
    .header('cache-control', 'no-store')
    .header('pragma', 'no-cache')
    .header('content-security-policy', `default-src 'none'; style-src 'sha256-${STYLE_HASH}'; frame-ancestors 'none'; base-uri 'none'`)
    .header('x-frame-options', 'DENY')
    .header('referrer-policy', 'no-referrer')
    .header('x-content-type-options', 'nosniff')
    .send(html);
}

/** How a client is named on the pages: its name, else its metadata document's host, else "An app". */
export function clientLabel(client: { client_id: string; client_name: string | null }): string {
  if (client.client_name) return client.client_name;
  return URL.canParse(client.client_id) ? new URL(client.client_id).host : 'An app';
}

const hidden = (authorizationId: string, csrf: string) =>
  `<input type="hidden" name="authorization_id" value="${esc(authorizationId)}">\n<input type="hidden" name="csrf" value="${esc(csrf)}">`;

/** The sign-in page of an authorization: a form labelled Email and Password, a Sign in button. */
export function signInPage(p: { authorizationId: string; csrf: string; clientName: string; email?: string; error?: string }): string {
  return layout(
    'Sign in',
    `<h1>Sign in</h1>
<p><strong>${esc(p.clientName)}</strong> wants to connect to your learning-content account. Sign in to continue.</p>
${p.error ? `<p class="alert" role="alert">${esc(p.error)}</p>` : ''}
<form method="post" action="sign-in">
${hidden(p.authorizationId, p.csrf)}
<label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="username" required value="${esc(p.email ?? '')}"${p.email ? '' : ' autofocus'}>
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required${p.email ? ' autofocus' : ''}>
<button type="submit">Sign in</button>
</form>`,
  );
}

/** The consent page: who asks, where it returns to, what it may do; Allow and Deny. */
export function consentPage(p: {
  authorizationId: string;
  csrf: string;
  clientName: string;
  clientId: string;
  redirectUri: string;
  localOnly: boolean;
  scope: string;
  email: string;
}): string {
  const redirectHost = URL.canParse(p.redirectUri) ? new URL(p.redirectUri).host || p.redirectUri : p.redirectUri;
  const abilities = p.scope
    .split(' ')
    .map((s) => `<li>${esc(SCOPES[s] ?? s)}</li>`)
    .join('\n');
  return layout(
    'Allow access',
    `<h1>Allow ${esc(p.clientName)} to use your account?</h1>
<p>Signed in as <strong>${esc(p.email)}</strong>.</p>
<dl>
<dt>App</dt><dd>${esc(p.clientName)}</dd>
<dt>Client ID</dt><dd>${esc(p.clientId)}</dd>
<dt>Returns you to</dt><dd>${esc(redirectHost)}</dd>
</dl>
${p.localOnly ? `<p class="warning" role="note"><strong>Warning:</strong> this app returns to <strong>localhost</strong>, a program on your own computer. Allow it only if you started this connection yourself just now.</p>` : ''}
<h2>It will be able to</h2>
<ul>
${abilities}
</ul>
<p class="muted">You can take this back at any time; the app's access then ends at once.</p>
<form method="post" action="decision">
${hidden(p.authorizationId, p.csrf)}
<button type="submit" name="decision" value="allow">Allow</button>
<button type="submit" name="decision" value="deny" class="secondary">Deny</button>
</form>`,
  );
}

/** A page for an error that is not sent back to the client. */
export function errorPage(title: string, message: string): string {
  return layout(
    title,
    `<h1>${esc(title)}</h1>\n<p class="alert" role="alert">${esc(message)}</p>\n<p>Go back to the app you were connecting and start again.</p>`,
  );
}
