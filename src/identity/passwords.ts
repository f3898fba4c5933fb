/**
 * Password hashing: argon2id for new hashes (OWASP Password Storage Cheat Sheet: m=19 MiB,
 * t=2, p=1), and verification of bcrypt `$2a$`/`$2b$`/`$2y$` hashes imported from GoTrue.
 * `needsRehash` tells the sign-in path to upgrade a bcrypt hash to argon2id.
 */
import { hash, verify, Algorithm } from '@node-rs/argon2';
import bcrypt from 'bcryptjs';

export const ARGON2_OPTIONS = { algorithm: Algorithm.Argon2id, memoryCost: 19_456, timeCost: 2, parallelism: 1 };
/** bcrypt reads only the first 72 bytes of a password; longer ones are refused on import paths. */
export const BCRYPT_MAX_BYTES = 72;
export const MIN_PASSWORD_LENGTH = 6;
export const MAX_PASSWORD_LENGTH = 1024;

export function hashPassword(password: string): Promise<string> {
  return hash(password, ARGON2_OPTIONS);
}

const isBcrypt = (stored: string) => /^\$2[aby]\$\d\d\$/.test(stored);

export async function verifyPassword(stored: string, password: string): Promise<boolean> {
  if (isBcrypt(stored)) return bcrypt.compare(password, stored);
  if (stored.startsWith('$argon2')) return verify(stored, password);
  return false;
}

export function needsRehash(stored: string): boolean {
  return isBcrypt(stored);
}

/** A fixed argon2id hash to verify against when the user is unknown, so both paths cost the same. */
let dummyHash: Promise<string> | undefined;
export function dummyPasswordHash(): Promise<string> {
  dummyHash ??= hashPassword('dummy password for timing equalisation');
  return dummyHash;
}
