/**
 * The deep-linking pages (Deep Linking 2.0):
 *
 * - the picker: the tenant's programs → units → lessons → activities as one form of real
 *   controls — radio buttons (one pick) or checkboxes (`accept_multiple`), each with its label —
 *   grouped under headings, with a search box (shown when scripts run: it hides what does not
 *   match and says how many activities match in a live region; a checked activity stays shown).
 *   It posts `picker_token` and the picked `activity` ids to `/lti/v1/deep-linking/response`.
 *   Works without scripts (every activity listed, no search).
 * - the return: the signed response auto-submitted (form POST of `JWT`) to the platform's
 *   `deep_link_return_url`, with a button when scripts do not run.
 *
 * Both: a hash-pinned inline style and script, nothing else (`default-src 'none'`); `form-action`
 * ourselves (picker) or the return URL's origin (return); `frame-ancestors` the launch's platform
 * origins (framing.ts); `Cache-Control: no-store`.
 */
import { createHash } from 'node:crypto';
import type { FastifyReply } from 'fastify';
import { escapeUTF8 as esc } from 'entities';
import { htmlPage } from '../../http/html-page.ts';
import type { PickableActivity } from './content.ts';

const STYLE = `:root{--ink:#1b1f24;--muted:#4a5260;--line:#c4cad4;--accent:#0b4f8a;--soft:#f4f6f9}
*{box-sizing:border-box}body{font:16px/1.5 system-ui,sans-serif;margin:0;padding:1.25rem 1.5rem;color:var(--ink);background:#fff}
main{max-width:48rem}h1{font-size:1.4rem;margin:0 0 .5rem}h2{font-size:1.15rem;margin:1.25rem 0 .25rem}
h3{font-size:1rem;margin:.75rem 0 .25rem;color:var(--muted)}h4{font-size:1rem;margin:.5rem 0 .25rem;font-weight:600}p{margin:0 0 1rem}
fieldset{border:1px solid var(--line);border-radius:6px;margin:0 0 1rem;padding:.25rem 1rem 1rem}legend{font-weight:600;padding:0 .25rem}
ul.acts{list-style:none;margin:0;padding:0 0 0 .25rem}ul.acts li{margin:.2rem 0;display:flex;gap:.5rem;align-items:baseline}
ul.acts input{width:1.1rem;height:1.1rem;flex:none;margin:0;transform:translateY(.15rem)}
.kind{color:var(--muted);font-size:.9rem}.search{margin:0 0 1rem}.search label{display:block;font-weight:600;margin-bottom:.25rem}
input[type=search]{font:inherit;width:100%;max-width:28rem;padding:.45rem .6rem;border:1px solid #6b7280;border-radius:4px}
.count{color:var(--muted);margin:.25rem 0 0}.error{border:2px solid #a4262c;background:#fdf0f0;color:#6e1519;border-radius:6px;padding:.5rem .75rem}
button{font:inherit;font-weight:600;padding:.55rem 1.2rem;border:2px solid var(--accent);border-radius:6px;background:var(--accent);color:#fff;cursor:pointer}
:focus-visible{outline:3px solid #e8a200;outline-offset:2px}.actions{position:sticky;bottom:0;background:#fff;padding:.75rem 0;border-top:1px solid var(--line)}
[hidden]{display:none!important}`;

/**
 * The picker's script: search (words all found in an activity's title or where it sits; a checked
 * activity stays shown; a group with nothing shown is hidden), the live count, and a check that
 * something is picked before the form goes.
 */
const PICKER_SCRIPT = `(()=>{const f=document.getElementById('picker'),q=document.getElementById('q'),box=document.getElementById('search'),count=document.getElementById('q-count'),err=document.getElementById('pick-error');if(!f)return;const items=[...f.querySelectorAll('li[data-text]')],groups=[...f.querySelectorAll('[data-group]')];box.hidden=false;let timer;const run=()=>{const words=q.value.toLowerCase().split(/\\s+/).filter(Boolean);let n=0;for(const li of items){const show=words.every(w=>li.dataset.text.includes(w))||li.querySelector('input').checked;li.hidden=!show;if(show)n++}for(const g of groups)g.hidden=!g.querySelector('li[data-text]:not([hidden])');count.textContent=words.length?(n===1?'1 activity matches.':n+' activities match.'):''};q.addEventListener('input',()=>{clearTimeout(timer);timer=setTimeout(run,150)});f.addEventListener('submit',e=>{if(!f.querySelector('input[name=activity]:checked')){e.preventDefault();err.hidden=false;const first=f.querySelector('li[data-text]:not([hidden]) input');if(first)first.focus()}});f.addEventListener('change',()=>{err.hidden=true})})();`;
const SUBMIT_SCRIPT = `document.forms[0].submit();`;

const sha = (text: string) => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;
const csp = (ancestors: string, formAction: string, script: string) =>
  `default-src 'none'; style-src ${sha(STYLE)}; script-src ${sha(script)}; form-action ${formAction}; base-uri 'none'; frame-ancestors ${ancestors}`;

function send(reply: FastifyReply, status: number, html: string, policy: string) {
  return reply.code(status).type('text/html; charset=utf-8').header('cache-control', 'no-store').header('content-security-policy', policy).send(html);
}

/** Group `items` (in course order) by a key, keeping the order of first appearance. */
function groupBy<T>(items: T[], key: (t: T) => string): T[][] {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    if (!groups.has(k)) groups.set(k, []);
    groups.get(k)!.push(item);
  }
  return [...groups.values()];
}

/** What the picker page shows: the activities, whether several may be picked, the token, where it posts. */
export interface PickerPage {
  activities: PickableActivity[];
  acceptMultiple: boolean;
  token: string;
  action: string;
  /** The course's title from the launch, when the platform sent one. */
  course?: string;
}

/** The picker page (200), framed by `ancestors`. */
export function sendPickerPage(reply: FastifyReply, p: PickerPage, ancestors: string) {
  const type = p.acceptMultiple ? 'checkbox' : 'radio';
  const where = p.course ? ` to ${esc(p.course)}` : '';
  const intro = p.acceptMultiple
    ? `Choose one or more activities to add${where}. Learners who open a placed activity from the LMS work on it in the player, and their scores go to the gradebook.`
    : `Choose the activity to add${where}. Learners who open it from the LMS work on it in the player, and their scores go to the gradebook.`;
  let body: string;
  if (!p.activities.length) {
    body = `<main><h1>Place an activity</h1><p>There is no activity to place yet: this organisation has no published activities. Create them with the authoring tools first.</p></main>`;
  } else {
    const item = (a: PickableActivity) => {
      const id = `a-${a.id}`;
      const text = [a.title, a.kind, a.lesson_title, a.unit_title, a.program_title].join(' ').toLowerCase();
      return `<li data-text="${esc(text)}"><input type="${type}" name="activity" value="${esc(a.id)}" id="${id}" aria-describedby="${id}-k"><label for="${id}">${esc(a.title)}</label> <span class="kind" id="${id}-k">(${esc(a.kind)})</span></li>`;
    };
    const programs = groupBy(p.activities, (a) => a.program_id).map((inProgram, pi) => {
      const units = groupBy(inProgram, (a) => a.unit_id).map((inUnit) => {
        const lessons = groupBy(inUnit, (a) => a.lesson_id).map(
          (inLesson) => `<div data-group><h4>${esc(inLesson[0]!.lesson_title)}</h4><ul class="acts">${inLesson.map(item).join('')}</ul></div>`,
        );
        return `<div data-group><h3>${esc(inUnit[0]!.unit_title)}</h3>${lessons.join('')}</div>`;
      });
      return `<section data-group aria-labelledby="p-${pi}"><h2 id="p-${pi}">${esc(inProgram[0]!.program_title)}</h2>${units.join('')}</section>`;
    });
    body =
      `<main><h1>Place an activity</h1><p>${intro}</p>` +
      `<form id="picker" method="post" action="${esc(p.action)}" novalidate>` +
      `<input type="hidden" name="picker_token" value="${esc(p.token)}">` +
      `<div id="search" class="search" hidden><label for="q">Search activities</label>` +
      `<input type="search" id="q" autocomplete="off" aria-describedby="q-count"><p id="q-count" class="count" role="status" aria-live="polite"></p></div>` +
      `<fieldset><legend>${p.acceptMultiple ? 'Activities (choose one or more)' : 'Activities (choose one)'}</legend>${programs.join('')}</fieldset>` +
      `<div class="actions"><p id="pick-error" class="error" role="alert" hidden>Choose an activity first.</p>` +
      `<button type="submit">${p.acceptMultiple ? 'Place the chosen activities' : 'Place the chosen activity'}</button></div>` +
      `</form></main><script>${PICKER_SCRIPT}</script>`;
  }
  const html = htmlPage({ title: 'Place an activity', head: `<style>${STYLE}</style>`, body });
  return send(reply, 200, html, csp(ancestors, "'self'", PICKER_SCRIPT));
}

/**
 * The return to the platform: a page that POSTs `JWT` = `jwt` to `returnUrl` at once (script), or
 * on a button press without scripts. Framed by `ancestors`.
 */
export function sendReturnPage(reply: FastifyReply, returnUrl: string, jwt: string, ancestors: string) {
  const html = htmlPage({
    title: 'Placing the activity',
    head: `<style>${STYLE}</style>`,
    body:
      `<main><h1>Placing the activity…</h1><form method="post" action="${esc(returnUrl)}"><input type="hidden" name="JWT" value="${esc(jwt)}">` +
      `<noscript><p>Scripts are off: press the button to go back to the LMS.</p><button type="submit">Back to the LMS</button></noscript></form></main><script>${SUBMIT_SCRIPT}</script>`,
  });
  return send(reply, 200, html, csp(ancestors, new URL(returnUrl).origin, SUBMIT_SCRIPT));
}
