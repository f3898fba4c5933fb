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
import type { FastifyReply, FastifyRequest } from 'fastify';
import { isDbUnavailable } from '../db/errors.ts';
import { LaunchError } from './launch.ts';
import { escapeUTF8 } from 'entities';
import { htmlPage } from '../http/html-page.ts';
import { playerCsp, playerPage, type PlayerAssets, type PlayerConfig } from '../player/index.ts';

const STYLE = `body{font:16px/1.5 system-ui,sans-serif;margin:0;padding:1.5rem;color:#1b1b1b;background:#fff}
main{max-width:40rem}h1{font-size:1.4rem;margin:0 0 .75rem}p{margin:0 0 1rem}
button{font:inherit;padding:.5rem 1rem;border:2px solid #0b4f8a;border-radius:4px;background:#0b4f8a;color:#fff;cursor:pointer}
button:focus-visible{outline:3px solid #e8a200;outline-offset:2px}.code{color:#4a4a4a;font-size:.9rem}`;
const SUBMIT = `document.forms[0].submit();`;
/**
 * 1EdTech platform storage (Client Side postMessages, `lti.put_data` / `lti.get_data`): the data
 * block `#lti-storage` says the subject, the storage target frame, the platform's origin, the key
 * (and the value to put). The request goes to the target with that origin; a reply is accepted
 * only from that origin with `<subject>.response` and our `message_id`. A got value fills the
 * form's `lti_storage_binding`; then, or after `wait` ms without a reply, the form is submitted.
 */
const STORAGE = `(()=>{const d=JSON.parse(document.getElementById('lti-storage').textContent),f=document.forms[0];let t=null;try{t=d.target==='_parent'?window.parent:window.parent.frames[d.target]}catch(e){}const id='svc-'+Math.random().toString(36).slice(2);let done=false;const go=()=>{if(!done){done=true;f.submit()}};addEventListener('message',e=>{const m=e.data;if(e.origin!==d.origin||!m||m.message_id!==id||m.subject!==d.subject+'.response')return;if(d.subject==='lti.get_data'&&typeof m.value==='string')f.elements.lti_storage_binding.value=m.value;go()});if(t&&t!==window)t.postMessage(d.subject==='lti.put_data'?{subject:d.subject,message_id:id,key:d.key,value:d.value}:{subject:d.subject,message_id:id,key:d.key},d.origin);setTimeout(go,d.wait)})();`;
const sha = (text: string) => createHash('sha256').update(text).digest('base64');
const STYLE_HASH = sha(STYLE);
const SUBMIT_HASH = sha(SUBMIT);
const STORAGE_HASH = sha(STORAGE);

const csp = (ancestors: string, formAction: string, script: boolean | 'storage') =>
  `default-src 'none'; style-src 'sha256-${STYLE_HASH}'; ${script ? `script-src 'sha256-${script === 'storage' ? STORAGE_HASH : SUBMIT_HASH}'; ` : ''}` +
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

/** Hidden form inputs for `fields` (names and values escaped). */
const hiddenInputs = (fields: Iterable<[string, string]>) =>
  [...fields].map(([name, value]) => `<input type="hidden" name="${escapeUTF8(name)}" value="${escapeUTF8(value)}">`).join('');

/** A page that POSTs `fields` to `action` at once (script), or on a button press without scripts. */
export function sendAutoSubmit(reply: FastifyReply, action: string, fields: Record<string, string>, ancestors: string) {
  const inputs = hiddenInputs(Object.entries(fields));
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
      hiddenInputs(new URL(loginUrl).searchParams) +
      `<button type="submit">Open in a new window</button></form></main>`,
  });
  return send(reply, 401, html, csp(ancestors, `'self' ${originOf(authUrl)}`, false));
}

/** What a platform-storage page does: put the binding value, or get it back. */
export type StorageStep =
  | { subject: 'lti.put_data'; target: string; origin: string; key: string; value: string }
  | { subject: 'lti.get_data'; target: string; origin: string; key: string };

/**
 * A page that talks to the platform's storage (`step`), then submits `fields` to `action` with
 * `method` — at login, put the binding then go to the platform's authorization URL (GET); at
 * launch, get it back and post the launch again with `lti_storage_binding` (POST to ourselves).
 */
export function sendStoragePage(
  reply: FastifyReply,
  step: StorageStep,
  action: string,
  method: 'get' | 'post',
  fields: Record<string, string>,
  ancestors: string,
) {
  const data = JSON.stringify({ ...step, wait: 3000 }).replace(/</g, '\\u003c');
  const inputs = hiddenInputs(Object.entries(fields));
  const html = htmlPage({
    title: 'Signing you in',
    head: `<style>${STYLE}</style><script type="application/json" id="lti-storage">${data}</script>`,
    body: `<main><h1>Signing you in…</h1><form method="${method}" action="${escapeUTF8(action)}">${inputs}<noscript><p>Scripts are off: press the button to continue.</p><button type="submit">Continue</button></noscript></form></main><script>${STORAGE}</script>`,
  });
  return send(reply, 200, html, csp(ancestors, method === 'get' ? originOf(action) : "'self'", 'storage'));
}

/**
 * The player page of a verified launch (a learner's activity, an instructor's preview): `config`
 * for the page, framed by the launch's platform origins (`framed`), the browser-binding cookie
 * cleared (`clearCookie`), never cached. Assets come from `/embed/v1/`.
 */
export function sendPlayer(reply: FastifyReply, launch: { framed: string; clearCookie: string }, config: PlayerConfig, assets: PlayerAssets) {
  return reply
    .header('set-cookie', launch.clearCookie)
    .type('text/html; charset=utf-8')
    .header('cache-control', 'no-store')
    .header('content-security-policy', playerCsp(launch.framed))
    .send(playerPage(config, assets, '/embed/v1/'));
}

/** The words of a page surface's refusals (`pageErrorHandler`). */
export interface RefusalWords {
  /** Title of a refused request ("This activity could not be opened"). */
  title: string;
  /** 413: the form is too large. */
  tooLarge: string;
  /** Another 4xx from Fastify: the form is malformed. */
  malformed: string;
  /** 503: the database is down. */
  busy: string;
  /** 500: an unexpected error. */
  failed: string;
  /** The log line of an unexpected error. */
  log: string;
}

/**
 * A Fastify error handler answering with readable HTML pages (never a stack trace): a
 * `LaunchError` as it says; 413 and other 4xx as refusals; a database outage as 503 at once,
 * framed by the platforms known before (`ancestors.last()`, no query); anything else as 500.
 * Pages are framed by every registered platform's origins (`ancestors.get()`).
 */
export function pageErrorHandler(words: RefusalWords, ancestors: { last(): string; get(): Promise<string> }) {
  return async (err: Error & { statusCode?: number }, req: FastifyRequest, reply: FastifyReply) => {
    if (isDbUnavailable(err)) return sendErrorPage(reply.header('retry-after', '5'), 503, 'unavailable', 'The service is busy', words.busy, ancestors.last());
    const framed = await ancestors.get();
    if (err instanceof LaunchError) return sendErrorPage(reply, err.status, err.code, err.title, err.message, framed);
    if (err.statusCode === 413) return sendErrorPage(reply, 413, 'too_large', words.title, words.tooLarge, framed);
    if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500)
      return sendErrorPage(reply, 400, 'invalid_request', words.title, words.malformed, framed);
    req.log.error({ err }, words.log);
    return sendErrorPage(reply, 500, 'internal_error', 'Something went wrong', words.failed, framed);
  };
}
