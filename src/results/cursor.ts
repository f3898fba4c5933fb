/**
 * Keyset cursors of the Results API: opaque base64url strings that we issue as `next_cursor`
 * and accept back as `cursor`.
 *
 * A cursor holds the position after which the next page starts — the (`created_at`, `id`) of
 * the last row sent, or its (`updated_at`, `id`) in the `updated_since` feed — with the
 * timestamp as PostgreSQL text with microseconds (never a JS Date), plus the endpoint and a
 * fingerprint of the filters it was issued for (`updated_since` counts as a filter). It is
 * authenticated (the signed form of src/lib/cursor.ts):
 *
 *   base64url( tag[16] ‖ payload )   payload = JSON [order, endpoint, filters fingerprint, timestamp, id]
 *   order = "v1" (created_at order) | "u1" (updated_at order, the updated_since feed)
 *   tag = HMAC-SHA256(key, tenant id ‖ "\n" ‖ payload), first 16 bytes
 *
 * with `key` derived from the service's secret. So a cursor that is garbage, truncated,
 * re-encoded (padding, standard alphabet, other JSON), edited, or issued to another tenant is
 * refused, and one issued for another endpoint or other filters is refused with a message
 * saying so. Rows inserted after a cursor was issued do not invalidate it: it is a position,
 * not a snapshot. Errors are `invalid_request` naming the `cursor` parameter.
 */
import { keysetCodec } from '../lib/cursor.ts';
import { sha256Base64url } from '../lib/hash.ts';
import { invalidParam } from './errors.ts';

/** The paginated endpoints, as they appear after `/v1/`. */
export type Endpoint = 'activity-results' | 'progress' | 'artifacts' | 'learners' | 'programs' | 'deletions' | 'audit-events';

/** Which key pages are ordered by: (`created_at`, `id`), or (`updated_at`, `id`) with `updated_since`. */
export type Order = 'created' | 'updated';

/**
 * Last row of a page: `at` is its `created_at` (or `updated_at` in the updated order) as RFC 3339
 * text with microseconds, `id` a uuid.
 */
export interface Position {
  at: string;
  id: string;
}

/** What a cursor is bound to: the key's tenant, the endpoint, the order and its filter values. */
export interface CursorScope {
  tenantId: string;
  endpoint: Endpoint;
  order: Order;
  /** Filter name → normalised value; undefined values are "not filtered". */
  filters: Readonly<Record<string, string | undefined>>;
}

export interface CursorCodec {
  /** Make the opaque `next_cursor` for the page that ended at `last`. */
  encode(scope: CursorScope, last: Position): string;
  /** Check and open a `cursor`; throws `invalid_request` (parameter `cursor`) when it is not ours. */
  decode(scope: CursorScope, token: string): Position;
}

/** The first payload element of each order (a created-order cursor keeps its original format). */
const ORDER_TAG: Record<Order, string> = { created: 'v1', updated: 'u1' };
const ORDER_OF_TAG: Record<string, Order> = { v1: 'created', u1: 'updated' };

const NOT_OURS = 'is not a cursor issued by this API; pass the next_cursor of the previous page unchanged';

/** A short, stable digest of the filters that are set (order-independent). */
function fingerprint(filters: CursorScope['filters']): string {
  const set = Object.entries(filters)
    .filter((entry): entry is [string, string] => entry[1] !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return sha256Base64url(JSON.stringify(set)).slice(0, 16);
}

/**
 * A codec whose tags are keyed by `secret` (the service's JWT secret: every process of one
 * deployment shares it, so a cursor from one process works on another; rotating the secret
 * invalidates outstanding cursors, which clients recover from by starting over).
 */
export function cursorCodec(secret: string): CursorCodec {
  const codec = keysetCodec({ secret, label: 'svc results cursor v1' });

  return {
    encode(scope, last) {
      return codec.encode([ORDER_TAG[scope.order], scope.endpoint, fingerprint(scope.filters), last.at, last.id], scope.tenantId);
    },

    decode(scope, token) {
      if (token.length === 0) throw invalidParam('cursor', 'must not be empty');
      const parts = codec.decode(token, scope.tenantId);
      if (parts?.length !== 5 || !Object.hasOwn(ORDER_OF_TAG, parts[0]!) || !parts.slice(1).every((part) => part.length > 0 && part.length <= 64)) {
        throw invalidParam('cursor', NOT_OURS);
      }
      const [orderTag, endpoint, filters, at, id] = parts;
      if (endpoint !== scope.endpoint) {
        throw invalidParam('cursor', `was issued by /v1/${endpoint}, not by /v1/${scope.endpoint}`);
      }
      if (ORDER_OF_TAG[orderTag!] !== scope.order) {
        throw invalidParam(
          'cursor',
          scope.order === 'updated'
            ? 'was issued for the created_at order; an updated_since feed starts without a cursor'
            : 'was issued for an updated_since feed; pass the same updated_since with it',
        );
      }
      if (filters !== fingerprint(scope.filters)) {
        throw invalidParam('cursor', 'was issued for other filters; repeat the same filters while paging');
      }
      return { at: at!, id: id! };
    },
  };
}
