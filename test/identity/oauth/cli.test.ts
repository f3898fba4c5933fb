/**
 * `svc oauth clients list|revoke` and `svc oauth grants list|revoke` as an operator runs them:
 * the real bin against PostgreSQL (DATABASE_URL), beside a running app where an MCP host
 * connected. (On PGlite the same operations run through `t.op` in attacks.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import { backend, freshDb, seedAuthor, startApp } from '../../helpers/harness.ts';
import { runSvc } from '../../helpers/svc-cli.ts';
import { mcpInitialize } from '../helpers.ts';
import { rawFlow } from './helpers.ts';

const svc = runSvc;

describe.runIf(backend === 'postgres')('svc oauth', { timeout: 240_000 }, () => {
  it('lists clients and grants, revokes a grant and a client; their tokens stop working', async () => {
    const { db, url, drop } = await freshDb();
    const t = await startApp({}, { db });
    try {
      const env = { DATABASE_URL: url! };
      const email = 'op@cli.test';
      await seedAuthor(t, 'cli', email, 'correct horse battery');
      const first = await rawFlow(t, email, 'correct horse battery');

      const clients = await svc(env, 'oauth', 'clients', 'list');
      expect(clients.code).toBe(0);
      expect(clients.stdout).toContain(first.clientId);
      expect(clients.stdout).toMatch(/client_id\s+kind\s+client_name/);
      const grants = JSON.parse((await svc(env, 'oauth', 'grants', 'list', email, '--json')).stdout);
      expect(grants).toEqual([expect.objectContaining({ client: expect.objectContaining({ id: first.clientId }), scopes: ['authoring'] })]);

      const revoked = await svc(env, 'oauth', 'grants', 'revoke', email, first.clientId);
      expect(revoked.code).toBe(0);
      expect(revoked.stdout).toContain('revoked the grant');
      expect((await mcpInitialize(t, String(first.body.access_token))).status).toBe(401);
      const again = await svc(env, 'oauth', 'grants', 'revoke', email, first.clientId);
      expect(again.code).toBe(1);
      expect(again.stderr).toContain('has no grant');

      const second = await rawFlow(t, email, 'correct horse battery', first.clientId);
      expect((await mcpInitialize(t, String(second.body.access_token))).status).toBe(200);
      expect((await svc(env, 'oauth', 'clients', 'revoke', first.clientId)).code).toBe(0);
      expect((await mcpInitialize(t, String(second.body.access_token))).status).toBe(401);
      const unknown = await svc(env, 'oauth', 'clients', 'revoke', 'no-such-client');
      expect(unknown.code).toBe(1);
      expect(unknown.stderr).toContain('no OAuth client');
      const nobody = await svc(env, 'oauth', 'grants', 'list', 'nobody@cli.test');
      expect(nobody.stderr).toContain('no user with email');
      const help = await svc(env, 'oauth', '--help');
      expect(help.stdout).toContain('clients');
      expect(help.stdout).toContain('grants');
    } finally {
      await t.app.close();
      await drop();
    }
  });
});
