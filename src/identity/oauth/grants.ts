/**
 * Grants: what a user allowed each OAuth client (auth.oauth_consents), and taking it back.
 *
 * `GET /auth/v1/user/oauth/grants` → `[{client: {id, name, uri, logo_uri}, scopes, granted_at}]`
 * and `DELETE /auth/v1/user/oauth/grants?client_id=…` → 204 (GoTrue's paths and shapes, what
 * supabase-js `auth.oauth.listGrants()` / `revokeGrant()` call); unknown grant → 404
 * `oauth_consent_not_found`. Revoking ends the client's sessions of that user at once: their
 * access tokens are refused on the next call and their refresh tokens are gone.
 * `svc oauth grants list|revoke` use the same functions by email.
 */
import type { Queryable } from '../../db/index.ts';

/** One grant in GoTrue's shape. */
export interface Grant {
  client: { id: string; name: string; uri: string; logo_uri: string };
  scopes: string[];
  granted_at: string;
}

/** The grants of `userId`, newest first. */
export async function listGrants(q: Queryable, userId: string): Promise<Grant[]> {
  return q.query<Grant>(
    `select json_build_object('id', c.client_id, 'name', coalesce(c.client_name, ''), 'uri', coalesce(c.client_uri, ''),
                              'logo_uri', coalesce(c.logo_uri, '')) as client,
            g.scopes, to_json(g.granted_at) #>> '{}' as granted_at
       from auth.oauth_consents g join auth.oauth_clients c using (client_id)
      where g.user_id = $1 order by g.granted_at desc, c.client_id`,
    [userId],
  );
}

/**
 * Revoke `userId`'s grant to `clientId` and end that client's sessions of the user; false when
 * there was no grant. Run it in a transaction.
 */
export async function revokeGrant(q: Queryable, userId: string, clientId: string): Promise<boolean> {
  const gone = await q.query('delete from auth.oauth_consents where user_id = $1 and client_id = $2 returning client_id', [userId, clientId]);
  await q.query('delete from auth.sessions where user_id = $1 and oauth_client_id = $2', [userId, clientId]);
  await q.query(`delete from auth.oauth_authorizations where user_id = $1 and client_id = $2 and status = 'pending'`, [userId, clientId]);
  return gone.length > 0;
}
