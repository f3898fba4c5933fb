/**
 * `idp set` keeps an issuer bound to one key source across tenants: (issuer, subject) is one
 * learner everywhere, so a second tenant may not verify the same issuer with other keys.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { AdminError } from '../../src/admin/ops.ts';
import { useApp, useServer } from '../helpers/harness.ts';
import { startTestIdp } from '../helpers/test-idp.ts';

const t = useApp();
const real = useServer(() => startTestIdp());
const rogue = useServer(() => startTestIdp());
beforeAll(async () => {
  await t.op('tenant.create', { slug: 'aaa' });
  await t.op('tenant.create', { slug: 'bbb' });
  await t.op('idp.set', { tenant: 'aaa', issuer: real.issuer, jwks_url: real.jwksUrl });
});

const session = (tenant: string, idpToken: string) =>
  fetch(`${t.url}/v1/embed/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ idp_token: idpToken, tenant }),
  });

describe('svc idp set', () => {
  it("refuses another tenant's issuer with other keys, so its learners cannot be impersonated", async () => {
    const attempt = t.op('idp.set', { tenant: 'bbb', issuer: real.issuer, jwks_url: rogue.jwksUrl });
    await expect(attempt).rejects.toBeInstanceOf(AdminError);
    await expect(attempt).rejects.toMatchObject({ code: 'conflict' });
    expect(await t.db.query(`select 1 from tenant_idps i join tenants t on t.id = i.tenant_id where t.slug = 'bbb'`)).toEqual([]);
    // the rogue key set is configured nowhere, so its token claiming the real issuer is refused everywhere
    const forged = await rogue.sign({ sub: 'alice', iss: real.issuer });
    expect((await session('bbb', forged)).status).toBe(401);
    expect((await session('aaa', forged)).status).toBe(401);
  });

  it('lets several tenants share an issuer with the same keys: one learner across them', async () => {
    await t.op('idp.set', { tenant: 'bbb', issuer: real.issuer, jwks_url: real.jwksUrl });
    const token = await real.sign({ sub: 'bob' });
    const a = await (await session('aaa', token)).json();
    const b = await (await session('bbb', token)).json();
    expect(a.svc_user_id).toBe(b.svc_user_id);
  });
});
