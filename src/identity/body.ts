/**
 * Request bodies of /auth/v1: JSON only, parsed once by the plugin's content-type parser
 * (a body that is not JSON → 400 `bad_json`, GoTrue's code), then checked here against a zod
 * schema. A wrong type or an over-long value → 400 `validation_failed` naming the field.
 * Unknown fields are ignored, as GoTrue's JSON decoding does.
 */
import type { z } from 'zod';
import { AuthError } from './errors.ts';

/** `body` checked against `schema`; an absent body counts as `{}`. Throws `AuthError` 400. */
export function parseBody<T>(schema: z.ZodType<T>, body: unknown): T {
  if (body !== undefined && body !== null && (typeof body !== 'object' || Array.isArray(body))) {
    throw new AuthError(400, 'bad_json', 'Could not parse request body as JSON: the body must be a JSON object');
  }
  const parsed = schema.safeParse(body ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const field = issue.path.join('.');
    throw new AuthError(400, 'validation_failed', field ? `${field}: ${issue.message}` : issue.message);
  }
  return parsed.data;
}
