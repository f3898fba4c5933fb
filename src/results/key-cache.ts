/**
 * The API-key cache of one process: checked keys are trusted from memory for a short time, so
 * the hot path needs no database read for its key; each key's `last_used_at` is written in one
 * batched UPDATE every few seconds instead of once per request.
 *
 * Revocation reaches every process within one second (issue #4):
 * - a trigger sends NOTIFY `svc_api_keys` (payload: prefix) when a key is revoked, deleted or its
 *   rate limit changes (migration 0020), whoever changes it; every process LISTENs and drops
 *   that key at once;
 * - when the listen connection is (re)established, everything cached is dropped (notices sent
 *   while it was down are lost);
 * - and no entry lives longer than `ttlMs`, at most 1000 ms (config.ts refuses more), so even a
 *   process whose listen connection is down stops accepting a revoked key within a second.
 * A lookup that was under way while a notice arrived is not cached (generation counter).
 *
 * Entries are keyed by the sha256 of the presented key, never by the key itself; only live keys
 * are cached (an unknown key costs a lookup every time — it is also answered 401 every time).
 */
import type { FastifyBaseLogger } from 'fastify';
import type { Db } from '../db/index.ts';
import { findLiveKey, hashApiKey, recordKeyUse, type LiveKey } from './api-keys.ts';

/** The NOTIFY channel of key changes (see migration 0020). */
export const API_KEYS_CHANNEL = 'svc_api_keys';
/** Entries kept at most; beyond, the cache starts over (keys are few; this only bounds memory). */
const MAX_ENTRIES = 10_000;

interface Entry {
  key: LiveKey;
  expires: number;
}

export interface KeyCacheOptions {
  /** Milliseconds an entry is trusted (0 = no caching). */
  ttlMs: number;
  /** Milliseconds between `last_used_at` writes. */
  flushMs: number;
  now: () => Date;
  log: FastifyBaseLogger;
}

export class ApiKeyCache {
  private readonly entries = new Map<string, Entry>();
  private readonly pending = new Map<string, Promise<LiveKey | undefined>>();
  private used = new Map<string, Date>();
  private generation = 0;
  private stopListening: (() => Promise<void>) | undefined;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly db: Db,
    private readonly options: KeyCacheOptions,
  ) {}

  /** Start listening for key changes and the periodic `last_used_at` flush. */
  async start(): Promise<void> {
    try {
      this.stopListening = await this.db.listen(
        API_KEYS_CHANNEL,
        (prefix) => this.forget(prefix),
        () => this.clear(),
      );
    } catch (err) {
      // Without notices the TTL (≤ 1 s) still bounds how long a revoked key keeps working.
      this.options.log.warn({ err }, 'results: cannot LISTEN for API-key changes; relying on the cache TTL');
    }
    this.timer = setInterval(() => void this.flush(), this.options.flushMs);
    this.timer.unref();
  }

  /**
   * The live key `raw` names when this process checked it less than `ttlMs` ago, else undefined
   * (then `lookup` asks the database). Synchronous: the hot path of a request whose key is cached
   * makes no promise.
   */
  cached(raw: string): LiveKey | undefined {
    const hash = hashApiKey(raw);
    const hit = this.entries.get(hash);
    if (hit === undefined) return undefined;
    if (hit.expires > performance.now()) return hit.key;
    this.entries.delete(hash);
    return undefined;
  }

  /** The live key `raw` names, or undefined (malformed, unknown, revoked). */
  async lookup(raw: string): Promise<LiveKey | undefined> {
    const hit = this.cached(raw);
    if (hit) return hit;
    const hash = hashApiKey(raw);
    let promise = this.pending.get(hash);
    if (!promise) {
      const generation = this.generation;
      promise = findLiveKey(this.db, raw).then(
        (key) => {
          this.pending.delete(hash);
          if (key && generation === this.generation && this.options.ttlMs > 0) {
            if (this.entries.size >= MAX_ENTRIES) this.entries.clear();
            this.entries.set(hash, { key, expires: performance.now() + this.options.ttlMs });
          }
          return key;
        },
        (err: unknown) => {
          this.pending.delete(hash);
          throw err;
        },
      );
      this.pending.set(hash, promise);
    }
    return promise;
  }

  /** Remember that `key` was used now (written by the next flush). */
  noteUse(key: LiveKey): void {
    this.used.set(key.id, this.options.now());
  }

  /** Drop the cached copies of the key with this prefix (a revocation notice). */
  forget(prefix: string): void {
    this.generation += 1;
    for (const [hash, entry] of this.entries) if (entry.key.prefix === prefix) this.entries.delete(hash);
  }

  /** Drop everything cached. */
  clear(): void {
    this.generation += 1;
    this.entries.clear();
  }

  /** Write the pending `last_used_at` values (one UPDATE); failures are logged and retried later. */
  async flush(): Promise<void> {
    if (this.used.size === 0) return;
    const batch = this.used;
    this.used = new Map();
    try {
      await recordKeyUse(this.db, batch);
    } catch (err) {
      this.options.log.warn({ err }, 'results: could not record API-key use; will retry');
      for (const [id, at] of batch) if (!this.used.has(id)) this.used.set(id, at);
    }
  }

  /** Stop the timer and the listen, and write what is pending. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
    await this.stopListening?.().catch(() => {});
  }
}
