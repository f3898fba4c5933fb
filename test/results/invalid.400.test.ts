/**
 * Results API, 400 invalid_request: bad limit, bad uuid, bad status, unknown and repeated
 * parameters, and every kind of cursor we did not issue for this endpoint and filter set.
 * Each message names the parameter; each body is exactly {error: {code, message}}.
 */
import { describe, expect, it } from 'vitest';
import { useApp, useFixture } from '../helpers/harness.ts';
import { expectError, get, getJson, seedTenant } from './fixtures.ts';

const t = useApp();
const a = useFixture(() => seedTenant(t, 'alpha'));

/** Expect 400 invalid_request whose message starts with `param`. */
async function expectInvalid(path: string, param: string) {
  const message = await expectError(await get(t, path, a.key), 400, 'invalid_request');
  expect(message.startsWith(`${param}:`), `${path} → ${message}`).toBe(true);
  return message;
}

/** A cursor of the first page of `path` (limit=1, so one always follows). */
async function cursorOf(path: string): Promise<string> {
  const sep = path.includes('?') ? '&' : '?';
  const body = await getJson(t, `${path}${sep}limit=1`, a.key);
  expect(typeof body.next_cursor).toBe('string');
  return body.next_cursor;
}

describe('limit', () => {
  for (const value of ['0', '201', 'abc', '-1', '1.5', '', '%205', '1e2', '0x10', '007', '99999999999999999999']) {
    it(`refuses limit=${value}`, async () => {
      await expectInvalid(`/v1/activity-results?limit=${value}`, 'limit');
    });
  }
  it('accepts 1 and 200', async () => {
    await getJson(t, '/v1/progress?limit=1', a.key);
    await getJson(t, '/v1/progress?limit=200', a.key);
  });
});

describe('uuids and enums', () => {
  const bad = [
    'nope',
    '123',
    '01a201ea-3cab-778e-8b2d-9e8dcddb5a6',
    '01a201ea3cab778e8b2d9e8dcddb5a60',
    '{01a201ea-3cab-778e-8b2d-9e8dcddb5a60}',
    'g1a201ea-3cab-778e-8b2d-9e8dcddb5a60',
  ];
  it.each([
    ['/v1/activity-results', 'activity_id'],
    ['/v1/activity-results', 'user_id'],
    ['/v1/progress', 'user_id'],
    ['/v1/progress', 'program_id'],
    ['/v1/artifacts', 'activity_id'],
    ['/v1/artifacts', 'user_id'],
  ])('%s refuses a bad %s', async (path, param) => {
    for (const value of [...bad, '']) await expectInvalid(`${path}?${param}=${encodeURIComponent(value)}`, param);
  });

  it('refuses a bad id in the path', async () => {
    for (const value of bad) {
      await expectInvalid(`/v1/activity-results/${encodeURIComponent(value)}`, 'id');
      await expectInvalid(`/v1/artifacts/${encodeURIComponent(value)}`, 'id');
    }
  });

  it('refuses an unknown status', async () => {
    for (const value of ['done', 'COMPLETED', '', 'completed,failed']) await expectInvalid(`/v1/activity-results?status=${value}`, 'status');
  });
});

describe.each([
  {
    says: 'unknown',
    cases: [
      ['/v1/activity-results?foo=1', 'foo'],
      ['/v1/activity-results?Limit=1', 'Limit'],
      ['/v1/activity-results?program_id=00000000-0000-0000-0000-000000000000', 'program_id'],
      ['/v1/progress?activity_id=00000000-0000-0000-0000-000000000000', 'activity_id'],
      ['/v1/progress?status=completed', 'status'],
      ['/v1/artifacts?status=completed', 'status'],
      ['/v1/artifacts?offset=10', 'offset'],
      ['/v1/activity-results/00000000-0000-0000-0000-000000000000?limit=1', 'limit'],
      ['/v1/artifacts/00000000-0000-0000-0000-000000000000?include=content', 'include'],
    ],
  },
  {
    says: 'more than once',
    cases: [
      ['/v1/activity-results?limit=1&limit=1', 'limit'],
      ['/v1/artifacts?user_id=00000000-0000-0000-0000-000000000000&user_id=00000000-0000-0000-0000-000000000000', 'user_id'],
      ['/v1/progress?cursor=a&cursor=b', 'cursor'],
      ['/v1/activity-results?status=failed&status=completed', 'status'],
    ],
  },
])('unknown and repeated parameters: $says', ({ says, cases }) => {
  it.each(cases)('%s → 400 naming %s', async (path, param) => {
    const message = await expectInvalid(path, param);
    expect(message).toContain(says);
  });
});

describe('cursor', () => {
  it('refuses garbage, empty, overlong and non-base64url strings', async () => {
    for (const value of ['abc', 'AAAA', '', '!!!', 'not a cursor', 'A'.repeat(600), 'eyJhbGciOiJub25lIn0']) {
      await expectInvalid(`/v1/activity-results?cursor=${encodeURIComponent(value)}`, 'cursor');
    }
  });

  it('refuses a truncated or extended cursor', async () => {
    const c = await cursorOf('/v1/activity-results');
    for (const value of [c.slice(0, -1), c.slice(0, -4), c.slice(0, 20), c.slice(1), `${c}A`, `${c}AAAA`]) {
      await expectInvalid(`/v1/activity-results?cursor=${value}`, 'cursor');
    }
  });

  it('refuses a re-encoded cursor (padding, standard alphabet, whitespace, rewritten JSON)', async () => {
    const c = await cursorOf('/v1/activity-results');
    const raw = Buffer.from(c, 'base64url');
    const tag = raw.subarray(0, 16);
    const payload = JSON.parse(raw.subarray(16).toString());
    const variants = [
      `${c}=`,
      `${c}==`,
      raw.toString('base64').replace(/=+$/, '') === c ? `${raw.toString('base64')}=` : raw.toString('base64'),
      `${c.slice(0, 10)}\n${c.slice(10)}`,
      `${c.slice(0, 10)} ${c.slice(10)}`,
      Buffer.concat([tag, Buffer.from(JSON.stringify(payload, null, 1))]).toString('base64url'),
      Buffer.from(JSON.stringify(payload)).toString('base64url'),
    ];
    for (const value of variants) {
      expect(value).not.toBe(c);
      await expectInvalid(`/v1/activity-results?cursor=${encodeURIComponent(value)}`, 'cursor');
    }
    // The untouched cursor still works.
    await getJson(t, `/v1/activity-results?cursor=${c}`, a.key);
  });

  it('refuses an edited cursor (position moved, endpoint or filters rewritten, tag kept)', async () => {
    const c = await cursorOf('/v1/activity-results');
    const raw = Buffer.from(c, 'base64url');
    const tag = raw.subarray(0, 16);
    const [version, endpoint, filters, createdAt, id] = JSON.parse(raw.subarray(16).toString());
    const edit = (parts: unknown[]) => Buffer.concat([tag, Buffer.from(JSON.stringify(parts))]).toString('base64url');
    for (const value of [
      edit([version, endpoint, filters, '1970-01-01T00:00:00.000000Z', id]),
      edit([version, endpoint, filters, createdAt, '00000000-0000-0000-0000-000000000000']),
      edit([version, 'artifacts', filters, createdAt, id]),
      edit(['v2', endpoint, filters, createdAt, id]),
    ]) {
      await expectInvalid(`/v1/activity-results?cursor=${value}`, 'cursor');
    }
    const flipped = Buffer.from(raw);
    flipped[3]! ^= 1;
    await expectInvalid(`/v1/activity-results?cursor=${flipped.toString('base64url')}`, 'cursor');
  });

  it('refuses a cursor issued by another endpoint', async () => {
    const fromResults = await cursorOf('/v1/activity-results');
    const fromArtifacts = await cursorOf('/v1/artifacts');
    const fromProgress = await cursorOf('/v1/progress');
    const m = await expectInvalid(`/v1/artifacts?cursor=${fromResults}`, 'cursor');
    expect(m).toContain('/v1/activity-results');
    await expectInvalid(`/v1/progress?cursor=${fromArtifacts}`, 'cursor');
    await expectInvalid(`/v1/activity-results?cursor=${fromProgress}`, 'cursor');
    // …each works where it came from.
    await getJson(t, `/v1/artifacts?cursor=${fromArtifacts}`, a.key);
    await getJson(t, `/v1/progress?cursor=${fromProgress}`, a.key);
  });

  it('refuses a cursor issued for another filter set', async () => {
    const activity = a.activityIds[0]!;
    const unfiltered = await cursorOf('/v1/activity-results');
    const filtered = await cursorOf(`/v1/activity-results?activity_id=${activity}`);
    const byUser = await cursorOf(`/v1/artifacts?user_id=${a.userIds[0]}`);
    await expectInvalid(`/v1/activity-results?activity_id=${activity}&cursor=${unfiltered}`, 'cursor');
    await expectInvalid(`/v1/activity-results?cursor=${filtered}`, 'cursor');
    await expectInvalid(`/v1/activity-results?activity_id=${a.activityIds[1]}&cursor=${filtered}`, 'cursor');
    await expectInvalid(`/v1/activity-results?activity_id=${activity}&status=failed&cursor=${filtered}`, 'cursor');
    await expectInvalid(`/v1/activity-results?user_id=${activity}&cursor=${filtered}`, 'cursor');
    await expectInvalid(`/v1/artifacts?user_id=${a.userIds[1]}&cursor=${byUser}`, 'cursor');
    const m = await expectInvalid(`/v1/artifacts?cursor=${byUser}`, 'cursor');
    expect(m).toContain('filters');
    // Same filters in another order or letter case are the same filter set.
    await getJson(t, `/v1/activity-results?status=failed&cursor=${filtered}&activity_id=${activity.toUpperCase()}`, a.key, 400);
    await getJson(t, `/v1/activity-results?cursor=${filtered}&activity_id=${activity.toUpperCase()}`, a.key);
    await getJson(t, `/v1/artifacts?cursor=${byUser}&user_id=${a.userIds[0]}`, a.key);
  });
});

describe('the request itself', () => {
  it('refuses an oversized URL with 400 in the error body', async () => {
    const message = await expectError(await get(t, `/v1/activity-results?user_id=${'a'.repeat(5000)}`, a.key), 400, 'invalid_request');
    expect(message).toMatch(/^url:/);
  });

  it('answers an unknown path under /v1 with 404 not_found in the error body', async () => {
    for (const path of ['/v1/nope', '/v1', '/v1/', '/v1/activity-results/00000000-0000-0000-0000-000000000000/extra', '/v1/results']) {
      await expectError(await get(t, path, a.key), 404, 'not_found');
    }
    const post = (body: string) =>
      fetch(`${t.url}/v1/activity-results`, {
        method: 'POST',
        headers: { authorization: `Bearer ${a.key}`, 'content-type': 'application/json' },
        body,
      });
    const refused = await post('{}');
    expect(refused.headers.get('allow')).toBe('GET, HEAD');
    await expectError(refused, 405, 'method_not_allowed');
  });

  it('refuses a body that is not JSON with 400 in the error body', async () => {
    const res = await fetch(`${t.url}/v1/activity-results`, {
      method: 'POST',
      headers: { authorization: `Bearer ${a.key}`, 'content-type': 'application/json' },
      body: '{not json',
    });
    await expectError(res, 400, 'invalid_request');
  });
});
