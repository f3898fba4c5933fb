/**
 * Results-API errors: the shared `/v1` error type (src/http/api-errors.ts) plus the helper
 * for the most common one, a bad query parameter named in the message.
 */
import { ApiError } from '../http/api-errors.ts';

/** `invalid_request` naming the offending parameter: `limit: must be an integer from 1 to 200`. */
export const invalidParam = (param: string, problem: string) => new ApiError('invalid_request', `${param}: ${problem}`);
