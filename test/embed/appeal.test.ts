/**
 * `POST /v1/embed/results/{id}/appeal` (issue #21 "Learner appeals"): a learner asks for a review
 * of a verdict of their own, with a session token. 201 with the appeal, which the result view then
 * shows; 404 for another learner's or another tenant's result (never 403); 409 `verdict_pending`
 * while the latest submission has no verdict, 409 `appeal_open` for a second open appeal; 400 for
 * an empty or oversized message; 401 without a session; 429 with Retry-After beyond the learner's
 * rate. Nothing is stored on a refusal.
 */
import { describe, expect, it } from 'vitest';
import { countRows, expectError, post, startEmbedWorld, type EmbedWorld } from './fixtures.ts';
import { useServer } from '../helpers/harness.ts';

// Long enough for a grade on a loaded machine; the pending test's model never answers, so it waits it out.
const w = useServer(() => startEmbedWorld({ embed: { judgeWaitMs: 6000 } }));

async function session(world: EmbedWorld, sub: string, tenant = 'acme'): Promise<string> {
  const res = await post(world.t, '/v1/embed/session', { tenant, idp_token: await world.idp.sign({ sub }) });
  expect(res.status).toBe(200);
  return res.body.access_token;
}

async function graded(world: EmbedWorld, token: string, content = 'A fine note.', activityId = world.doc.activityId) {
  const res = await post(
    world.t,
    '/v1/embed/judge',
    { tenant: 'acme', activity_id: activityId, artifact: { kind: 'document', content } },
    { authorization: `Bearer ${token}` },
  );
  expect(res.status).toBe(200);
  return res.body as { status: string; result_id: string; artifact_id: string };
}

const appeal = (world: EmbedWorld, token: string | undefined, resultId: string, body: unknown) =>
  post(world.t, `/v1/embed/results/${resultId}/appeal`, body, token ? { authorization: `Bearer ${token}` } : {});

const openAppeals = (world: EmbedWorld, resultId: string) => countRows(world.t, 'reviews', "result_id = $1 and kind = 'appeal'", [resultId]);

describe('an appeal', () => {
  it('is filed once (201), shown with the result, and a second open one is refused (409 appeal_open)', async () => {
    const me = await session(w, 'appeal-1');
    const r = await graded(w, me, 'TODO: failed');
    const res = await appeal(w, me, r.result_id, { message: '  I think criterion 2 is met: see section 3.  ' });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ id: expect.any(String), status: 'open', message: 'I think criterion 2 is met: see section 3.', created_at: expect.any(String) });
    const seen = await fetch(`${w.t.url}/v1/embed/results/${r.result_id}`, { headers: { authorization: `Bearer ${me}` } }).then((x) => x.json());
    expect(seen.appeal).toEqual(res.body);
    expectError(await appeal(w, me, r.result_id, { message: 'Again' }), 409, 'appeal_open');
    expect(await openAppeals(w, r.result_id)).toBe(1);
  });

  it("cannot be filed on another learner's or another tenant's result (404, nothing stored)", async () => {
    const owner = await session(w, 'appeal-owner');
    const other = await session(w, 'appeal-other');
    const r = await graded(w, owner);
    const refused = await appeal(w, other, r.result_id, { message: 'Not mine' });
    expectError(refused, 404, 'not_found');
    expect(refused.body.error.message).toBe(`result ${r.result_id} not found`);
    // another tenant's learner (an embed session bound to globex)
    await w.t.op('tenant.create', { slug: 'globex-appeal' }).catch(() => undefined);
    await w.t.op('idp.set', { tenant: 'globex-appeal', issuer: w.idp.issuer, jwks_url: w.idp.jwksUrl });
    const foreign = await session(w, 'appeal-foreign', 'globex-appeal');
    expectError(await appeal(w, foreign, r.result_id, { message: 'Not mine either' }), 404, 'not_found');
    expectError(await appeal(w, owner, '00000000-0000-7000-8000-000000000000', { message: 'Unknown' }), 404, 'not_found');
    expect(await openAppeals(w, r.result_id)).toBe(0);
  });

  it('is refused while the verdict is pending (409 verdict_pending)', async () => {
    const me = await session(w, 'appeal-pending');
    w.model.setMode('slow');
    let r: Awaited<ReturnType<typeof graded>>;
    try {
      r = await graded(w, me);
    } finally {
      w.model.setMode('grade');
    }
    expect(r.status).toBe('pending');
    const res = await appeal(w, me, r.result_id, { message: 'Too early' });
    expectError(res, 409, 'verdict_pending');
    expect(res.body.error.message).toMatch(/no verdict yet/);
    expect(await openAppeals(w, r.result_id)).toBe(0);
  });

  it('refuses bad input with 400 naming the field, and no session with 401; nothing stored', async () => {
    const me = await session(w, 'appeal-bad');
    const r = await graded(w, me);
    for (const body of [{ message: '' }, { message: '   ' }, { message: 'x'.repeat(1001) }, {}, { message: 42 }, { message: 'ok', extra: 1 }]) {
      const res = await appeal(w, me, r.result_id, body);
      expectError(res, 400, 'invalid_request');
      expect(res.body.error.message).toMatch(/message|extra|unrecognized/i);
    }
    expectError(await appeal(w, me, 'not-a-uuid', { message: 'ok' }), 400, 'invalid_request');
    expectError(await appeal(w, undefined, r.result_id, { message: 'ok' }), 401, 'unauthorized');
    expectError(await appeal(w, await w.idp.sign({ sub: 'appeal-bad' }), r.result_id, { message: 'ok' }), 401, 'unauthorized');
    expect(await openAppeals(w, r.result_id)).toBe(0);
    // exactly 1000 characters is fine
    expect((await appeal(w, me, r.result_id, { message: 'y'.repeat(1000) })).status).toBe(201);
  });
});

describe('the appeal rate', () => {
  const limited = useServer(() => startEmbedWorld({ embed: { appealRate: 2, appealWindowSeconds: 600 } }));

  it('is per learner: beyond it 429 rate_limited with Retry-After, nothing stored', async () => {
    const me = await session(limited, 'appeal-rate');
    const results: string[] = [];
    for (const content of ['one', 'two', 'three']) {
      // one result per activity: seed two more activities
      const [row] = await limited.t.db.query<{ id: string }>(
        `insert into activities (lesson_id, title, kind, spec, rubric) values ($1, $2, 'document', 'Write.', '[{"criterion":"Writes"}]') returning id`,
        [limited.doc.lessonId, `Activity ${content}`],
      );
      results.push((await graded(limited, me, `A note ${content}`, row!.id)).result_id);
    }
    expect((await appeal(limited, me, results[0]!, { message: 'first' })).status).toBe(201);
    expect((await appeal(limited, me, results[1]!, { message: 'second' })).status).toBe(201);
    const res = await fetch(`${limited.t.url}/v1/embed/results/${results[2]}/appeal`, {
      method: 'POST',
      headers: { authorization: `Bearer ${me}`, 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'third' }),
    });
    expect(res.status).toBe(429);
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('rate_limited');
    expect(await openAppeals(limited, results[2]!)).toBe(0);
    // another learner has their own count
    const other = await session(limited, 'appeal-rate-2');
    const theirs = await graded(limited, other);
    expect((await appeal(limited, other, theirs.result_id, { message: 'mine' })).status).toBe(201);
  });
});
