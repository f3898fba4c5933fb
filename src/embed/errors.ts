/**
 * Errors of the embed surface (`/v1/embed/*`): the shared `/v1` error type and body
 * (src/http/api-errors.ts) with the helpers this surface uses.
 */
import { ApiError } from '../http/api-errors.ts';

/**
 * The one message of every authentication failure: unknown tenant, tenant without an IdP,
 * bad signature, wrong issuer or audience, expired token, not a member. Identical on purpose,
 * so that neither tenants nor the reason of a refusal can be probed.
 */
export const UNAUTHORIZED_MESSAGE = 'the token is not valid for this tenant';

/** The 401 of every authentication failure; `internal` says why, in the log only. */
export const unauthorized = (internal?: string) => new ApiError('unauthorized', UNAUTHORIZED_MESSAGE, internal);

export const invalidRequest = (message: string) => new ApiError('invalid_request', message);

export const notFound = (message: string) => new ApiError('not_found', message);

/** 403: a valid session used outside the tenant it is bound to. */
export const forbidden = (message: string) => new ApiError('forbidden', message);

/** 409: a submission to archived content (the activity, or a record above it, is archived). */
export const archived = (message: string) => new ApiError('archived', message);
