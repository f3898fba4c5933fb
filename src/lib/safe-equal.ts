/**
 * Constant-time comparison of two secrets (API keys, the service-role key): the time taken does
 * not depend on where they differ. Their lengths may leak; the contents do not.
 */
import { timingSafeEqual } from 'node:crypto';

/** True when `a` and `b` are the same string (UTF-8 bytes), compared in constant time. */
export function safeEqual(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
