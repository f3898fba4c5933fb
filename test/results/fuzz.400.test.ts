/**
 * Bad input, property-based (fast-check): every parameter of every Results API route gets
 * random strings, unicode, huge and negative numbers, near-miss uuids and timestamps, truncated,
 * edited and re-encoded cursors, repeated parameters and very long URLs. Every answer is either
 * a 200 holding only the key's tenant's rows, or a 4xx with exactly the error body — never a
 * 5xx, never another tenant's data.
 */
import { connect } from 'node:net';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { useApp, useFixture } from '../helpers/harness.ts';
import { expectError, getJson, seedTenant } from './fixtures.ts';

let foreign: Set<string>;
let cursors: { own: string; foreignCursor: string; feed: string };
const t = useApp();
const a = useFixture(() => seedTenant(t, 'alpha'));
const b = useFixture(() => seedTenant(t, 'beta'));
beforeAll(async () => {
  foreign = new Set([...b.resultIds, ...b.artifactIds, ...b.userIds, b.programId, b.emptyProgramId, ...b.activityIds, b.lessonId]);
  cursors = {
    own: (await getJson(t, '/v1/activity-results?limit=1', a.key)).next_cursor,
    foreignCursor: (await getJson(t, '/v1/activity-results?limit=1', b.key)).next_cursor,
    feed: (await getJson(t, '/v1/artifacts?limit=1&updated_since=2000-01-01T00:00:00Z', a.key)).next_cursor,
  };
});

const RUNS = Number(process.env.FUZZ_RUNS ?? 100);
const LISTS = ['/v1/activity-results', '/v1/progress', '/v1/artifacts'];
const NAMES = ['limit', 'cursor', 'updated_since', 'activity_id', 'user_id', 'status', 'program_id', 'offset', 'Limit', '__proto__', 'constructor', 'id', ''];

/** Every id and foreign-tenant reference in a 200 body. */
function collectIds(node: unknown, out: string[] = []): string[] {
  if (Array.isArray(node)) for (const v of node) collectIds(v, out);
  else if (node && typeof node === 'object') for (const v of Object.values(node)) collectIds(v, out);
  else if (typeof node === 'string') out.push(node);
  return out;
}

/** GET and check the answer: 200 with only tenant A's data, or 4xx with the exact error body. */
async function probe(url: string, allowed: number[]): Promise<number> {
  const res = await fetch(`${t.url}${url}`, { headers: { authorization: `Bearer ${a.key}` } });
  expect(res.status, url).toBeLessThan(500);
  expect(allowed, `${url} → ${res.status}`).toContain(res.status);
  if (res.status === 200) {
    const body = await res.json();
    for (const value of collectIds(body)) expect(foreign.has(value), `${url} leaked ${value}`).toBe(false);
  } else {
    await expectError(res, res.status, res.status === 404 ? 'not_found' : res.status === 401 ? 'unauthorized' : 'invalid_request');
  }
  return res.status;
}

const uuidish = fc.oneof(
  fc.uuid(),
  fc.uuid().map((u) => u.toUpperCase()),
  fc.uuid().map((u) => u.replace(/-/g, '')),
  fc.uuid().map((u) => `{${u}}`),
  fc.uuid().map((u) => u.slice(0, -1)),
  fc.uuid().map((u) => `${u} `),
  fc.constant('00000000-0000-0000-0000-000000000000'),
);

const timestampish = fc.oneof(
  fc.date({ min: new Date('0001-01-01'), max: new Date('9999-12-31'), noInvalidDate: true }).map((d) => d.toISOString()),
  fc.date({ noInvalidDate: true }).map((d) => d.toISOString().replace('Z', '+05:30')),
  fc.date({ noInvalidDate: true }).map((d) => d.toISOString().replace('T', ' ')),
  fc.date({ noInvalidDate: true }).map((d) => `${d.toISOString().slice(0, -1)}1234Z`),
  fc.date({ noInvalidDate: true }).map((d) => String(d.getTime())),
  fc.constantFrom('2026-02-29T00:00:00Z', '2024-02-29T00:00:00Z', '2026-01-01T00:00:60Z', '+002026-01-01T00:00:00Z', 'now', '∞'),
);

const numberish = fc.oneof(
  fc.integer({ min: -1_000_000, max: 1_000_000 }).map(String),
  fc.bigInt({ min: -(10n ** 40n), max: 10n ** 40n }).map(String),
  fc.double().map(String),
  fc.constantFrom('0', '1', '200', '201', '050', '1e2', ' 5', '5 ', '+5', '0x10', 'NaN', 'Infinity', '9'.repeat(400), '١٢'),
);

const anyString = fc.oneof(
  fc.string(),
  fc.string({ unit: 'binary' }),
  fc.string({ unit: 'grapheme', maxLength: 50 }),
  fc.string({ minLength: 1000, maxLength: 6000 }),
);

const value = fc.oneof(anyString, uuidish, timestampish, numberish, fc.constantFrom('completed', 'failed', 'in_progress', 'COMPLETED', ''));

/** A query string: parameters from the real names and random ones, some repeated. */
const query = fc
  .array(fc.tuple(fc.oneof(fc.constantFrom(...NAMES), fc.string({ maxLength: 20 })), value), { maxLength: 6 })
  .chain((pairs) => fc.tuple(fc.constant(pairs), fc.boolean()))
  .map(([pairs, repeat]) => {
    const all = repeat && pairs.length ? [...pairs, pairs[0]!] : pairs;
    return all.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&');
  });

describe('fuzzed query strings on every list', () => {
  it('answer 200 (own data only) or 400 with the error body', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...LISTS), query, async (path, q) => {
        await probe(`${path}?${q}`, [200, 400]);
      }),
      { numRuns: RUNS },
    );
  });

  it('raw, unencoded garbage after the `?` too', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...LISTS), fc.string({ unit: 'binary', maxLength: 200 }), async (path, raw) => {
        // fetch() percent-encodes what a URL cannot hold; the rest reaches the server as typed.
        await probe(`${path}?${raw}`, [200, 400]);
      }),
      { numRuns: RUNS },
    );
  });

  it('tenant B’s ids as filters never reveal B’s rows', async () => {
    const ids = [...foreign];
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...LISTS), fc.constantFrom('activity_id', 'user_id', 'program_id'), fc.constantFrom(...ids), async (path, name, id) => {
        await probe(`${path}?${name}=${id}`, [200, 400]);
      }),
      { numRuns: Math.min(RUNS, 60) },
    );
  });
});

describe('fuzzed path ids', () => {
  // 414: a path segment longer than Fastify's maxParamLength (100) is refused by the router,
  // before any plugin runs, still with the /v1 error body (app.ts frameworkErrors).
  it('answer 400 (not a uuid), 414 (too long for the router) or 404 (not ours), never 5xx', async () => {
    const ids = fc.oneof(
      anyString.filter((s) => s.length < 3000),
      uuidish,
      fc.constantFrom(...b.resultIds, ...b.artifactIds, '..', '%', '%00', '.', '%2F'),
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('/v1/activity-results/', '/v1/artifacts/'), ids, fc.boolean(), async (base, id, encode) => {
        const segment = encode ? encodeURIComponent(id) : id.replace(/[/?#]/g, '');
        const status = await probe(`${base}${segment}`, [200, 400, 404, 414]);
        if (status === 200) expect(a.resultIds.concat(a.artifactIds)).toContain(id.toLowerCase());
      }),
      { numRuns: RUNS },
    );
  });
});

describe('fuzzed cursors', () => {
  const mutation = fc.oneof(
    fc.nat().map((n) => (c: string) => c.slice(0, n % c.length)),
    fc.nat().map((n) => (c: string) => c.slice(n % c.length)),
    fc.tuple(fc.nat(), fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_')).map(
      ([n, ch]) =>
        (c: string) =>
          c.slice(0, n % c.length) + ch + c.slice((n % c.length) + 1),
    ),
    fc.tuple(fc.nat(), fc.string({ minLength: 1, maxLength: 4 })).map(
      ([n, s]) =>
        (c: string) =>
          c.slice(0, n % c.length) + s + c.slice(n % c.length),
    ),
    fc.constant((c: string) => `${c}=`),
    fc.constant((c: string) => Buffer.from(c, 'base64url').toString('base64')),
    fc.constant((c: string) => Buffer.from(Buffer.from(c, 'base64url').toString('latin1').toUpperCase(), 'latin1').toString('base64url')),
    fc.constant((c: string) => c.repeat(3)),
  );

  it('a changed cursor is refused with 400; only the untouched one pages', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('own', 'foreignCursor', 'feed') as fc.Arbitrary<keyof typeof cursors>,
        mutation,
        fc.constantFrom(...LISTS),
        async (which, mutate, path) => {
          const original = cursors[which];
          const cursor = mutate(original);
          const feed = which === 'feed' ? '&updated_since=2000-01-01T00:00:00Z' : '';
          const status = await probe(`${path}?cursor=${encodeURIComponent(cursor)}${feed}`, [200, 400]);
          const usable = cursor === original && which !== 'foreignCursor' && path === (which === 'feed' ? '/v1/artifacts' : '/v1/activity-results');
          expect(status, `${which} ${cursor} on ${path}`).toBe(usable ? 200 : 400);
        },
      ),
      { numRuns: RUNS },
    );
  });
});

describe('very long URLs', () => {
  it('are refused with 400 in the error body, also beyond the HTTP parser’s own header limit (16 KiB)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 4000, max: 100_000 }), fc.constantFrom(...LISTS), async (n, path) => {
        const status = await probe(`${path}?cursor=${'A'.repeat(n)}`, [400]);
        expect(status).toBe(400);
      }),
      { numRuns: 20 },
    );
    // Past Node's limit (the parser refuses before Fastify runs): still the error body.
    await probe(`/v1/activity-results?cursor=${'A'.repeat(20_000)}`, [400]);
  });

  it('bytes that are not HTTP get a 400 in the error body, not a bare status line', async () => {
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(new URL(t.url).port), '127.0.0.1', () => socket.write('NOT HTTP AT ALL\r\n\r\n'));
      let data = '';
      socket.on('data', (chunk) => (data += chunk));
      socket.on('end', () => resolve(data));
      socket.on('error', reject);
    });
    const [head, body] = answer.split('\r\n\r\n');
    expect(head).toMatch(/^HTTP\/1\.1 400 /);
    const requestId = /x-request-id: (\S+)/i.exec(head!)?.[1];
    expect(JSON.parse(body!)).toEqual({ error: { code: 'invalid_request', message: 'malformed HTTP request', request_id: requestId } });
  });
});
