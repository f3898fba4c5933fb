/**
 * The tool's signing keys (LTI 1.3: the tool signs its client assertions for service tokens and
 * its deep-linking responses with RS256; 1EdTech Security Framework 1.0 §6 asks for a `kid` and a
 * published JWK set so platforms can rotate with us).
 *
 * Keys live in `lti_keys` (migration 0150), service-wide: one key set at `GET /lti/v1/jwks` for
 * every tenant, as an LMS administrator registers one tool. The private key is kept as PKCS#8 PEM
 * in the database (both backends; readable by the database owner only — no grant, RLS on) and is
 * never sent anywhere. The current key is the one with `retired_at` null; the first one is made on
 * first use (`currentKey`), so a fresh installation needs no step.
 *
 * Rotation (`svc lti keys rotate`): the current key is retired and a new one becomes current at
 * once. A retired key stays in the published set for `RETIRED_KEY_SECONDS` — the longest lifetime
 * of a token we sign (`TOKEN_LIFETIME_SECONDS`) plus the clock skew a platform may allow
 * (`CLOCK_SKEW_SECONDS`) — so every token signed before the rotation still verifies until it has
 * expired; after that the row is deleted at the next rotation.
 *
 * Costs: a private key is imported once per process (by kid); `GET /lti/v1/jwks` serves a set kept
 * in memory (`PublishedKeys`: at most 60 s, never past the soonest retired key's removal, dropped
 * at once on the NOTIFY a rotation sends on `LTI_KEYS_CHANNEL`).
 */
import { randomBytes } from 'node:crypto';
import { exportJWK, exportPKCS8, generateKeyPair, importPKCS8, type CryptoKey, type JWK } from 'jose';
import type { Db, Queryable } from '../db/index.ts';

/** The longest lifetime of a token the tool signs (client assertions, deep-linking responses), in seconds. */
export const TOKEN_LIFETIME_SECONDS = 300;
/** Clock skew allowed between us and a platform, in seconds (LTI Core 1.3 leaves it to the parties; 60 s here). */
export const CLOCK_SKEW_SECONDS = 60;
/** How long a retired key stays in the published set, in seconds. */
export const RETIRED_KEY_SECONDS = TOKEN_LIFETIME_SECONDS + CLOCK_SKEW_SECONDS;

/** A public key as published: RSA JWK with `kid`, `alg: RS256`, `use: sig`. */
export type PublicJwk = JWK & { kid: string; alg: 'RS256'; use: 'sig'; kty: 'RSA' };

/** A key of the set, as `svc lti keys` shows it (no private part). */
export interface KeyInfo {
  kid: string;
  created_at: string;
  /** When it stopped signing; null for the current key. */
  retired_at: string | null;
}

/** The current signing key: `kid` and the private key for jose's `SignJWT`. */
export interface SigningKey {
  kid: string;
  privateKey: CryptoKey;
}

/** A new RS256 key pair (2048-bit RSA) with a random `kid`, as a row to store. */
async function newKey(): Promise<{ kid: string; pem: string; jwk: PublicJwk }> {
  const { publicKey, privateKey } = await generateKeyPair('RS256', { modulusLength: 2048, extractable: true });
  const kid = randomBytes(16).toString('base64url');
  const jwk = { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' } as PublicJwk;
  return { kid, pem: await exportPKCS8(privateKey), jwk };
}

/** Insert a new current key unless one exists (a concurrent first use loses quietly). */
async function insertKey(q: Queryable): Promise<void> {
  const key = await newKey();
  await q.query('insert into lti_keys (kid, private_pkcs8, public_jwk) values ($1, $2, $3) on conflict do nothing', [
    key.kid,
    key.pem,
    JSON.stringify(key.jwk),
  ]);
}

/** Imported private keys by kid (importing a PKCS#8 RSA key costs a few ms; a key never changes under its kid). */
const imported = new Map<string, Promise<CryptoKey>>();

/** The current key (made on first use); its private key imported once per process. */
export async function currentKey(q: Queryable): Promise<SigningKey> {
  const read = () => q.query<{ kid: string; private_pkcs8: string }>('select kid, private_pkcs8 from lti_keys where retired_at is null');
  let [row] = await read();
  if (!row) {
    await insertKey(q);
    [row] = await read();
  }
  let privateKey = imported.get(row!.kid);
  if (!privateKey) {
    privateKey = importPKCS8(row!.private_pkcs8, 'RS256');
    imported.set(row!.kid, privateKey);
    privateKey.catch(() => imported.delete(row!.kid));
    if (imported.size > 16) imported.delete(imported.keys().next().value!);
  }
  return { kid: row!.kid, privateKey: await privateKey };
}

/**
 * The published JWK set `{keys: [...]}`: the current key (made on first use) and the keys retired
 * less than `RETIRED_KEY_SECONDS` ago, newest first. Imports no private key.
 */
export async function publicKeySet(q: Queryable): Promise<{ keys: PublicJwk[] }> {
  if (!(await q.query('select 1 from lti_keys where retired_at is null')).length) await insertKey(q);
  const rows = await q.query<{ public_jwk: PublicJwk }>(
    `select public_jwk from lti_keys
      where retired_at is null or retired_at > now() - make_interval(secs => $1)
      order by created_at desc`,
    [RETIRED_KEY_SECONDS],
  );
  return { keys: rows.map((r) => r.public_jwk) };
}

/** Every stored key, newest first (`svc lti keys list`). */
export async function listKeys(q: Queryable): Promise<KeyInfo[]> {
  return q.query<KeyInfo>(
    `select kid, to_json(created_at) #>> '{}' as created_at, to_json(retired_at) #>> '{}' as retired_at
       from lti_keys order by created_at desc`,
  );
}

/**
 * Rotate: retire the current key (it stays published for `RETIRED_KEY_SECONDS`), make a new
 * current one, delete keys retired longer ago than that. Returns the new and the retired `kid`
 * (null when there was no key yet) and how long the retired one stays published.
 */
export async function rotateKey(q: Queryable): Promise<{ kid: string; retired: string | null; retired_published_seconds: number }> {
  await q.query('delete from lti_keys where retired_at is not null and retired_at <= now() - make_interval(secs => $1)', [RETIRED_KEY_SECONDS]);
  const [old] = await q.query<{ kid: string }>('update lti_keys set retired_at = now() where retired_at is null returning kid');
  const key = await newKey();
  await q.query('insert into lti_keys (kid, private_pkcs8, public_jwk) values ($1, $2, $3)', [key.kid, key.pem, JSON.stringify(key.jwk)]);
  await q.query('select pg_notify($1, $2)', [LTI_KEYS_CHANNEL, key.kid]);
  return { kid: key.kid, retired: old?.kid ?? null, retired_published_seconds: RETIRED_KEY_SECONDS };
}

/** NOTIFY channel of a rotation (`rotateKey`): every process drops the set it serves. */
export const LTI_KEYS_CHANNEL = 'svc_lti_keys';

/** How long `GET /lti/v1/jwks` serves the set it read without a notice, in milliseconds. */
export const PUBLISHED_SET_MAX_AGE_MS = 60_000;

/**
 * The published set of one app (`GET /lti/v1/jwks`, public, fetched by every platform that checks
 * a token of ours): read from the database at most once per `maxAgeMs` (and no longer than until
 * the soonest retired key leaves the set), by one request at a time, and dropped at once when a
 * rotation is notified on `LTI_KEYS_CHANNEL` (any process).
 */
export class PublishedKeys {
  private kept: { set: { keys: PublicJwk[] }; at: number } | undefined;
  private pending: Promise<{ set: { keys: PublicJwk[] }; ms: number | null }> | undefined;
  private generation = 0;
  constructor(
    private readonly db: Pick<Db, 'transaction' | 'listen'>,
    private readonly maxAgeMs = PUBLISHED_SET_MAX_AGE_MS,
  ) {}

  /** Listen for rotations; resolves to the function that stops listening. Without LISTEN, `maxAgeMs` bounds staleness. */
  async start(): Promise<() => Promise<void>> {
    try {
      return await this.db.listen(
        LTI_KEYS_CHANNEL,
        () => this.clear(),
        () => this.clear(),
      );
    } catch {
      return async () => {};
    }
  }

  /** Forget the kept set (the next read goes to the database). */
  clear(): void {
    this.generation++;
    this.kept = undefined;
    this.pending = undefined;
  }

  async get(): Promise<{ keys: PublicJwk[] }> {
    if (this.kept && Date.now() - this.kept.at < this.maxAgeMs) return this.kept.set;
    const generation = this.generation;
    this.pending ??= this.db.transaction(async (tx) => {
      const set = await publicKeySet(tx);
      // Kept no longer than until the soonest retired key leaves the set.
      const [row] = await tx.query<{ ms: number | null }>(
        `select (extract(epoch from min(retired_at) + make_interval(secs => $1) - now()) * 1000)::float8 as ms from lti_keys where retired_at is not null`,
        [RETIRED_KEY_SECONDS],
      );
      return { set, ms: row?.ms ?? null };
    });
    const read = this.pending;
    try {
      const { set, ms } = await read;
      const maxAge = ms === null ? this.maxAgeMs : Math.max(0, Math.min(this.maxAgeMs, ms));
      if (generation === this.generation) this.kept = { set, at: Date.now() - (this.maxAgeMs - maxAge) };
      return set;
    } finally {
      if (this.pending === read) this.pending = undefined;
    }
  }
}
