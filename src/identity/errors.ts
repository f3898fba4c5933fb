/**
 * Errors of the identity platform, rendered in GoTrue's shapes (supabase/auth api/errors.go):
 * with `X-Supabase-Api-Version: 2024-01-01` or later `{code, message}`; before that (or with no
 * header) `{code: <status>, error_code, msg}`. Both carry the `x-sb-error-code` header.
 * Codes are GoTrue's ErrorCode values (`invalid_credentials`, `validation_failed`, …).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';

export class AuthError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export const API_VERSION_2024 = '2024-01-01';

function apiVersion(req: FastifyRequest): string | undefined {
  const v = req.headers['x-supabase-api-version'];
  return typeof v === 'string' && /^\d{4}-\d{2}-\d{2}$/.test(v) ? v : undefined;
}

export function sendAuthError(req: FastifyRequest, reply: FastifyReply, err: AuthError) {
  const version = apiVersion(req);
  reply.code(err.status).header('x-sb-error-code', err.code);
  if (version && version >= API_VERSION_2024) {
    return reply.send({ code: err.code, message: err.message });
  }
  return reply.send({ code: err.status, error_code: err.code, msg: err.message });
}
