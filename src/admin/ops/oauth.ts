/** `svc oauth …`: the OAuth clients MCP hosts registered and the grants users gave them (issue #12). Registered in ../ops.ts. */
import { z } from 'zod';
import type { Queryable } from '../../db/index.ts';
import { findUserByEmail, listClients, listGrants, revokeClient, revokeGrant } from '../../identity/index.ts';
import { AdminError, email } from './shared.ts';

export const oauthOps = {
  'oauth.clients.list': { args: z.object({}), run: (q: Queryable) => listClients(q) },
  'oauth.clients.revoke': {
    args: z.object({ client_id: z.string().min(1).max(2048) }),
    run: async (q: Queryable, a: { client_id: string }) => {
      if (!(await revokeClient(q, a.client_id))) throw new AdminError('not_found', `no OAuth client "${a.client_id}"`);
      return { client_id: a.client_id, revoked: true };
    },
  },
  'oauth.grants.list': {
    args: z.object({ email }),
    run: async (q: Queryable, a: { email: string }) => listGrants(q, (await userByEmail(q, a.email)).id),
  },
  'oauth.grants.revoke': {
    args: z.object({ email, client_id: z.string().min(1).max(2048) }),
    run: async (q: Queryable, a: { email: string; client_id: string }) => {
      const user = await userByEmail(q, a.email);
      if (!(await revokeGrant(q, user.id, a.client_id))) throw new AdminError('not_found', `${a.email} has no grant for "${a.client_id}"`);
      return { email: user.email, client_id: a.client_id, revoked: true };
    },
  },
} as const;

/** The user with email `address`; AdminError `not_found` when there is none. */
async function userByEmail(q: Queryable, address: string) {
  const user = await findUserByEmail(q, address);
  if (!user) throw new AdminError('not_found', `no user with email ${address}`);
  return user;
}
