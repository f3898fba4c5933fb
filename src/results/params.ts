/**
 * Request validation of the Results API: the Fastify validator compiler of the plugin, which
 * checks each route's query string and path against its zod schema (schemas.ts) — the same
 * schemas the OpenAPI document is generated from.
 *
 * Stricter than zod alone: a parameter given twice (`?limit=1&limit=2`, which Fastify's parser
 * turns into an array) is refused instead of silently resolved to one value. Every refusal is
 * `invalid_request` whose message starts with the parameter's name:
 *
 *   limit: must be an integer from 1 to 200
 *   foo: unknown query parameter (accepted: limit, cursor, updated_since, activity_id, …)
 *   user_id: is given more than once
 */
import type { FastifySchemaCompiler } from 'fastify';
import { z } from 'zod';
import { invalidParam } from './errors.ts';

type Part = 'querystring' | 'params' | 'body' | 'headers' | string;

function refusal(schema: z.ZodType, issue: z.core.$ZodIssue, part: Part): Error {
  if (issue.code === 'unrecognized_keys') {
    const accepted = schema instanceof z.ZodObject ? Object.keys(schema.shape) : [];
    const list = accepted.length ? `accepted: ${accepted.join(', ')}` : 'this endpoint takes no query parameters';
    return invalidParam(issue.keys[0]!, part === 'querystring' ? `unknown query parameter (${list})` : 'unknown');
  }
  const name = issue.path.length ? String(issue.path[0]) : part === 'params' ? 'path' : 'query';
  // zod's wording for a missing or mistyped value is not for API users.
  const message = issue.code === 'invalid_type' ? 'has an invalid value' : issue.message;
  return invalidParam(name, message);
}

/**
 * The validator compiler of the Results API's routes: zod schemas, repeated parameters refused,
 * the first problem reported as `invalid_request` naming its parameter.
 */
export const strictValidatorCompiler: FastifySchemaCompiler<z.ZodType> = ({ schema, httpPart }) => {
  return (data: unknown) => {
    if (httpPart === 'querystring' && data !== null && typeof data === 'object') {
      for (const [name, value] of Object.entries(data)) {
        if (Array.isArray(value)) return { error: invalidParam(name, 'is given more than once') };
      }
    }
    const parsed = schema.safeParse(data ?? {});
    if (parsed.success) return { value: parsed.data };
    return { error: refusal(schema, parsed.error.issues[0]!, httpPart ?? 'query') };
  };
};
