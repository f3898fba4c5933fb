/**
 * Password hashing and the password policy.
 *
 * New hashes are argon2id. Default cost: m = 19 MiB (19,456 KiB), t = 2, p = 1 — the second of
 * the equivalent settings in OWASP's Password Storage Cheat Sheet ("m=47104 (46 MiB), t=1, p=1"
 * … "m=19456 (19 MiB), t=2, p=1" … "m=7168 (7 MiB), t=5, p=1"); RFC 9106 §4 recommends
 * argon2id first too. The cost is set once per process from the config (`SVC_ARGON2_*`,
 * `setArgon2Cost`); a stored hash whose parameters differ from the current cost is re-hashed on
 * the next successful sign-in (`needsRehash`), so raising the cost migrates users as they come.
 *
 * Imported hashes (`password_hash` on admin create, for moving users off GoTrue): bcrypt
 * `$2a$`/`$2b$`/`$2y$` with cost 4–14, or argon2id/argon2i within the bounds below. Bounds
 * matter: a hash is a cost the server pays on every sign-in, so an imported `$2b$31$…` or a
 * 4 GiB argon2 hash would be a denial of service.
 *
 * bcrypt reads only the first 72 bytes of a password and bcryptjs silently truncates; GoTrue's
 * Go bcrypt refuses longer passwords (`ErrPasswordTooLong`). So a password over 72 UTF-8 bytes
 * never matches a bcrypt hash here (otherwise every password sharing its first 72 bytes would).
 *
 * Policy: at least `MIN_PASSWORD_LENGTH` characters (NIST SP 800-63B §3.1.1.2 and OWASP ASVS
 * 2.1.1 ask for 8; GoTrue's default is 6), at most `MAX_PASSWORD_LENGTH` (argon2 hashes any
 * length, but an unbounded input is an unbounded cost).
 */
import { hash, verify, Algorithm } from '@node-rs/argon2';
import bcrypt from 'bcryptjs';
import { AuthError } from './errors.ts';

/** argon2id cost: memory in KiB, iterations, lanes. */
export interface Argon2Cost {
  memoryKib: number;
  timeCost: number;
  parallelism: number;
}

/** OWASP Password Storage Cheat Sheet: m=19456 KiB, t=2, p=1. */
export const OWASP_ARGON2ID: Argon2Cost = { memoryKib: 19_456, timeCost: 2, parallelism: 1 };

export const BCRYPT_MAX_BYTES = 72;
export const MIN_PASSWORD_LENGTH = 8;
export const MAX_PASSWORD_LENGTH = 1024;

/** Largest cost accepted in an imported hash (bcrypt 2^14 rounds; argon2 256 MiB, t ≤ 10, p ≤ 8). */
const IMPORT_LIMITS = { bcryptCost: 14, argon2MemoryKib: 262_144, argon2Time: 10, argon2Lanes: 8 };

let cost: Argon2Cost = OWASP_ARGON2ID;
let dummyHash: { cost: Argon2Cost; hash: Promise<string> } | undefined;
let verifications = 0;

/** Set the argon2id cost of new hashes for this process (done once, from the config, at start). */
export function setArgon2Cost(next: Argon2Cost): void {
  cost = { ...next };
}

/**
 * How many password verifications (argon2 or bcrypt) this process has run. Operational metric;
 * tests use it to show that rate-limited attempts never reach the hash.
 */
export function passwordVerificationCount(): number {
  return verifications;
}

export function hashPassword(password: string): Promise<string> {
  return hash(password, {
    algorithm: Algorithm.Argon2id,
    memoryCost: cost.memoryKib,
    timeCost: cost.timeCost,
    parallelism: cost.parallelism,
  });
}

const BCRYPT_RE = /^\$2[aby]\$(\d\d)\$[./A-Za-z0-9]{53}$/;
const ARGON2_RE = /^\$argon2(id|i)\$v=19\$m=(\d{1,7}),t=(\d{1,3}),p=(\d{1,3})\$[A-Za-z0-9+/]{11,}\$[A-Za-z0-9+/]{16,}$/;

/** Verify `password` against a stored argon2 or bcrypt hash. Unknown formats never match. */
export async function verifyPassword(stored: string, password: string): Promise<boolean> {
  if (BCRYPT_RE.test(stored)) {
    if (Buffer.byteLength(password, 'utf8') > BCRYPT_MAX_BYTES) return false;
    verifications++;
    return bcrypt.compare(password, stored);
  }
  if (ARGON2_RE.test(stored)) {
    verifications++;
    return verify(stored, password);
  }
  return false;
}

/** True when `stored` is not an argon2id hash at the current cost (bcrypt, argon2i, other params). */
export function needsRehash(stored: string): boolean {
  const m = ARGON2_RE.exec(stored);
  if (!m) return true;
  return m[1] !== 'id' || Number(m[2]) !== cost.memoryKib || Number(m[3]) !== cost.timeCost || Number(m[4]) !== cost.parallelism;
}

/**
 * A fixed argon2id hash at the current cost, verified against when the user is unknown (or has
 * no password), so that both failures cost the same and say the same thing.
 */
export function dummyPasswordHash(): Promise<string> {
  if (dummyHash?.cost !== cost) dummyHash = { cost, hash: hashPassword('dummy password for timing equalisation') };
  return dummyHash.hash;
}

/** The password policy (GoTrue's `weak_password` 422 with `reasons: ["length"]`). */
export function validatePassword(password: string): void {
  if ([...password].length < MIN_PASSWORD_LENGTH) {
    throw new AuthError(422, 'weak_password', `Password should be at least ${MIN_PASSWORD_LENGTH} characters.`, {
      weak_password: { reasons: ['length'] },
    });
  }
  if (password.length > MAX_PASSWORD_LENGTH) {
    throw new AuthError(400, 'validation_failed', `Password cannot be longer than ${MAX_PASSWORD_LENGTH} characters.`);
  }
}

/**
 * Check an imported `password_hash` (bcrypt or argon2, within cost bounds); returns it unchanged.
 * Throws `AuthError` 400 `validation_failed`.
 */
export function validateImportedHash(stored: string): string {
  const b = BCRYPT_RE.exec(stored);
  if (b) {
    const rounds = Number(b[1]);
    if (rounds < 4 || rounds > IMPORT_LIMITS.bcryptCost) {
      throw new AuthError(400, 'validation_failed', `bcrypt cost must be between 4 and ${IMPORT_LIMITS.bcryptCost}`);
    }
    return stored;
  }
  const a = ARGON2_RE.exec(stored);
  if (a) {
    const [m, t, p] = [Number(a[2]), Number(a[3]), Number(a[4])];
    if (m < 1024 || m > IMPORT_LIMITS.argon2MemoryKib || t < 1 || t > IMPORT_LIMITS.argon2Time || p < 1 || p > IMPORT_LIMITS.argon2Lanes) {
      throw new AuthError(400, 'validation_failed', 'argon2 hash parameters are out of the accepted range');
    }
    return stored;
  }
  throw new AuthError(400, 'validation_failed', 'password_hash must be a bcrypt ($2a$/$2b$/$2y$) or argon2 (argon2id/argon2i, v=19) hash');
}
