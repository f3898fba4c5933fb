/**
 * The player's script (`/embed/v1/player.js`, bundled by ../build.ts): a learner reads an
 * activity, submits an artifact and sees the verdict, inside a partner's iframe.
 *
 * 1. Boot: read the page's config (../protocol.ts `PlayerConfig`). An error in it → shown, and
 *    `svc:error` to the host. Otherwise `svc:ready` to the host.
 * 2. Handshake: accept `svc:auth` only from `window.parent`, from the host origin, when that origin
 *    is one of the tenant's allowed origins. Exchange the IdP token at `/v1/embed/session`; the
 *    session lives in memory only (no cookies, no storage). It is refreshed with its refresh token
 *    a minute before it expires; when that fails, or the IdP token is refused, the host is asked
 *    for a new one (`svc:auth-expiring`) — at most `MAX_REAUTH` times in a row. A session handed
 *    by an LTI launch has no host to ask: when it cannot be refreshed, the player says the session
 *    ended and that the learner reopens the activity from the LMS.
 * 3. Show the activity (`GET /v1/embed/activities/{id}`) — breadcrumb, spec, rubric, threshold,
 *    the form for its kind, attempt history — and progress (`GET /v1/embed/progress`).
 * 4. Submit to `/v1/embed/judge` (with an Idempotency-Key); "Grading…" until a verdict: a pending
 *    one is polled at `/v1/embed/results/{id}` (also after the learner comes back).
 * 5. Reviews (issue #21): a verdict shows how the grading was calibrated and offers "Ask for a
 *    review" (a message of at most 1,000 characters, `POST /v1/embed/results/{id}/appeal`); while
 *    the request is open the player shows "Review requested" and polls the result; when an
 *    instructor resolves it — or overrode the verdict — it shows "Reviewed by your instructor" with
 *    the reason, and tells the host `svc:verdict` again (with `review`).
 * 6. Preview (an instructor's LTI launch, `config.preview`): the activity handed by the server,
 *    rendered as above under a "Preview" banner, submitting off, and the course's learners'
 *    latest results in a table. No session, no API call, no host.
 * Every state change is announced in a live region; every refusal is shown in words and sent as
 * `svc:error`. The page's height is sent as `svc:resize` whenever it changes.
 */
import { allows } from '../../embed/origins.ts';
import { isProtocolMessage, PROTOCOL_VERSION, type PlayerConfig, type PlayerMessage, type PlayerPreview, type PreviewLearner } from '../protocol.ts';

/** Consecutive requests for a new IdP token before the player gives up. */
const MAX_REAUTH = 2;
/** Polling a pending grade: first delay and cap, in ms. */
const POLL_FIRST_MS = 1000;
const POLL_MAX_MS = 10_000;
/** Longest review request, in characters (the API's limit). */
const MAX_APPEAL_CHARS = 1000;

interface Criterion {
  id: string;
  criterion: string;
  weight: number;
  met?: boolean;
  score?: number;
  feedback?: string;
}
interface Calibration {
  status?: string;
  report_id?: string;
  cohen_kappa?: number | null;
  false_pass_rate?: number | null;
  created_at?: string;
}
interface Attempt {
  artifact_id: string;
  status: 'pending' | 'passed' | 'failed' | 'not_gradable';
  score?: number;
  passed?: boolean;
  criteria?: Criterion[];
  feedback?: string;
  reason?: string;
  submitted_at: string;
  calibration?: Calibration;
  override?: { at: string; reason: string };
}
interface Appeal {
  id: string;
  status: 'open' | 'upheld' | 'overridden';
  message: string;
  created_at: string;
  resolved_at?: string;
  reason?: string;
}
interface Result {
  id: string;
  status: string;
  score: number | null;
  attempts: Attempt[];
  appeal?: Appeal | null;
}
interface Activity {
  id: string;
  title: string;
  kind: 'document' | 'site' | 'repo' | 'diagram';
  spec_html: string;
  rubric: Criterion[];
  pass_threshold: number;
  program: { id: string; title: string };
  unit: { id: string; title: string };
  lesson: { id: string; title: string };
  result: Result | null;
}
interface Progress {
  program_id: string;
  completed_count: number;
  total_count: number;
}

class PlayerError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly status = 0,
  ) {
    super(message);
  }
}

const config = JSON.parse(document.getElementById('svc-config')!.textContent!) as PlayerConfig;
const hostAllowed = allows(config.origins, config.host);
const app = document.getElementById('app')!;
const live = document.getElementById('status')!;

let session: { access: string; refresh: string; timer?: ReturnType<typeof setTimeout> } | undefined;
let reauths = 0;
let activity: Activity | undefined;
let pollTimer: ReturnType<typeof setTimeout> | undefined;
let reviewTimer: ReturnType<typeof setTimeout> | undefined;

// ---------------------------------------------------------------------------------------------
// Messages and DOM helpers

/**
 * Tell the host: to its origin only, when it is allowed; an `svc:error` (which holds no data) also
 * when it is not, so a page that may not embed the player learns why.
 */
function post(message: PlayerMessage) {
  if (config.host && window.parent !== window && (hostAllowed || message.type === 'svc:error')) window.parent.postMessage(message, config.host);
}

type Child = Node | string | null | undefined | false;
function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, string | boolean> = {}, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === false) continue;
    el.setAttribute(name, value === true ? '' : value);
  }
  return fill(el, ...children);
}

/** Append `children` (skipping empty ones) to `el`, after removing what it held. */
function fill<E extends HTMLElement>(el: E, ...children: Child[]): E {
  el.replaceChildren(...children.filter((c): c is Node | string => c !== null && c !== undefined && c !== false));
  return el;
}

/** Announce `text` in the live region. */
function announce(text: string) {
  live.textContent = text;
}

/** Show `err` in words — after the title, or before `near` (the submit button) — and tell the host. */
function showError(err: PlayerError, near?: Element) {
  if (!activity && !document.querySelector('h1')) {
    app.setAttribute('aria-busy', 'false');
    fill(app, h('h1', {}, 'This activity cannot be shown'));
  }
  const box = document.getElementById('error') ?? h('div', { id: 'error', class: 'error', role: 'alert' });
  fill(box, h('strong', {}, 'Something went wrong. '), err.message);
  if (near) near.before(box);
  else app.querySelector('h1')!.after(box);
  post({ type: 'svc:error', v: PROTOCOL_VERSION, code: err.code, message: err.message });
}

function clearError() {
  document.getElementById('error')?.remove();
}

// ---------------------------------------------------------------------------------------------
// API

async function api<T>(path: string, init: RequestInit = {}, retry = true): Promise<T> {
  const headers = new Headers(init.headers);
  if (session) headers.set('authorization', `Bearer ${session.access}`);
  if (init.body) headers.set('content-type', 'application/json');
  let res: Response;
  try {
    res = await fetch(path, { ...init, headers, credentials: 'omit', cache: 'no-store' });
  } catch {
    throw new PlayerError('network_error', 'The service could not be reached. Check your connection and try again.');
  }
  const body = await res.json().catch(() => undefined);
  if (res.ok) return body as T;
  if (res.status === 401 && retry && session && (await refreshSession())) return api<T>(path, init, false);
  if (res.status === 401 && config.session) throw new PlayerError('session_expired', SESSION_ENDED, 401);
  const message = (body as { error?: { message?: string } })?.error?.message ?? `The service answered ${res.status}.`;
  const code = (body as { error?: { code?: string } })?.error?.code ?? 'http_error';
  throw new PlayerError(code, explain(code, message), res.status);
}

/** Words for the learner, from an API error. */
function explain(code: string, message: string): string {
  if (code === 'unauthorized') return `Your sign-in was not accepted (${message}). Sign in again and reload this page.`;
  if (code === 'not_found') return `This activity is not available here (${message}).`;
  if (code === 'archived') return 'This activity has been retired and no longer accepts submissions.';
  if (code === 'rate_limited') return 'Too many submissions in a short time. Wait a minute and submit again.';
  if (code === 'verdict_pending') return 'Your work is still being graded: ask for a review once the verdict is in.';
  if (code === 'appeal_open') return 'You have already asked for a review of this result.';
  return message;
}

function keepSession(s: { access_token: string; refresh_token: string; expires_in: number }) {
  if (session?.timer) clearTimeout(session.timer);
  session = { access: s.access_token, refresh: s.refresh_token };
  session.timer = setTimeout(() => void refreshSession(), Math.max(5, s.expires_in - 60) * 1000);
}

/** Refresh the session with its refresh token; else ask the host for a new IdP token. */
async function refreshSession(): Promise<boolean> {
  if (!session) return false;
  try {
    const res = await fetch('/auth/v1/token?grant_type=refresh_token', {
      method: 'POST',
      headers: { 'content-type': 'application/json', apikey: config.anonKey },
      body: JSON.stringify({ refresh_token: session.refresh }),
      credentials: 'omit',
    });
    if (res.ok) {
      keepSession(await res.json());
      return true;
    }
  } catch {
    // fall through: a new IdP token from the host
  }
  if (config.session) sessionEnded();
  else askForToken();
  return false;
}

/** The LTI session handed to the page ended and cannot be renewed here (no host to ask): say what to do. */
const SESSION_ENDED =
  'Your session has ended. To go on, open the activity again from your course in the LMS (reloading this page does not sign you in again). Work you already submitted is saved.';
function sessionEnded() {
  session = undefined;
  showError(new PlayerError('session_expired', SESSION_ENDED));
}

function askForToken() {
  if (reauths >= MAX_REAUTH) return;
  reauths++;
  post({ type: 'svc:auth-expiring', v: PROTOCOL_VERSION });
}

async function onAuth(idpToken: string) {
  const had = session !== undefined;
  try {
    const s = await api<{ access_token: string; refresh_token: string; expires_in: number }>(
      '/v1/embed/session',
      {
        method: 'POST',
        body: JSON.stringify({ tenant: config.tenant, idp_token: idpToken }),
      },
      false,
    );
    reauths = 0;
    clearError();
    keepSession(s);
    if (!had || !activity) await loadActivity();
  } catch (err) {
    showError(asPlayerError(err));
    if ((err as PlayerError).status === 401) askForToken();
  }
}

const asPlayerError = (err: unknown) =>
  err instanceof PlayerError ? err : new PlayerError('internal_error', 'Something unexpected happened. Reload the page.');

// ---------------------------------------------------------------------------------------------
// Rendering

async function loadActivity() {
  announce('Loading the activity…');
  activity = await api<Activity>(`/v1/embed/activities/${config.activity}`);
  render();
  performance.mark('svc-activity-shown'); // for partners' performance tools (and bench/player.ts)
  announce(`Activity loaded: ${activity.title}`);
  loadProgress().catch(() => undefined); // progress is a side note: the activity works without it
  const latest = activity.result?.attempts[0];
  if (latest?.status === 'pending') showGrading(activity.result!.id, latest.artifact_id);
  else if (latest) {
    showVerdict(activity.result!, latest, true); // the last verdict, with its review state (no focus move on load)
    if (activity.result!.appeal?.status === 'open') void followReview(activity.result!.id);
  }
}

async function loadProgress() {
  if (!activity) return;
  const { data } = await api<{ data: Progress[] }>(`/v1/embed/progress?program_id=${activity.program.id}`);
  const p = data[0];
  if (!p) return;
  document.getElementById('progress')!.textContent = `Progress in ${activity.program.title}: ${p.completed_count} of ${p.total_count} activities`;
  post({ type: 'svc:progress', v: PROTOCOL_VERSION, program_id: p.program_id, completed_count: p.completed_count, total_count: p.total_count });
}

function render() {
  const a = activity!;
  app.setAttribute('aria-busy', 'false');
  app.replaceChildren(
    h(
      'nav',
      { 'aria-label': 'Breadcrumb' },
      h('ol', { class: 'crumbs' }, h('li', {}, a.program.title), h('li', {}, a.unit.title), h('li', {}, a.lesson.title)),
    ),
    h('h1', {}, a.title),
    specSection(a),
    h(
      'section',
      { 'aria-labelledby': 'rubric-h' },
      h('h2', { id: 'rubric-h' }, 'How it is graded'),
      h('ul', { class: 'rubric' }, ...a.rubric.map((c) => h('li', {}, c.criterion, h('span', { class: 'weight' }, ` (weight ${c.weight})`)))),
      h('p', {}, `To pass, a submission needs a score of at least ${a.pass_threshold} out of 100.`),
    ),
    form(a),
    h('section', { id: 'outcome', 'aria-labelledby': 'outcome-h', hidden: true }),
    history(a.result),
    h('p', { id: 'progress', class: 'progress' }),
  );
}

function specSection(a: Activity) {
  const spec = h('div', { class: 'spec' });
  spec.innerHTML = a.spec_html; // sanitised on the server (src/embed/markdown.ts)
  return h('section', { 'aria-labelledby': 'spec-h' }, h('h2', { id: 'spec-h' }, 'The task'), spec);
}

/** The submission form of the activity's kind. */
function form(a: Activity): HTMLFormElement {
  const choices: [string, string][] =
    a.kind === 'document'
      ? [
          ['url', 'A link'],
          ['text', 'Pasted text'],
          ['file', 'A file'],
        ]
      : a.kind === 'diagram'
        ? [
            ['file', 'An image file'],
            ['text', 'Mermaid or SVG text'],
          ]
        : [['url', a.kind === 'repo' ? 'Repository URL' : 'Page URL']];
  const fields: Record<string, HTMLElement> = {
    url: h(
      'div',
      { class: 'field', 'data-mode': 'url' },
      h(
        'label',
        { for: 'f-url' },
        a.kind === 'repo' ? 'Repository URL (git or .tar.gz)' : a.kind === 'site' ? 'Address of your page' : 'Link to your document',
      ),
      h('input', { id: 'f-url', name: 'url', type: 'url', inputmode: 'url', autocomplete: 'url', placeholder: 'https://' }),
    ),
    text: h(
      'div',
      { class: 'field', 'data-mode': 'text' },
      h('label', { for: 'f-text' }, a.kind === 'diagram' ? 'Mermaid or SVG source' : 'Your text (Markdown welcome)'),
      h('textarea', { id: 'f-text', name: 'text', rows: '8' }),
    ),
    file: h(
      'div',
      { class: 'field', 'data-mode': 'file' },
      h('label', { for: 'f-file' }, a.kind === 'diagram' ? 'Image (PNG, JPEG, SVG)' : 'File (PDF, Markdown, HTML or text)'),
      h('input', {
        id: 'f-file',
        name: 'file',
        type: 'file',
        accept: a.kind === 'diagram' ? 'image/png,image/jpeg,image/svg+xml' : '.pdf,.md,.markdown,.txt,.html,.htm,application/pdf,text/*',
      }),
      h('p', { class: 'hint', id: 'f-file-hint' }, `At most ${Math.floor(fileLimit() / 1024)} KB.`),
    ),
  };
  fields.file!.querySelector('input')!.setAttribute('aria-describedby', 'f-file-hint');
  const el = h(
    'form',
    { id: 'submit-form', 'aria-labelledby': 'submit-h', novalidate: true },
    h('h2', { id: 'submit-h' }, 'Your work'),
    choices.length > 1
      ? h(
          'fieldset',
          { class: 'modes' },
          h('legend', {}, 'Submit as'),
          ...choices.map(([mode, label], i) =>
            h('label', { class: 'mode' }, h('input', { type: 'radio', name: 'mode', value: mode, checked: i === 0 }), ` ${label}`),
          ),
        )
      : null,
    ...choices.map(([mode]) => fields[mode]!),
    h('button', { type: 'submit', id: 'submit' }, 'Submit for grading'),
  );
  const sync = () => {
    const mode = selectedMode(el);
    for (const f of el.querySelectorAll<HTMLElement>('.field')) f.hidden = f.dataset.mode !== mode;
  };
  el.addEventListener('change', sync);
  el.addEventListener('submit', (event) => {
    event.preventDefault();
    void submit(el);
  });
  sync();
  return el;
}

const selectedMode = (f: HTMLFormElement) =>
  f.querySelector<HTMLInputElement>('input[name=mode]:checked')?.value ?? f.querySelector<HTMLElement>('.field')!.dataset.mode!;

/** Largest file: base64 in a data: URL grows by 4/3, and text must fit `maxContentBytes`. */
const fileLimit = () => Math.floor(((config.maxContentBytes - 100) * 3) / 4);

function history(result: Result | null) {
  const attempts = result?.attempts ?? [];
  return h(
    'section',
    { id: 'history', 'aria-labelledby': 'history-h' },
    h('h2', { id: 'history-h' }, 'Your attempts'),
    attempts.length === 0
      ? h('p', {}, 'No attempts yet.')
      : h(
          'ol',
          { class: 'attempts', reversed: true },
          ...attempts.map((t) => h('li', {}, `${new Date(t.submitted_at).toLocaleString('en')}: ${statusWords(t)}`)),
        ),
  );
}

function statusWords(t: Attempt): string {
  if (t.status === 'pending') return 'grading';
  if (t.status === 'not_gradable') return 'could not be graded';
  if (t.score === undefined) return t.status;
  return `${t.status === 'passed' ? 'passed' : 'not passed'}, score ${t.score}`;
}

// ---------------------------------------------------------------------------------------------
// Submitting and grading

/** The artifact of the form, or a PlayerError saying what to fix. */
async function artifactOf(f: HTMLFormElement): Promise<Record<string, string>> {
  const kind = activity!.kind;
  const mode = selectedMode(f);
  if (mode === 'url') {
    const value = (f.querySelector<HTMLInputElement>('#f-url')!.value ?? '').trim();
    let url: URL | undefined;
    try {
      url = new URL(value);
    } catch {
      url = undefined;
    }
    if (!url || !/^https?:$/.test(url.protocol)) throw new PlayerError('invalid_request', 'Enter a web address that starts with http:// or https://.');
    return { kind, [kind === 'repo' ? 'repo_url' : 'ref_url']: url.href };
  }
  if (mode === 'text') {
    const text = f.querySelector<HTMLTextAreaElement>('#f-text')!.value;
    if (!text.trim()) throw new PlayerError('invalid_request', 'Write or paste your work in the text box first.');
    if (new TextEncoder().encode(text).length > config.maxContentBytes)
      throw new PlayerError('invalid_request', `The text is too long: at most ${Math.floor(config.maxContentBytes / 1024)} KB.`);
    return { kind, content: text };
  }
  const file = f.querySelector<HTMLInputElement>('#f-file')!.files?.[0];
  if (!file) throw new PlayerError('invalid_request', 'Choose a file first.');
  if (file.size > fileLimit())
    throw new PlayerError('invalid_request', `The file is too large (${Math.ceil(file.size / 1024)} KB): at most ${Math.floor(fileLimit() / 1024)} KB.`);
  const binary = file.type === 'application/pdf' || (file.type.startsWith('image/') && file.type !== 'image/svg+xml');
  const content = binary ? await readAs(file, 'dataURL') : await readAs(file, 'text');
  return { kind, content };
}

const readAs = (file: File, how: 'dataURL' | 'text') =>
  new Promise<string>((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result));
    reader.onerror = () => reject(new PlayerError('invalid_request', 'The file could not be read.'));
    if (how === 'dataURL') reader.readAsDataURL(file);
    else reader.readAsText(file);
  });

async function submit(f: HTMLFormElement) {
  const button = f.querySelector<HTMLButtonElement>('#submit')!;
  if (button.disabled) return;
  clearError();
  clearTimeout(reviewTimer); // a new attempt: its verdict replaces the one under review
  let answer: { status: Attempt['status']; result_id: string; artifact_id: string };
  try {
    const artifact = await artifactOf(f);
    button.disabled = true;
    const pending = api<typeof answer>('/v1/embed/judge', {
      method: 'POST',
      headers: { 'idempotency-key': crypto.randomUUID() },
      body: JSON.stringify({ tenant: config.tenant, activity_id: activity!.id, artifact }),
    });
    showGrading();
    post({ type: 'svc:submitted', v: PROTOCOL_VERSION, activity_id: activity!.id });
    answer = await pending;
  } catch (err) {
    const error = asPlayerError(err);
    button.disabled = error.code === 'archived'; // retired: no submission can succeed unless it is unarchived (and the page reloaded)
    hideOutcome();
    showError(error, button);
    return;
  }
  await followGrade(answer.result_id, answer.artifact_id);
}

function outcomeBox(): HTMLElement {
  const box = document.getElementById('outcome')!;
  box.hidden = false;
  return box;
}

function hideOutcome() {
  const box = document.getElementById('outcome');
  if (box) box.hidden = true;
}

/** "Grading…"; with ids (a pending grade found on load) it also starts polling. */
function showGrading(resultId?: string, artifactId?: string) {
  outcomeBox().replaceChildren(
    h('h2', { id: 'outcome-h' }, 'Result'),
    h('p', { class: 'grading' }, h('span', { class: 'spinner', 'aria-hidden': 'true' }), 'Grading… you may leave and come back later.'),
  );
  announce('Grading your submission…');
  const button = document.getElementById('submit') as HTMLButtonElement | null;
  if (button) button.disabled = true;
  if (resultId && artifactId) void followGrade(resultId, artifactId);
}

/** Poll the result until attempt `artifactId` has an outcome, then show it. */
async function followGrade(resultId: string, artifactId: string, delay = POLL_FIRST_MS) {
  clearTimeout(pollTimer);
  let result: Result;
  try {
    result = await api<Result>(`/v1/embed/results/${resultId}`);
  } catch (err) {
    showError(asPlayerError(err));
    pollTimer = setTimeout(() => void followGrade(resultId, artifactId, Math.min(POLL_MAX_MS, delay * 2)), delay);
    return;
  }
  document.getElementById('history')!.replaceWith(history(result));
  const attempt = result.attempts.find((t) => t.artifact_id === artifactId);
  if (!attempt || attempt.status === 'pending') {
    pollTimer = setTimeout(() => void followGrade(resultId, artifactId, Math.min(POLL_MAX_MS, Math.round(delay * 1.5))), delay);
    return;
  }
  activity!.result = result;
  showVerdict(result, attempt);
  if (result.appeal?.status === 'open') void followReview(result.id); // a review request still open: keep watching it
  loadProgress().catch(() => undefined); // progress is a side note: the activity works without it
  post({ type: 'svc:verdict', v: PROTOCOL_VERSION, activity_id: activity!.id, result_id: result.id, status: attempt.status, score: attempt.score ?? null });
}

function showVerdict(result: Result, t: Attempt, quiet = false) {
  const a = activity!;
  const heading = h(
    'h2',
    { id: 'outcome-h', tabindex: '-1' },
    t.status === 'passed' ? 'Passed' : t.status === 'failed' ? 'Not passed yet' : 'Could not be graded',
  );
  const box = outcomeBox();
  box.className = `outcome ${t.status}`;
  fill(
    box,
    heading,
    t.score !== undefined
      ? h(
          'p',
          { class: 'score' },
          `Score ${t.score} out of 100 — the pass mark is ${a.pass_threshold}. ${t.passed ? 'This submission passes.' : 'This submission does not pass.'}`,
        )
      : null,
    t.override
      ? h('p', { class: 'note' }, 'Your instructor reviewed this submission: their verdict and score replace the automatic grading shown below.')
      : null,
    t.criteria?.length
      ? h(
          'ul',
          { class: 'criteria' },
          ...t.criteria.map((c) =>
            h(
              'li',
              { class: c.met ? 'met' : 'unmet' },
              h('span', { class: 'mark', 'aria-hidden': 'true' }, c.met ? '✓' : '✗'),
              h('strong', {}, `${c.met ? 'Met' : 'Not met'}: ${c.criterion}`),
              ` — score ${c.score}. `,
              c.feedback ?? '',
            ),
          ),
        )
      : null,
    t.feedback ? h('p', { class: 'feedback' }, t.feedback) : null,
    result.status === 'completed' && t.status !== 'passed' ? h('p', {}, 'You passed this activity before: it stays completed.') : null,
    calibrationLine(t.calibration),
    reviewSection(result, t),
  );
  const button = document.getElementById('submit') as HTMLButtonElement | null;
  if (button) {
    button.disabled = false;
    button.textContent = 'Submit again';
  }
  if (quiet) return;
  const reviewed = reviewOutcome(result, t);
  announce(
    `${heading.textContent}${t.score !== undefined ? `: score ${t.score} out of 100, pass mark ${a.pass_threshold}` : ''}.${reviewed ? ` Reviewed by your instructor: ${reviewed.reason}` : ''}`,
  );
  heading.focus();
}

// ---------------------------------------------------------------------------------------------
// Reviews: calibration, "Ask for a review", the instructor's outcome

/** One line on how the grading behind a verdict was calibrated (`verification.calibration`), or nothing. */
function calibrationLine(c: Calibration | undefined) {
  if (!c) return null;
  const pct = (x: number) => `${Math.round(x * 100)}%`;
  const text =
    c.status === 'uncalibrated'
      ? 'Automatic grading: not yet checked against work graded by instructors.'
      : c.status === 'forced'
        ? 'Automatic grading: put live by an instructor before its calibration check passed.'
        : typeof c.cohen_kappa === 'number'
          ? `Automatic grading: checked against work graded by instructors (agreement κ ${c.cohen_kappa.toFixed(2)}${typeof c.false_pass_rate === 'number' ? `, false passes ${pct(c.false_pass_rate)}` : ''}).`
          : null;
  return text ? h('p', { class: 'calibration' }, text) : null;
}

/** What an instructor decided about verdict `t` of `result`, if anything: an override, or a resolved review request. */
function reviewOutcome(result: Result, t: Attempt): { reason: string; changed: boolean } | undefined {
  if (t.override) return { reason: t.override.reason, changed: true };
  const appeal = result.appeal;
  if (appeal && appeal.status !== 'open') return { reason: appeal.reason ?? 'The verdict stands.', changed: appeal.status === 'overridden' };
  return undefined;
}

/** The review part of a verdict: the outcome, "Review requested", or the offer to ask for one. */
function reviewSection(result: Result, t: Attempt) {
  if (t.status === 'pending') return null;
  const outcome = reviewOutcome(result, t);
  if (outcome) {
    return h(
      'div',
      { id: 'review', class: 'review reviewed' },
      h('h3', { id: 'review-h', tabindex: '-1' }, 'Reviewed by your instructor'),
      h('p', {}, outcome.changed ? 'Your instructor changed the verdict above.' : 'Your instructor looked again: the verdict stands.'),
      h('p', { class: 'reason' }, h('strong', {}, 'Their reason: '), outcome.reason),
    );
  }
  if (result.appeal?.status === 'open') {
    return h(
      'div',
      { id: 'review', class: 'review requested' },
      h('h3', { id: 'review-h', tabindex: '-1' }, 'Review requested'),
      h(
        'p',
        {},
        `You asked for a review on ${new Date(result.appeal.created_at).toLocaleString('en')}. Your instructor will look at your work; the outcome appears here.`,
      ),
      h('blockquote', {}, result.appeal.message),
    );
  }
  return appealForm(result);
}

/** "Ask for a review": a button that opens a form with a labelled text box, a live count and a submit button. */
function appealForm(result: Result) {
  const box = h('textarea', {
    id: 'f-appeal',
    name: 'appeal',
    rows: '4',
    maxlength: String(MAX_APPEAL_CHARS),
    'aria-describedby': 'f-appeal-hint f-appeal-count',
  });
  const count = h('p', { id: 'f-appeal-count', class: 'hint' }, `0 of ${MAX_APPEAL_CHARS.toLocaleString('en')} characters`);
  const send = h('button', { type: 'submit', id: 'appeal-submit' }, 'Send the request');
  const form = h(
    'form',
    { id: 'appeal-form', 'aria-labelledby': 'appeal-h', novalidate: true, hidden: true },
    h(
      'div',
      { class: 'field' },
      h('label', { for: 'f-appeal' }, 'Why should your instructor review this verdict?'),
      h('p', { id: 'f-appeal-hint', class: 'hint' }, `At most ${MAX_APPEAL_CHARS.toLocaleString('en')} characters. Your instructor reads it with your work.`),
      box,
      count,
    ),
    send,
  );
  const open = h(
    'button',
    { type: 'button', id: 'appeal-open', class: 'secondary', 'aria-expanded': 'false', 'aria-controls': 'appeal-form' },
    'Ask for a review',
  );
  let spoken: ReturnType<typeof setTimeout> | undefined;
  box.addEventListener('input', () => {
    const n = box.value.length;
    count.textContent = `${n.toLocaleString('en')} of ${MAX_APPEAL_CHARS.toLocaleString('en')} characters`;
    clearTimeout(spoken); // the count is spoken once the learner pauses, not at every key
    spoken = setTimeout(() => announce(`${MAX_APPEAL_CHARS - n} characters left.`), 1000);
  });
  open.addEventListener('click', () => {
    form.hidden = !form.hidden;
    open.setAttribute('aria-expanded', String(!form.hidden));
    if (!form.hidden) box.focus();
  });
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    void sendAppeal(result, box, send);
  });
  return h('div', { id: 'review', class: 'review' }, h('h3', { id: 'appeal-h' }, 'Think this verdict is wrong?'), open, form);
}

async function sendAppeal(result: Result, box: HTMLTextAreaElement, send: HTMLButtonElement) {
  if (send.disabled) return;
  clearError();
  const message = box.value.trim();
  if (!message) {
    box.setAttribute('aria-invalid', 'true');
    showError(new PlayerError('invalid_request', 'Write why you ask for a review first.'), send);
    box.focus();
    return;
  }
  box.removeAttribute('aria-invalid');
  send.disabled = true;
  try {
    result.appeal = await api<Appeal>(`/v1/embed/results/${result.id}/appeal`, { method: 'POST', body: JSON.stringify({ message }) });
  } catch (err) {
    send.disabled = false;
    const error = asPlayerError(err);
    showError(
      error.code === 'rate_limited' ? new PlayerError(error.code, 'Too many review requests in a short time. Wait a while and try again.') : error,
      send,
    );
    return;
  }
  const section = reviewSection(result, result.attempts[0]!)!;
  document.getElementById('review')!.replaceWith(section);
  announce('Review requested. Your instructor will look at your work.');
  section.querySelector<HTMLElement>('#review-h')?.focus();
  void followReview(result.id);
}

/** Poll the result while its review request is open; then show the outcome and tell the host (`svc:verdict` with `review`). */
async function followReview(resultId: string, delay = POLL_FIRST_MS) {
  clearTimeout(reviewTimer);
  const again = () => (reviewTimer = setTimeout(() => void followReview(resultId, Math.min(POLL_MAX_MS, Math.round(delay * 1.5))), delay));
  let result: Result;
  try {
    result = await api<Result>(`/v1/embed/results/${resultId}`);
  } catch {
    again(); // a hiccup: the request stays open on the server, look again later
    return;
  }
  const latest = result.attempts[0];
  if (!latest || latest.status === 'pending') return; // a new submission is being graded: followGrade shows it
  if (result.appeal?.status === 'open') {
    again();
    return;
  }
  activity!.result = result;
  document.getElementById('history')!.replaceWith(history(result));
  showVerdict(result, latest);
  loadProgress().catch(() => undefined);
  post({
    type: 'svc:verdict',
    v: PROTOCOL_VERSION,
    activity_id: activity!.id,
    result_id: result.id,
    status: latest.status,
    score: latest.score ?? null,
    review: result.appeal?.status === 'overridden' || latest.override ? 'overridden' : 'upheld',
  });
}

// ---------------------------------------------------------------------------------------------
// Preview: an instructor's LTI launch (no session; nothing can be submitted)

const PREVIEW_STATUS: Record<PreviewLearner['status'], string> = {
  not_started: 'Not started',
  in_progress: 'In progress',
  grading: 'Being graded',
  review: 'Held for review',
  passed: 'Passed',
  failed: 'Not passed',
  not_gradable: 'Could not be graded',
};

function renderPreview(p: PlayerPreview) {
  const banner = h(
    'p',
    { class: 'preview-banner' },
    h('strong', {}, 'Preview'),
    ' — you see this activity as learners see it. Nothing you do here is stored or sent to the gradebook.',
  );
  if (p.activity) {
    activity = p.activity as unknown as Activity;
    render();
    app.prepend(banner);
    const button = document.getElementById('submit') as HTMLButtonElement;
    button.disabled = true;
    button.setAttribute('aria-describedby', 'preview-off');
    button.after(h('p', { id: 'preview-off', class: 'hint' }, 'Submitting is off in the preview; learners can submit here.'));
  } else {
    app.setAttribute('aria-busy', 'false');
    fill(app, banner, h('h1', {}, 'This activity is not available to learners'), h('p', {}, p.unavailable ?? ''));
  }
  app.append(learnerResults(p));
  announce(p.activity ? `Preview of ${activity!.title}` : 'This activity is not available to learners');
}

/** The course's learners and their latest result on the activity. */
function learnerResults(p: PlayerPreview) {
  const title = p.course ? `Learners' results in ${p.course}` : "Learners' results";
  const when = (at: string | null) =>
    at ? h('time', { datetime: at }, new Date(at).toLocaleString('en', { dateStyle: 'medium', timeStyle: 'short' })) : 'Never';
  return h(
    'section',
    { id: 'learners', 'aria-labelledby': 'learners-h' },
    h('h2', { id: 'learners-h' }, title),
    p.learners.length === 0
      ? h(
          'p',
          {},
          'No learner of this course is known yet: learners are listed here once they open an activity of the course from the LMS, or once the LMS shares the class list.',
        )
      : h(
          'table',
          { class: 'learners' },
          h('caption', { class: 'visually-hidden' }, `${title}: status, best score and latest submission`),
          h('thead', {}, h('tr', {}, ...['Learner', 'Status', 'Score', 'Latest submission'].map((c) => h('th', { scope: 'col' }, c)))),
          h(
            'tbody',
            {},
            ...p.learners.map((l) =>
              h(
                'tr',
                {},
                h('th', { scope: 'row' }, l.name),
                h('td', { class: `status ${l.status}` }, PREVIEW_STATUS[l.status]),
                h('td', {}, l.score === null ? 'No score' : `${l.score} / 100`),
                h('td', {}, when(l.at)),
              ),
            ),
          ),
        ),
    p.more ? h('p', { class: 'hint' }, `${p.more} more learners are not listed.`) : null,
  );
}

// ---------------------------------------------------------------------------------------------
// Boot

function boot() {
  // The body's own height: the document's never drops below the frame's, so it could not shrink.
  new ResizeObserver(() => post({ type: 'svc:resize', v: PROTOCOL_VERSION, height: Math.ceil(document.body.getBoundingClientRect().height) })).observe(
    document.body,
  );
  if (config.error) return showError(new PlayerError(config.error.code, config.error.message));
  if (config.preview) return renderPreview(config.preview);
  if (config.session) {
    // Handed by the server (an LTI launch): signed in already, no host to talk to.
    keepSession(config.session);
    void loadActivity().catch((err) => showError(asPlayerError(err)));
    return;
  }
  if (!hostAllowed) return showError(new PlayerError('origin_not_allowed', `This page (${config.host}) is not allowed to embed this player.`));
  window.addEventListener('message', (event) => {
    if (event.source !== window.parent || event.origin !== config.host || !isProtocolMessage(event.data)) return;
    const data = event.data as { type: string; idp_token?: unknown };
    if (data.type === 'svc:auth' && typeof data.idp_token === 'string') void onAuth(data.idp_token);
  });
  announce('Waiting for sign-in…');
  post({ type: 'svc:ready', v: PROTOCOL_VERSION });
}

boot();
