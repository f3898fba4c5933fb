/**
 * `Idempotency-Key` on POST /v1/embed/judge (issue #11): a retry with the same key within 24 h
 * gets the first answer and creates nothing; concurrent first tries make one submission; the
 * key reused with another body is 422; malformed keys are 400; keys are the learner's own.
 */
import { describe, expect, it } from 'vitest';
import { countRows, expectError, startEmbedWorld } from './fixtures.ts';
import { useServer } from '../helpers/harness.ts';

const w = useServer(() => startEmbedWorld({ embed: { learnerRate: 3 } }));

async function judge(sub: string, key: string | undefined, content = 'complete work', order: 'plain' | 'reordered' = 'plain') {
  const artifact = { kind: 'document', content };
  const body =
    order === 'plain'
      ? { tenant: 'acme', activity_id: w.doc.activityId, artifact }
      : { artifact: { content, kind: 'document' }, activity_id: w.doc.activityId, tenant: 'acme' };
  const res = await fetch(`${w.t.url}/v1/embed/judge`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      authorization: `Bearer ${await w.idp.sign({ sub })}`,
      ...(key !== undefined && { 'idempotency-key': key }),
    },
    body: JSON.stringify(body),
  });
  return { status: res.status, replayed: res.headers.get('idempotent-replayed'), body: (await res.json()) as any };
}

const artifacts = () => countRows(w.t, 'artifacts');

describe('Idempotency-Key', () => {
  it('answers a retry with the first answer and creates nothing', async () => {
    const first = await judge('retrier', 'key-1', 'retried complete work');
    expect(first.status).toBe(200);
    expect(first.body.status).toBe('passed');
    expect(first.replayed).toBeNull();
    const [count, calls] = [await artifacts(), w.model.requests.length];
    const again = await judge('retrier', 'key-1', 'retried complete work', 'reordered');
    expect(again.status).toBe(200);
    expect(again.replayed).toBe('true');
    expect(again.body).toEqual(first.body);
    expect(await artifacts()).toBe(count);
    expect(w.model.requests.length).toBe(calls);
  });

  it('makes one submission out of ten concurrent first tries', async () => {
    const before = await artifacts();
    const all = await Promise.all(Array.from({ length: 10 }, () => judge('racer', 'same-key', 'raced complete work')));
    expect(all.map((r) => r.status)).toEqual(Array(10).fill(200));
    expect(new Set(all.map((r) => r.body.artifact_id)).size).toBe(1);
    expect(all.filter((r) => r.replayed === 'true')).toHaveLength(9);
    expect((await artifacts()) - before).toBe(1);
  });

  it('refuses the key with another body: 422, nothing new', async () => {
    await judge('reuser', 'key-2', 'first text');
    const before = await artifacts();
    const res = await judge('reuser', 'key-2', 'another text');
    expectError(res, 422, 'idempotency_key_reused');
    expect(await artifacts()).toBe(before);
  });

  it.each([
    ['too long', 'k'.repeat(256)],
    ['with a space', 'two words'],
    ['empty', ''],
  ])('refuses a key %s with 400, nothing written', async (_what, key) => {
    const before = await artifacts();
    const res = await judge('malformed', key);
    expectError(res, 400, 'invalid_request');
    expect(res.body.error.message).toMatch(/Idempotency-Key/);
    expect(await artifacts()).toBe(before);
  });

  it('keeps keys apart per learner', async () => {
    const a = await judge('learner-a', 'shared-key', 'a complete');
    const b = await judge('learner-b', 'shared-key', 'b complete');
    expect(a.body.artifact_id).not.toBe(b.body.artifact_id);
    expect(b.replayed).toBeNull();
  });

  it('does not count a replay against the learner rate', async () => {
    const first = await judge('rated', 'rate-key');
    for (let i = 0; i < 5; i++) expect((await judge('rated', 'rate-key')).replayed).toBe('true');
    expect((await judge('rated', 'rate-key-2')).status).toBe(200);
    expect((await judge('rated', 'rate-key-3')).status).toBe(200);
    expectError(await judge('rated', 'rate-key-4'), 429, 'rate_limited');
    expect(first.status).toBe(200);
  });

  it('forgets a key after 24 hours: the same key then makes a new submission', async () => {
    const first = await judge('later', 'old-key');
    await w.t.db.query(`update judge_idempotency_keys set created_at = now() - interval '25 hours' where key = 'old-key'`);
    const again = await judge('later', 'old-key');
    expect(again.replayed).toBeNull();
    expect(again.body.artifact_id).not.toBe(first.body.artifact_id);
  });
});
