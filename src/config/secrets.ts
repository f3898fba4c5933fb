/**
 * Configuration, step 2 — the three secrets (JWT secret, anon key, service-role key).
 *
 * Embedded mode (no DATABASE_URL): on first start random secrets are generated and kept in
 * `<data dir>/secrets.json` (mode 0600); any of the three set in the environment wins. Server mode
 * (DATABASE_URL set) requires the three in the environment. Either way empty, short,
 * low-entropy, well-known (Supabase's demo values, any JWT) or equal secrets are refused: an anon
 * key equal to the service-role key would open the admin endpoints. Throws `ConfigError`.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ensureDataDir } from './data-dir.ts';
import { ConfigError, type Env } from './parse.ts';

export interface Secrets {
  jwtSecret: string;
  anonKey: string;
  serviceRoleKey: string;
}

/** Known or placeholder secrets that must never run a production service. */
const KNOWN_SECRETS = new Set([
  'super-secret-jwt-token-with-at-least-32-characters-long',
  'your-super-secret-jwt-token-with-at-least-32-characters-long',
  'changeme',
  'secret',
]);

/** Random secret: `bytes` of CSPRNG output as base64url. */
function randomSecret(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

/** Fresh secrets of the shapes Supabase uses (`sb_publishable_…`, `sb_secret_…`). */
function generateSecrets(): Secrets {
  return {
    jwtSecret: randomSecret(48),
    anonKey: `sb_publishable_${randomSecret(24)}`,
    serviceRoleKey: `sb_secret_${randomSecret(32)}`,
  };
}

/** Read `<dataDir>/secrets.json`, creating it (0600) with fresh secrets on first use. */
export function loadOrCreateEmbeddedSecrets(dataDir: string): Secrets {
  const file = join(dataDir, 'secrets.json');
  if (existsSync(file)) return JSON.parse(readFileSync(file, 'utf8')) as Secrets;
  ensureDataDir(dataDir);
  const secrets = generateSecrets();
  writeFileSync(file, `${JSON.stringify(secrets, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
  chmodSync(file, 0o600);
  return secrets;
}

function checkSecret(name: string, value: string | undefined, minLength: number): string {
  if (!value) throw new ConfigError(`${name} is required when DATABASE_URL is set`);
  if (value.length < minLength) throw new ConfigError(`${name} must be at least ${minLength} characters`);
  if (KNOWN_SECRETS.has(value) || value.startsWith('eyJ')) {
    throw new ConfigError(`${name} is a well-known example value or a JWT; generate your own random value`);
  }
  if (new Set(value).size < 8) throw new ConfigError(`${name} is not random enough; generate it with \`openssl rand -base64 48\``);
  return value;
}

/**
 * The secrets for `e`: from the environment (server mode; with `requireSecrets: false`, missing
 * ones are left empty), or from `<dataDir>/secrets.json` overridden by the environment (embedded).
 */
export function resolveSecrets(e: Env, dataDir: string | undefined, requireSecrets: boolean): Secrets {
  const secrets: Secrets = e.DATABASE_URL
    ? !requireSecrets
      ? { jwtSecret: e.SVC_JWT_SECRET ?? '', anonKey: e.SVC_ANON_KEY ?? '', serviceRoleKey: e.SVC_SERVICE_ROLE_KEY ?? '' }
      : {
          jwtSecret: checkSecret('SVC_JWT_SECRET', e.SVC_JWT_SECRET, 32),
          anonKey: checkSecret('SVC_ANON_KEY', e.SVC_ANON_KEY, 20),
          serviceRoleKey: checkSecret('SVC_SERVICE_ROLE_KEY', e.SVC_SERVICE_ROLE_KEY, 20),
        }
    : {
        // Values in the environment win over the generated ones, with the same checks.
        ...loadOrCreateEmbeddedSecrets(dataDir!),
        ...(e.SVC_JWT_SECRET !== undefined && { jwtSecret: checkSecret('SVC_JWT_SECRET', e.SVC_JWT_SECRET, 32) }),
        ...(e.SVC_ANON_KEY !== undefined && { anonKey: checkSecret('SVC_ANON_KEY', e.SVC_ANON_KEY, 20) }),
        ...(e.SVC_SERVICE_ROLE_KEY !== undefined && {
          serviceRoleKey: checkSecret('SVC_SERVICE_ROLE_KEY', e.SVC_SERVICE_ROLE_KEY, 20),
        }),
      };
  if (requireSecrets && new Set([secrets.jwtSecret, secrets.anonKey, secrets.serviceRoleKey]).size < 3) {
    throw new ConfigError('SVC_JWT_SECRET, SVC_ANON_KEY and SVC_SERVICE_ROLE_KEY must all differ');
  }
  return secrets;
}
