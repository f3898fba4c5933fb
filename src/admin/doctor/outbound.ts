/**
 * The outbound rules (src/http/outbound.ts): the service fetches URLs it did not choose (learners'
 * sites, OAuth client metadata) only on public addresses, unless `SVC_FETCH_ALLOW_PRIVATE` is on —
 * meant for tests, a server-side request forgery hole anywhere else. With NODE_ENV=production
 * that is a warning.
 */
import { ok, warning, type DoctorContext, type Finding } from './types.ts';

export function checkOutbound({ config, source }: DoctorContext): Finding {
  if (!config.fetchAllowPrivate) return ok('outbound', 'fetches of URLs we did not choose go to public addresses only');
  if (source.NODE_ENV === 'production') {
    return warning(
      'outbound',
      "SVC_FETCH_ALLOW_PRIVATE is on with NODE_ENV=production: a learner's URL can reach private and loopback addresses (cloud metadata, internal services)",
      'unset SVC_FETCH_ALLOW_PRIVATE (it is for tests)',
    );
  }
  return ok('outbound', 'SVC_FETCH_ALLOW_PRIVATE is on (not production): private and loopback addresses may be fetched');
}
