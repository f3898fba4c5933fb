/**
 * A test language model: a plain node:http server on 127.0.0.1 (random port) with an
 * OpenAI-compatible `POST /v1/chat/completions`, so the judge's real `openai` SDK client talks
 * to it over HTTP. `baseUrl` ends with `/v1` (pass it as the judge's base URL).
 *
 * `GET /v1/models/<name>` answers as OpenAI's "retrieve model" for any name (svc doctor's check).
 *
 * Every received request body (parsed JSON) is appended to `requests`. Modes (`setMode`):
 * - `grade` (default): a structured-output completion. The rubric criterion ids are read from
 *   the request's JSON schema, `response_format.json_schema.schema.properties.criteria.items
 *   .properties.id.enum` (the grader sends them there). The artifact is the text of the user
 *   message between the lines `<<<ARTIFACT-<nonce>` and `ARTIFACT-<nonce>>>>` (the grader's
 *   delimiters, with the same nonce; the plain `<<<ARTIFACT` / `ARTIFACT>>>` too), and only that
 *   text decides: if it contains the word `TODO`, every criterion is unmet with
 *   score 0, otherwise every criterion is met with score 100. The answer is
 *   `{criteria: [{id, met, score, evidence}], feedback}` as the message content (JSON text),
 *   plus `injection_suspected` / `injection_evidence` when the schema asks for them (suspected
 *   when the section says "ignore … instructions/rubric"). A user message may be a list of parts
 *   (`text`, `image_url`): the text parts are joined, and the images are kept in `images`.
 *   A request without that schema or section gets HTTP 400, as a real API would refuse it.
 * - `fail-500`: HTTP 500 with an OpenAI-style error body.
 * - `garbage`: HTTP 200 with a completion whose content is not JSON.
 * - `slow`: never answers (until the client gives up or `close()`), to exercise timeouts.
 * - `rate-limit`: HTTP 429 with `retry-after: 0` (or what `setRetryAfter` says) and an OpenAI-style error body.
 * - `refuse`: HTTP 200 with a refusal (`message.refusal`, no content).
 * - `too-long`: HTTP 400 `context_length_exceeded`, as OpenAI answers a request too long for the model.
 * - `drop`: the connection is closed without an answer (a crashed or unreachable model).
 * - `obey`: like `grade`, but the model obeys the artifact: every criterion met with score 100
 *   and no injection reported, whatever the work says (a model fooled by a prompt injection).
 * Every completion reports `usage`: prompt tokens ≈ request characters / 4, completion tokens
 * ≈ answer characters / 4. `requests` keeps each body as received (temperature, seed, token cap).
 *
 * `setScript(fn)` scripts the `grade` mode's verdict (calibration and consistency tests: a lenient,
 * random or borderline model): `fn(artifact, n)` gets the artifact section text and the 1-based
 * number of the request, and returns `{met, score}` for every criterion (score 0–100), optional
 * `injection` (reported as suspected with that evidence), or undefined to grade as usual.
 * `setScript(undefined)` removes it.
 * `failNext(n, mode)` answers the next `n` requests in `mode` (default `fail-500`), then goes
 * back to the current mode (bounded-retry tests). `delayMs` (option or `setDelay`) delays every
 * answer; `hold()` keeps the answers to requests received from then on until the function it
 * returns is called — for a test that must see a grade pending, however slow the machine. `received`
 * counts requests (`requests.length`); `artifacts()` lists the artifact section text of every
 * request, in order.
 */
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type TestModelMode = 'grade' | 'fail-500' | 'garbage' | 'slow' | 'rate-limit' | 'refuse' | 'too-long' | 'drop' | 'obey';

export interface TestModel {
  baseUrl: string;
  requests: unknown[];
  /** Data URLs of the images received, in order. */
  images: string[];
  setMode(mode: TestModelMode): void;
  /** Answer the next `count` requests in `mode` (default `fail-500`). */
  failNext(count: number, mode?: TestModelMode): void;
  setDelay(ms: number): void;
  /** Keep the answers to the requests received from now on until the returned function is called. */
  hold(): () => void;
  /** The `retry-after` header (seconds) of `rate-limit` answers. */
  setRetryAfter(seconds: number): void;
  /** The artifact section text of every request received, in order. */
  artifacts(): string[];
  /** Script the `grade` mode's verdict per request (header); undefined: grade by `TODO` as usual. */
  setScript(fn: GradeScript | undefined): void;
  close(): Promise<void>;
}

/** A scripted verdict for one request: every criterion `met` with `score` (0–100); undefined grades as usual. */
export type GradeScript = (artifact: string, n: number) => { met: boolean; score: number; injection?: string } | undefined;

/** The artifact section: `<<<ARTIFACT[-nonce]` … `ARTIFACT[-nonce]>>>` with the same nonce. */
const SECTION = /<<<ARTIFACT(-[0-9a-f]+)?\n([\s\S]*)\nARTIFACT\1>>>/;

interface ChatRequest {
  model?: string;
  messages?: { role: string; content: unknown }[];
  response_format?: {
    json_schema?: { schema?: { properties?: { criteria?: { items?: { properties?: { id?: { enum?: unknown } } } } } } };
  };
}

/** The text of a message: a string, or the `text` parts of a list joined by newlines. */
function messageText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .filter((p): p is { type: string; text: string } => p?.type === 'text' && typeof p.text === 'string')
      .map((p) => p.text)
      .join('\n');
  }
  return JSON.stringify(content);
}

/** The `image_url` data URLs of the user messages. */
function imageUrls(body: ChatRequest): string[] {
  return (body.messages ?? [])
    .filter((m) => m.role === 'user' && Array.isArray(m.content))
    .flatMap((m) =>
      (m.content as { type?: string; image_url?: { url?: string } }[]).filter((p) => p?.type === 'image_url').map((p) => String(p.image_url?.url)),
    );
}

/** The text between the artifact delimiters in the user messages, or undefined. */
function artifactText(body: ChatRequest): string | undefined {
  for (const m of body.messages ?? []) {
    if (m.role !== 'user') continue;
    const match = SECTION.exec(messageText(m.content));
    if (match) return match[2];
  }
  return undefined;
}

let completions = 0;
function completion(model: string, content: string | null, promptChars: number, refusal: string | null = null) {
  const prompt_tokens = Math.ceil(promptChars / 4);
  const completion_tokens = Math.ceil((content ?? refusal ?? '').length / 4);
  return {
    id: `chatcmpl-test-${++completions}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [{ index: 0, message: { role: 'assistant', content, refusal }, finish_reason: 'stop', logprobs: null }],
    usage: { prompt_tokens, completion_tokens, total_tokens: prompt_tokens + completion_tokens },
  };
}

const sendJson = (res: ServerResponse, status: number, body: unknown) =>
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));

/** Start the model; `port` 0 (default) picks a free one (the demo script asks for a fixed port). */
export async function startTestModel(options: { mode?: TestModelMode; port?: number; delayMs?: number } = {}): Promise<TestModel> {
  let mode: TestModelMode = options.mode ?? 'grade';
  let delayMs = options.delayMs ?? 0;
  let gate: Promise<void> = Promise.resolve();
  let retryAfter = 0;
  const requests: unknown[] = [];
  const images: string[] = [];
  const sections: string[] = [];
  const queued: TestModelMode[] = [];
  let script: GradeScript | undefined;

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = (req.url ?? '').split('?')[0]!;
      if (req.method === 'GET' && path.startsWith('/v1/models/')) {
        // OpenAI's "retrieve model" (svc doctor's cheap request): every model name is known.
        return sendJson(res, 200, { id: decodeURIComponent(path.slice('/v1/models/'.length)), object: 'model', created: 0, owned_by: 'test' });
      }
      if (req.method !== 'POST' || path !== '/v1/chat/completions') {
        return sendJson(res, 404, { error: { message: 'not found', type: 'invalid_request_error', code: null } });
      }
      let body: ChatRequest;
      const raw = Buffer.concat(chunks).toString('utf8');
      try {
        body = JSON.parse(raw) as ChatRequest;
      } catch {
        return sendJson(res, 400, { error: { message: 'invalid JSON', type: 'invalid_request_error', code: null } });
      }
      requests.push(body);
      images.push(...imageUrls(body));
      sections.push(artifactText(body) ?? '');
      const current = queued.shift() ?? mode;
      const held = gate;
      if (delayMs > 0 && current !== 'slow') {
        setTimeout(() => void held.then(() => answer(res, body, current, raw.length)), delayMs);
        return;
      }
      void held.then(() => answer(res, body, current, raw.length));
    });
  });

  const answer = (res: ServerResponse, body: ChatRequest, current: TestModelMode, promptChars: number) => {
    if (res.destroyed) return;
    const model = body.model ?? 'test-model';
    switch (current) {
      case 'rate-limit':
        res.setHeader('retry-after', String(retryAfter));
        return sendJson(res, 429, { error: { message: 'Rate limit reached', type: 'requests', code: 'rate_limit_exceeded' } });
      case 'fail-500':
        return sendJson(res, 500, { error: { message: 'The server had an error', type: 'server_error', code: null } });
      case 'garbage':
        return sendJson(res, 200, completion(model, 'Sure! Here is my assessment: {criteria: looks good', promptChars));
      case 'refuse':
        return sendJson(res, 200, completion(model, null, promptChars, "I'm sorry, I can't help with grading this."));
      case 'too-long':
        return sendJson(res, 400, {
          error: {
            message: "This model's maximum context length is 128000 tokens.",
            type: 'invalid_request_error',
            param: 'messages',
            code: 'context_length_exceeded',
          },
        });
      case 'drop':
        return void res.socket?.destroy();
      case 'slow':
        return; // never answer; the client times out (or close() ends the connection)
      case 'obey':
      case 'grade': {
        const ids = body.response_format?.json_schema?.schema?.properties?.criteria?.items?.properties?.id?.enum;
        const artifact = artifactText(body);
        if (!Array.isArray(ids) || artifact === undefined) {
          return sendJson(res, 400, { error: { message: 'expected a rubric schema and an artifact section', type: 'invalid_request_error', code: null } });
        }
        const todo = current === 'grade' && /\bTODO\b/.test(artifact);
        const scripted = current === 'grade' ? script?.(artifact, requests.length) : undefined;
        const met = scripted ? scripted.met : !todo;
        const schemaProps = (body.response_format?.json_schema?.schema as { properties?: Record<string, unknown> } | undefined)?.properties ?? {};
        const injected = scripted
          ? scripted.injection
            ? [scripted.injection]
            : null
          : /ignore\s+(all\s+|the\s+|previous\s+)*(instructions|rubric)/i.exec(artifact);
        const verdict = {
          criteria: ids.map((id) => ({
            id,
            met,
            score: scripted ? scripted.score : todo ? 0 : 100,
            evidence: met ? 'The work addresses this criterion.' : 'The work still contains TODO markers.',
          })),
          feedback: met ? 'Well done: every criterion is met.' : 'Finish the parts marked TODO and submit again.',
          ...('injection_suspected' in schemaProps
            ? { injection_suspected: current === 'grade' && Boolean(injected), injection_evidence: (current === 'grade' && injected?.[0]) || '' }
            : {}),
        };
        return sendJson(res, 200, completion(model, JSON.stringify(verdict), promptChars));
      }
    }
  };
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', resolve);
  });
  const port = (server.address() as AddressInfo).port;

  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    images,
    setMode(next) {
      mode = next;
    },
    failNext(count, failMode = 'fail-500') {
      for (let i = 0; i < count; i++) queued.push(failMode);
    },
    setDelay(ms) {
      delayMs = ms;
    },
    hold() {
      let release!: () => void;
      gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      return release;
    },
    setRetryAfter(seconds) {
      retryAfter = seconds;
    },
    artifacts: () => sections.slice(),
    setScript(fn) {
      script = fn;
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((err) => (err ? reject(err) : resolve()));
      }),
  };
}
