/**
 * OAuth clients (public clients only: `token_endpoint_auth_method` "none", PKCE instead of a
 * secret — what MCP hosts are).
 *
 * Two ways a client comes to exist:
 * - **Dynamic registration** (RFC 7591): `POST /oauth/clients/register` with `redirect_uris` and
 *   optional `client_name`, `client_uri`, `logo_uri`; answered 201 with a new UUID `client_id`.
 *   Asked-for secret-based auth methods are answered with "none" (RFC 7591 §3.2.1 lets the
 *   server replace values). Bad metadata → 400 `invalid_redirect_uri` / `invalid_client_metadata`.
 * - **Client ID Metadata Documents** (MCP 2025-11-25 §"Client ID Metadata Documents",
 *   draft-ietf-oauth-client-id-metadata-document): a `client_id` that is an https URL with a
 *   path is the client's own document, fetched and cached by `metadata-document.ts`.
 *
 * `findClient` answers for both; a revoked client (`svc oauth clients revoke`) is not found.
 */
import type { Queryable } from '../../db/index.ts';
import type { Deps } from '../../deps.ts';
import { UUID_RE } from '../../lib/ids.ts';
import { OAuthError } from './errors.ts';
import { isMetadataDocumentUrl, resolveMetadataDocument } from './metadata-document.ts';
import { redirectUriProblem } from './redirect-uris.ts';

/** A client as the authorization steps see it. */
export interface OAuthClient {
  client_id: string;
  kind: 'registered' | 'metadata_document';
  client_name: string | null;
  client_uri: string | null;
  logo_uri: string | null;
  redirect_uris: string[];
}

const CLIENT_COLUMNS = 'client_id, kind, client_name, client_uri, logo_uri, redirect_uris';

/** Checked client metadata: from a registration body or a metadata document. */
export interface ClientMetadata {
  redirect_uris: string[];
  client_name: string | null;
  client_uri: string | null;
  logo_uri: string | null;
}

const optionalText = (body: Record<string, unknown>, field: string, max: number): string | null => {
  const value = body[field];
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string' || value.length > max) {
    throw new OAuthError(400, 'invalid_client_metadata', `${field} must be a string of at most ${max} characters`);
  }
  return value;
};

const optionalHttpsUrl = (body: Record<string, unknown>, field: string): string | null => {
  const value = optionalText(body, field, 2048);
  if (value !== null && (!URL.canParse(value) || !/^https?:$/.test(new URL(value).protocol))) {
    throw new OAuthError(400, 'invalid_client_metadata', `${field} must be an http(s) URL`);
  }
  return value;
};

/**
 * Check the metadata fields both registration and metadata documents carry (RFC 7591 §2).
 * Throws `OAuthError` 400 `invalid_redirect_uri` or `invalid_client_metadata`.
 */
export function checkClientMetadata(body: unknown): ClientMetadata {
  if (!body || typeof body !== 'object' || Array.isArray(body)) {
    throw new OAuthError(400, 'invalid_client_metadata', 'the client metadata must be a JSON object');
  }
  const b = body as Record<string, unknown>;
  const uris = b.redirect_uris;
  if (!Array.isArray(uris) || uris.length === 0) throw new OAuthError(400, 'invalid_redirect_uri', 'redirect_uris must be a non-empty array');
  if (uris.length > 10) throw new OAuthError(400, 'invalid_redirect_uri', 'at most 10 redirect_uris');
  for (const uri of uris) {
    const problem = redirectUriProblem(uri as string);
    if (problem) throw new OAuthError(400, 'invalid_redirect_uri', problem);
  }
  const grants = b.grant_types;
  if (grants !== undefined && (!Array.isArray(grants) || !grants.every((g) => typeof g === 'string') || !grants.includes('authorization_code'))) {
    throw new OAuthError(400, 'invalid_client_metadata', 'grant_types must include "authorization_code" (and may include "refresh_token")');
  }
  const responses = b.response_types;
  if (responses !== undefined && (!Array.isArray(responses) || responses.some((r) => r !== 'code'))) {
    throw new OAuthError(400, 'invalid_client_metadata', 'response_types must be ["code"]');
  }
  return {
    redirect_uris: [...new Set(uris as string[])],
    client_name: optionalText(b, 'client_name', 200),
    client_uri: optionalHttpsUrl(b, 'client_uri'),
    logo_uri: optionalHttpsUrl(b, 'logo_uri'),
  };
}

/** RFC 7591 §3.2.1 registration response for `client`. */
export function registrationResponse(client: OAuthClient, issuedAt: number) {
  return {
    client_id: client.client_id,
    client_id_issued_at: issuedAt,
    redirect_uris: client.redirect_uris,
    ...(client.client_name !== null && { client_name: client.client_name }),
    ...(client.client_uri !== null && { client_uri: client.client_uri }),
    ...(client.logo_uri !== null && { logo_uri: client.logo_uri }),
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
  };
}

/** Register a public client from an RFC 7591 body; throws `OAuthError` 400. */
export async function registerClient(deps: Deps, body: unknown) {
  const meta = checkClientMetadata(body);
  const [client] = await deps.db.query<OAuthClient & { issued_at: number }>(
    `insert into auth.oauth_clients (client_id, kind, client_name, client_uri, logo_uri, redirect_uris)
     values (gen_random_uuid()::text, 'registered', $1, $2, $3, $4)
     returning ${CLIENT_COLUMNS}, extract(epoch from created_at)::int as issued_at`,
    [meta.client_name, meta.client_uri, meta.logo_uri, meta.redirect_uris],
  );
  return registrationResponse(client!, client!.issued_at);
}

/**
 * The live client `clientId` names, or undefined (unknown, malformed, revoked). A metadata
 * document URL is resolved (cache, else fetched): a document that cannot be fetched or is invalid
 * throws `OAuthError` 400 `invalid_client` saying why.
 */
export async function findClient(deps: Deps, clientId: string): Promise<OAuthClient | undefined> {
  if (isMetadataDocumentUrl(clientId)) return resolveMetadataDocument(deps, clientId);
  if (!UUID_RE.test(clientId)) return undefined;
  return knownClient(deps.db, clientId);
}

/** A live client already stored (registered, or a metadata document fetched before); no fetch. */
export async function knownClient(q: Queryable, clientId: string): Promise<OAuthClient | undefined> {
  if (clientId.length > 2048) return undefined;
  const [row] = await q.query<OAuthClient>(`select ${CLIENT_COLUMNS} from auth.oauth_clients where client_id = $1 and revoked_at is null`, [clientId]);
  return row;
}

/** Every client, newest first (`svc oauth clients list`). */
export async function listClients(q: Queryable) {
  return q.query<OAuthClient & { created_at: string; revoked_at: string | null; sessions: number; grants: number }>(
    `select ${CLIENT_COLUMNS}, to_json(c.created_at) #>> '{}' as created_at, to_json(c.revoked_at) #>> '{}' as revoked_at,
            (select count(*)::int from auth.sessions s where s.oauth_client_id = c.client_id) as sessions,
            (select count(*)::int from auth.oauth_consents g where g.client_id = c.client_id) as grants
       from auth.oauth_clients c order by c.created_at desc, c.client_id`,
  );
}

/**
 * Revoke a client everywhere (`svc oauth clients revoke`): its sessions end (their tokens are
 * refused at once, refresh tokens with them), its consents and pending authorizations go, and it
 * can no longer authorize — a metadata document URL stays refused. Returns false when unknown.
 * Run it in a transaction.
 */
export async function revokeClient(q: Queryable, clientId: string): Promise<boolean> {
  const [row] = await q.query<{ client_id: string }>(
    `update auth.oauth_clients set revoked_at = coalesce(revoked_at, now()), updated_at = now() where client_id = $1 returning client_id`,
    [clientId],
  );
  if (!row) return false;
  await q.query('delete from auth.sessions where oauth_client_id = $1', [clientId]);
  await q.query('delete from auth.oauth_consents where client_id = $1', [clientId]);
  await q.query(`delete from auth.oauth_authorizations where client_id = $1 and status = 'pending'`, [clientId]);
  return true;
}
