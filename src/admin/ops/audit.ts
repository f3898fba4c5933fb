/** `svc audit list`: the audit log (issue #23, src/audit). Registered in ../ops.ts. */
import { z } from 'zod';
import { AUDIT_ACTIONS, listAuditEvents } from '../../audit/index.ts';
import type { Queryable } from '../../db/index.ts';
import { slug, tenantId } from './shared.ts';

export const auditOps = {
  'audit.list': {
    args: z.object({
      tenant: slug.optional(),
      since: z
        .string()
        .max(64)
        .refine((v) => !Number.isNaN(Date.parse(v)), 'not a time: give an RFC 3339 time (2026-01-31T09:00:00Z) or a date (2026-01-31)')
        .optional(),
      action: z
        .string()
        .refine((v) => (AUDIT_ACTIONS as readonly string[]).includes(v), `not an action the service records: one of ${AUDIT_ACTIONS.join(', ')}`)
        .optional(),
    }),
    run: async (q: Queryable, a: { tenant?: string; since?: string; action?: string }) =>
      listAuditEvents(q, { tenantId: a.tenant ? await tenantId(q, a.tenant) : undefined, since: a.since ? new Date(a.since) : undefined, action: a.action }),
  },
} as const;
