/**
 * The secrets' strength: the JWT secret (HS256 key of every session token, RFC 7518 §3.2 asks for
 * at least 256 bits) and the anon and service-role keys — their length, how random they look
 * (Shannon entropy of their characters), well-known example values, and, in embedded mode, the
 * generated development secrets in `<data dir>/secrets.json` (fine on a laptop, a warning with
 * NODE_ENV=production). Config refuses the worst at start (src/config/secrets.ts); this says why
 * and what to do, and also warns about the merely weak.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { error, ok, warning, type DoctorContext, type Finding } from './types.ts';

const KNOWN = /^(your-)?super-secret-jwt-token-with-at-least-32-characters-long$|^(changeme|secret|password)$/;
const GENERATE = 'generate one with `openssl rand -base64 48` and set it in the environment';

/** Shannon entropy of `value`'s characters, in bits in all (length × bits per character). */
export function entropyBits(value: string): number {
  const counts = new Map<string, number>();
  for (const c of value) counts.set(c, (counts.get(c) ?? 0) + 1);
  let perChar = 0;
  for (const n of counts.values()) perChar -= (n / value.length) * Math.log2(n / value.length);
  return perChar * value.length;
}

/** One secret's finding: error when short, well known or plainly not random; warning when under 256 bits of entropy. */
function strength(name: string, value: string | undefined, minLength: number): Finding | undefined {
  const check = `secret ${name}`;
  if (value === undefined || value === '') return undefined;
  if (KNOWN.test(value) || value.startsWith('eyJ')) return error(check, `${name} is a well-known example value or a JWT`, GENERATE);
  if (value.length < minLength) return error(check, `${name} is ${value.length} characters; at least ${minLength} are needed`, GENERATE);
  const bits = entropyBits(value);
  if (new Set(value).size < 8 || bits < 128) return error(check, `${name} is not random enough (about ${Math.round(bits)} bits)`, GENERATE);
  if (bits < 256 && name === 'SVC_JWT_SECRET')
    return warning(check, `${name} has about ${Math.round(bits)} bits of entropy; 256 or more are advised (RFC 7518 §3.2)`, GENERATE);
  return ok(check, `${name}: ${value.length} characters, about ${Math.round(bits)} bits`);
}

export function checkSecrets(ctx: DoctorContext): Finding[] {
  const { source, env } = ctx;
  const findings = [
    strength('SVC_JWT_SECRET', source.SVC_JWT_SECRET, 32),
    strength('SVC_ANON_KEY', source.SVC_ANON_KEY, 20),
    strength('SVC_SERVICE_ROLE_KEY', source.SVC_SERVICE_ROLE_KEY, 20),
  ].filter((f): f is Finding => f !== undefined);
  if (env.DATABASE_URL) {
    const missing = ['SVC_JWT_SECRET', 'SVC_ANON_KEY', 'SVC_SERVICE_ROLE_KEY'].filter((n) => !source[n]);
    if (missing.length) findings.push(error('secrets', `${missing.join(', ')} not set (required with DATABASE_URL)`, GENERATE));
  } else {
    const file = join(env.SVC_DATA_DIR, 'secrets.json');
    if (!existsSync(file)) findings.push(ok('secrets', `embedded mode: ${file} is made with random secrets on first start`));
    else {
      try {
        JSON.parse(readFileSync(file, 'utf8'));
        findings.push(
          source.NODE_ENV === 'production'
            ? warning(
                'secrets',
                `NODE_ENV=production with the development secrets generated in ${file}`,
                'run production on PostgreSQL (DATABASE_URL) with the three secrets from your secret store',
              )
            : ok('secrets', `embedded mode: development secrets in ${file}`),
        );
      } catch (err) {
        findings.push(
          error(
            'secrets',
            `${file} cannot be read: ${(err as NodeJS.ErrnoException).code ?? 'not JSON'}`,
            `restore it from a backup, or delete it to make new secrets (every session and key signed with the old ones stops working)`,
          ),
        );
      }
    }
  }
  const values = [source.SVC_JWT_SECRET, source.SVC_ANON_KEY, source.SVC_SERVICE_ROLE_KEY].filter(Boolean);
  if (new Set(values).size < values.length)
    findings.push(error('secrets', 'two of SVC_JWT_SECRET, SVC_ANON_KEY and SVC_SERVICE_ROLE_KEY are equal', 'give each its own random value'));
  return findings;
}
