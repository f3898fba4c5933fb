/**
 * A submission whose transaction PostgreSQL aborts as a deadlock victim (40P01) or for a
 * serialization failure (40001) runs again and is stored once (src/db/rerun.ts; its program
 * order lock can meet a concurrent move's, migration 0131). The failure is forced by a trigger on
 * artifacts that fails the first N inserts with that SQLSTATE — counted by a sequence, which a
 * rollback does not undo — so the test is deterministic on both backends.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { RERUNS } from '../../src/db/rerun.ts';
import { startApp, useFixture } from '../helpers/harness.ts';
import { countRows, post, seedActivity, useAppWithIdp } from './fixtures.ts';

const { t, idp } = useAppWithIdp({ acme: {} }, () => startApp()); // no model: a stored submission answers `pending`
const doc = useFixture(() => seedActivity(t, 'acme'));

/** Make the next `failures` artifact inserts fail with `code`; returns how many inserts were tried. */
async function failArtifactInserts(code: string, failures: number): Promise<() => Promise<number>> {
  await t.db.exec(`
    create sequence if not exists test_artifact_tries;
    select setval('test_artifact_tries', 1, false);
    create or replace function test_fail_artifact() returns trigger language plpgsql as $$
    begin
      if nextval('test_artifact_tries') <= ${failures} then
        raise exception 'simulated conflict' using errcode = '${code}';
      end if;
      return new;
    end $$;
    drop trigger if exists test_fail_artifact on artifacts;
    create trigger test_fail_artifact before insert on artifacts for each row execute function test_fail_artifact();`);
  return async () => Number((await t.db.query<{ n: string }>(`select last_value as n from test_artifact_tries`))[0]!.n);
}
afterEach(async () => {
  await t.db.exec('drop trigger if exists test_fail_artifact on artifacts');
});

const submit = async (sub: string) =>
  post(
    t,
    '/v1/embed/judge',
    { tenant: 'acme', activity_id: doc.activityId, artifact: { kind: 'document', content: 'A note.' } },
    {
      authorization: `Bearer ${await idp.sign({ sub })}`,
    },
  );
const artifactsOf = (sub: string) =>
  countRows(t, 'artifacts', `user_id = (select u.id from users u join auth.identities i on i.user_id = u.auth_user_id where i.provider_id = $1)`, [sub]);

describe('a submission aborted by a deadlock or serialization failure', () => {
  it.each(['40P01', '40001'])('%s: runs again and is stored once', async (code) => {
    const tries = await failArtifactInserts(code, RERUNS);
    const res = await submit(`rerun-${code}`);
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('pending');
    expect(await tries()).toBe(RERUNS + 1);
    expect(await artifactsOf(`rerun-${code}`)).toBe(1);
  });

  it('gives up after the reruns: an error, nothing stored', async () => {
    const tries = await failArtifactInserts('40P01', RERUNS + 5);
    const res = await submit('rerun-give-up');
    expect(res.status).toBeGreaterThanOrEqual(500);
    expect(await tries()).toBe(RERUNS + 1);
    expect(await artifactsOf('rerun-give-up')).toBe(0);
  });
});
