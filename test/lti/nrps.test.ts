/**
 * Names and Role Provisioning Services 2.0 (issue #22): an instructor's launch with the NRPS claim
 * queues a roster read that follows `Link: rel="next"` pages of the loopback LMS (lms-services.ts)
 * and provisions the course's learners, so `/v1/learners` lists them before anyone submits.
 */
import { describe, expect, it } from 'vitest';
import type { JWTPayload } from 'jose';
import { startApp, useApp, useFixture, useServer } from '../helpers/harness.ts';
import { seedActivity } from '../embed/fixtures.ts';
import { readRoster } from '../../src/lti/nrps.ts';
import { startTestLms } from './lms.ts';
import { addLmsServices } from './lms-services.ts';

const LEARNER = 'http://purl.imsglobal.org/vocab/lis/v2/membership#Learner';
const INSTRUCTOR = 'http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor';

const lms = useServer(startTestLms);
const t = useApp(() => startApp());
const world = useFixture(async () => {
  lms.setTool(t.url);
  const services = addLmsServices(lms, () => t.url);
  services.members = [
    { user_id: 'teach-1', roles: [INSTRUCTOR], name: 'Tess Teacher' },
    { user_id: 'stu-1', roles: [LEARNER], name: 'Ana One', given_name: 'Ana', family_name: 'One', email: 'ana@school.example' },
    { user_id: 'stu-2', roles: ['Learner'], name: 'Ben Two' },
    { user_id: 'stu-3', roles: [LEARNER], status: 'Inactive', name: 'Gone Three' },
    { user_id: 'stu-4', roles: [LEARNER], status: 'Active', name: 'Dot Four' },
  ];
  services.pageSize = 2;
  await t.op('tenant.create', { slug: 'acme' });
  await t.op('lti.platforms.add', { tenant: 'acme', ...lms.registration });
  const key = await t.op('key.create', { tenant: 'acme', name: 'dashboard' });
  return { services, activity: await seedActivity(t, 'acme'), key: key.key as string };
});

/** An instructor's resource-link launch of the placed activity with the NRPS claim. */
async function instructorLaunch(sub: string, change: (c: JWTPayload) => JWTPayload = (c) => c) {
  const res = await fetch(
    `${t.url}/lti/v1/login?${new URLSearchParams({ iss: lms.issuer, login_hint: sub, target_link_uri: `${t.url}/lti/v1/launch`, client_id: lms.clientId })}`,
    { redirect: 'manual' },
  );
  const auth = new URL(res.headers.get('location')!);
  const claims = change({
    ...lms.launchClaims({ activity: world.activity.activityId, sub, nonce: auth.searchParams.get('nonce')! }),
    'https://purl.imsglobal.org/spec/lti/claim/roles': [INSTRUCTOR],
    'https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice': { context_memberships_url: world.services.membershipsUrl, service_versions: ['2.0'] },
  });
  return fetch(`${t.url}/lti/v1/launch`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: res.headers.get('set-cookie')!.split(';')[0]! },
    body: new URLSearchParams({ id_token: await lms.idToken(claims), state: auth.searchParams.get('state')! }),
  });
}

const learners = async () => {
  const res = await fetch(`${t.url}/v1/learners?limit=200`, { headers: { authorization: `Bearer ${world.key}` } });
  expect(res.status).toBe(200);
  const body = (await res.json()) as { data: { external_ids: { issuer: string; subject: string; source?: string }[] }[] };
  return body.data.flatMap((l) => l.external_ids.filter((e) => e.issuer === lms.issuer).map((e) => e.subject)).sort();
};

describe('the roster read (NRPS 2.0)', () => {
  it("queues a read on an instructor's launch; /v1/learners lists the class's active learners before anyone submits", async () => {
    expect(await learners()).toEqual([]);
    const res = await instructorLaunch('teach-1');
    expect(res.status).toBeLessThan(500);
    await expect.poll(learners, { timeout: 20_000 }).toEqual(['stu-1', 'stu-2', 'stu-4']);
    expect(world.services.memberPages).toBe(3); // 5 members, 2 a page: every rel="next" followed
    // members of the course with source nrps; the instructor and the inactive learner are not provisioned
    const members = await t.db.query<{ subject: string; source: string }>(
      `select i.provider_id as subject, m.source from lti_context_members m join users u on u.id = m.user_id
         join auth.identities i on i.user_id = u.auth_user_id order by 1`,
    );
    expect(members).toEqual([
      { subject: 'stu-1', source: 'nrps' },
      { subject: 'stu-2', source: 'nrps' },
      { subject: 'stu-4', source: 'nrps' },
    ]);
    const [ana] = await t.db.query<{ identity_data: Record<string, unknown>; last_sign_in_at: string | null }>(
      `select identity_data, last_sign_in_at from auth.identities where provider_id = 'stu-1'`,
    );
    expect(ana!.identity_data).toMatchObject({ name: 'Ana One', email: 'ana@school.example', source: 'lti' });
    expect(ana!.last_sign_in_at).toBeNull(); // provisioned, never launched
    expect(
      await t.db.query(
        `select 1 from memberships m join users u on u.id = m.user_id join auth.identities i on i.user_id = u.auth_user_id where i.provider_id = 'stu-1' and m.role = 'learner'`,
      ),
    ).toHaveLength(1);
  }, 40_000);

  it('maps a roster learner to the same user a later launch gets, and keeps the source of a launch', async () => {
    const [before] = await t.db.query<{ user_id: string }>(`select user_id from auth.identities where provider_id = 'stu-2'`);
    // a read again: nobody twice
    const [c] = await t.db.query<{ tenant_id: string; id: string }>('select tenant_id, id from lti_contexts');
    const read = await readRoster(t.deps, { tenant_id: c!.tenant_id, context: c!.id });
    expect(read).toEqual({ pages: 3, learners: 3, skipped: 2, capped: false });
    const [after] = await t.db.query<{ user_id: string; n: number }>(
      `select min(user_id::text) as user_id, count(*)::int as n from auth.identities where provider_id = 'stu-2'`,
    );
    expect(after).toEqual({ user_id: before!.user_id, n: 1 });
  }, 30_000);

  it('queues nothing without the NRPS claim, and a platform refusing the roster is a refusal (4xx, not retried)', async () => {
    const pages = world.services.memberPages;
    await instructorLaunch('teach-2', (c) => {
      const { 'https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice': _, ...rest } = c as Record<string, unknown>;
      return { ...rest, 'https://purl.imsglobal.org/spec/lti/claim/context': { id: 'course-2', title: 'No roster' } };
    });
    await new Promise((r) => setTimeout(r, 2500));
    expect(world.services.memberPages).toBe(pages);
    world.services.setMode('refuse');
    try {
      const [c] = await t.db.query<{ tenant_id: string; id: string }>(`select tenant_id, id from lti_contexts where context_id = 'course-1'`);
      await expect(readRoster(t.deps, { tenant_id: c!.tenant_id, context: c!.id })).rejects.toMatchObject({ status: 400 });
    } finally {
      world.services.setMode('ok');
    }
  }, 30_000);
});
