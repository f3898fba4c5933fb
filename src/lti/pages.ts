/**
 * The LTI surface's HTML pages: errors (readable, 4xx, never a stack trace), the auto-submitted
 * authentication request of a login (form_post to the platform; a button is shown when scripts
 * do not run), and the page that offers to open the activity in a new window when the browser
 * did not keep the login's cookie.
 *
 * Every page: a hash-pinned inline style and (for the auto-submit) a hash-pinned inline script,
 * nothing else (`default-src 'none'`); `frame-ancestors` the registered platforms' origins
 * (`ancestors`, framing.ts) or `'none'`; `Cache-Control: no-store`.
 */
import { createHash } from 'node:crypto';
import type { FastifyReply } from 'fastify';
import { escapeUTF8 } from 'entities';
import { htmlPage } from '../http/html-page.ts';

const STYLE = `body{font:16px/1.5 system-ui,sans-serif;margin:0;padding:1.5rem;color:#1b1b1b;background:#fff}
main{max-width:40rem}h1{font-size:1.4rem;margin:0 0 .75rem}p{margin:0 0 1rem}
button{font:inherit;padding:.5rem 1rem;border:2px solid #0b4f8a;border-radius:4px;background:#0b4f8a;color:#fff;cursor:pointer}
button:focus-visible{outline:3px solid #e8a200;outline-offset:2px}.code{color:#4a4a4a;font-size:.9rem}`;
const SUBMIT = `document.forms[0].submit();`;
const sha = (text: string) => createHash('sha256').update(text).digest('base64');
const STYLE_HASH = sha(STYLE);
const SUBMIT_HASH = sha(SUBMIT);

const csp = (ancestors: string, formAction: string, script: boolean) =>
  `default-src 'none'; style-src 'sha256-${STYLE_HASH}'; ${script ? `script-src 'sha256-${SUBMIT_HASH}'; ` : ''}` +
  `form-action ${formAction}; base-uri 'none'; frame-ancestors ${ancestors}`;

/** An origin for CSP `form-action` (scheme://host[:port] of `url`). */
const originOf = (url: string) => new URL(url).origin;

function send(reply: FastifyReply, status: number, html: string, policy: string) {
  return reply.code(status).type('text/html; charset=utf-8').header('cache-control', 'no-store').header('content-security-policy', policy).send(html);
}

/** An error page: `title` and `message` in words, the `code` for support; status 4xx. */
export function sendErrorPage(reply: FastifyReply, status: number, code: string, title: string, message: string, ancestors = "'none'") {
  const html = htmlPage({
    title,
    head: `<style>${STYLE}</style>`,
    body: `<main><h1>${escapeUTF8(title)}</h1><p>${escapeUTF8(message)}</p><p class="code">Error code: ${escapeUTF8(code)}. If this keeps happening, tell your instructor or the LMS administrator.</p></main>`,
  });
  return send(reply, status, html, csp(ancestors, "'none'", false));
}

/** A page that POSTs `fields` to `action` at once (script), or on a button press without scripts. */
export function sendAutoSubmit(reply: FastifyReply, action: string, fields: Record<string, string>, ancestors: string) {
  const inputs = Object.entries(fields)
    .map(([name, value]) => `<input type="hidden" name="${escapeUTF8(name)}" value="${escapeUTF8(value)}">`)
    .join('');
  const html = htmlPage({
    title: 'Signing you in',
    head: `<style>${STYLE}</style>`,
    body: `<main><h1>Signing you in…</h1><form method="post" action="${escapeUTF8(action)}">${inputs}<noscript><p>Scripts are off: press the button to continue.</p><button type="submit">Continue</button></noscript></form></main><script>${SUBMIT}</script>`,
  });
  return send(reply, 200, html, csp(ancestors, originOf(action), true));
}

/**
 * The browser did not send back the login's cookie (third-party cookies blocked, Safari): offer
 * to open the activity in a new window, where the login runs again as a first-party page.
 * `loginUrl` is `/lti/v1/login` with the original login's parameters; `authUrl` the platform's
 * authorization URL, where the login redirects (CSP `form-action` applies to redirects too).
 */
export function sendNewWindowPage(reply: FastifyReply, loginUrl: string, authUrl: string, ancestors: string) {
  const html = htmlPage({
    title: 'Open the activity in a new window',
    head: `<style>${STYLE}</style>`,
    body:
      `<main><h1>Open the activity in a new window</h1>` +
      `<p>Your browser blocked the cookie this activity uses to check that the sign-in started here (Safari and some privacy settings do this inside an LMS frame). Nothing was recorded.</p>` +
      `<form method="get" action="${escapeUTF8(new URL(loginUrl).pathname)}" target="_blank">` +
      [...new URL(loginUrl).searchParams].map(([n, v]) => `<input type="hidden" name="${escapeUTF8(n)}" value="${escapeUTF8(v)}">`).join('') +
      `<button type="submit">Open in a new window</button></form></main>`,
  });
  return send(reply, 401, html, csp(ancestors, `'self' ${originOf(authUrl)}`, false));
}
