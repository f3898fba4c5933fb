/**
 * The page that ends a dynamic registration (Dynamic Registration 1.0 §3.7): what was registered,
 * in words, and the `{subject: "org.imsglobal.lti.close"}` message posted to the window that
 * opened the page or frames it (`window.opener || window.parent`) so the platform closes its
 * dialog and goes on. The message carries nothing secret, so it is posted to any origin (`'*'`):
 * a platform's admin page and its configuration host may differ. A "Close" button posts it again.
 *
 * CSP as for the other LTI pages (pages.ts): only the hash-pinned style and script; framed only by
 * `ancestors` (the platform's configuration and issuer origins); `Cache-Control: no-store`.
 */
import { createHash } from 'node:crypto';
import type { FastifyReply } from 'fastify';
import { escapeUTF8 } from 'entities';
import { htmlPage } from '../../http/html-page.ts';

const STYLE = `body{font:16px/1.5 system-ui,sans-serif;margin:0;padding:1.5rem;color:#1b1b1b;background:#fff}
main{max-width:40rem}h1{font-size:1.4rem;margin:0 0 .75rem}p{margin:0 0 1rem}dl{display:grid;grid-template-columns:max-content 1fr;gap:.25rem 1rem;margin:0 0 1rem}
dt{font-weight:600}dd{margin:0;overflow-wrap:anywhere}
button{font:inherit;padding:.5rem 1rem;border:2px solid #0b4f8a;border-radius:4px;background:#0b4f8a;color:#fff;cursor:pointer}
button:focus-visible{outline:3px solid #e8a200;outline-offset:2px}`;
const CLOSE = `(()=>{const close=()=>{const w=window.opener||window.parent;if(w&&w!==window)w.postMessage({subject:'org.imsglobal.lti.close'},'*')};document.getElementById('close').addEventListener('click',close);close()})();`;
const sha = (text: string) => createHash('sha256').update(text).digest('base64');

/** What the result page shows. */
export interface RegisteredView {
  tenant: string;
  issuer: string;
  client_id: string;
  /** The deployment id the platform gave; undefined: any deployment of this registration is accepted. */
  deployment_id?: string;
}

/** The registration's result page (200). */
export function sendRegisteredPage(reply: FastifyReply, view: RegisteredView, ancestors: string) {
  const row = (term: string, value: string) => `<dt>${escapeUTF8(term)}</dt><dd>${escapeUTF8(value)}</dd>`;
  const html = htmlPage({
    title: 'The tool is registered',
    head: `<style>${STYLE}</style>`,
    body:
      `<main><h1>The tool is registered</h1>` +
      `<p>This LMS can now launch the activities of ${escapeUTF8(view.tenant)}.</p>` +
      `<dl>${row('Organisation', view.tenant)}${row('LMS (issuer)', view.issuer)}${row('Client ID', view.client_id)}` +
      row('Deployment', view.deployment_id ?? 'any deployment of this registration (the LMS named none)') +
      `</dl><p>You can close this window.</p><button type="button" id="close">Close</button></main><script>${CLOSE}</script>`,
  });
  return reply
    .code(200)
    .type('text/html; charset=utf-8')
    .header('cache-control', 'no-store')
    .header(
      'content-security-policy',
      `default-src 'none'; style-src 'sha256-${sha(STYLE)}'; script-src 'sha256-${sha(CLOSE)}'; form-action 'none'; base-uri 'none'; frame-ancestors ${ancestors}`,
    )
    .send(html);
}
