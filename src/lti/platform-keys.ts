/**
 * A platform's public keys (its JWK set URL), for verifying its id_tokens. Fetched through the
 * service's outbound guard (src/http/outbound.ts `fetchResource`: http(s) only, no private addresses unless
 * `SVC_FETCH_ALLOW_PRIVATE`, `KEYS_TIMEOUT_MS`, at most `KEYS_MAX_BYTES`), kept per URL for
 * `KEYS_MAX_AGE_MS`; a token whose `kid` is not in the kept set fetches the set again, at most
 * once per `KEYS_COOLDOWN_MS` per URL (platforms rotate; random kids cannot make us hammer one).
 * Concurrent requests for a URL that must be fetched share one fetch (single flight). A set that
 * is not JSON with a `keys` array, too big, slow or unreachable throws `PlatformKeysError`.
 */
import { createLocalJWKSet, type JSONWebKeySet, type JWTVerifyGetKey } from 'jose';
import type { Config } from '../config.ts';
import { fetchResource, FetchRefused } from '../http/outbound.ts';

export const KEYS_TIMEOUT_MS = 5_000;
export const KEYS_MAX_BYTES = 256 * 1024;
export const KEYS_MAX_AGE_MS = 5 * 60_000;
export const KEYS_COOLDOWN_MS = 10_000;

export class PlatformKeysError extends Error {}

interface Kept {
  kids: Set<string>;
  getKey: JWTVerifyGetKey;
  at: number;
}

/** Per-app cache of platform key sets (one per JWK set URL). */
export class PlatformKeys {
  private readonly kept = new Map<string, Kept>();
  private readonly inflight = new Map<string, Promise<Kept>>();
  constructor(private readonly config: Pick<Config, 'fetchAllowPrivate' | 'fetchCa'>) {}

  /** jose's key resolver for `url`, with a set that holds `kid` when the platform has it. */
  async resolver(url: string, kid: string): Promise<JWTVerifyGetKey> {
    const now = Date.now();
    const kept = this.kept.get(url);
    if (kept && now - kept.at < KEYS_MAX_AGE_MS && (kept.kids.has(kid) || now - kept.at < KEYS_COOLDOWN_MS)) return kept.getKey;
    // One fetch per URL at a time: concurrent launches with a cold cache share it.
    let pending = this.inflight.get(url);
    if (!pending) {
      pending = this.fetch(url)
        .then((fresh) => {
          this.kept.set(url, fresh);
          if (this.kept.size > 1000) this.kept.delete(this.kept.keys().next().value!);
          return fresh;
        })
        .finally(() => this.inflight.delete(url));
      this.inflight.set(url, pending);
    }
    return (await pending).getKey;
  }

  private async fetch(url: string): Promise<Kept> {
    let body: Buffer;
    try {
      const r = await fetchResource(url, {
        allowPrivate: this.config.fetchAllowPrivate,
        ca: this.config.fetchCa,
        timeoutMs: KEYS_TIMEOUT_MS,
        maxBytes: KEYS_MAX_BYTES,
        maxRedirects: 0,
        accept: () => true,
        acceptHeader: 'application/json',
      });
      if (r.truncated) throw new PlatformKeysError('the platform’s key set is too large');
      body = r.body;
    } catch (err) {
      if (err instanceof FetchRefused) throw new PlatformKeysError(`the platform’s key set could not be fetched: ${err.message}`);
      throw err;
    }
    let set: JSONWebKeySet;
    try {
      set = JSON.parse(body.toString('utf8'));
      if (!set || !Array.isArray(set.keys)) throw new Error('no keys');
      set = { keys: set.keys.filter((k) => k && typeof k === 'object' && k.kty === 'RSA') };
    } catch {
      throw new PlatformKeysError('the platform’s key set is not a JWK set');
    }
    return { kids: new Set(set.keys.map((k) => String(k.kid))), getKey: createLocalJWKSet(set), at: Date.now() };
  }
}
