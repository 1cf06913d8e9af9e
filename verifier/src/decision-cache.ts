// The decision cache: verified tokens remembered per policy so a repeat request costs one SHA-256
// and one LRU lookup instead of a signature check.
//
// Invariants (each has a test in decision-cache.test.ts / authorize.test.ts):
// 1. Key = SHA-256 of the token + the policy name. The token itself is never stored.
// 2. An entry's TTL never reaches past the token's `exp`, nor past `maxTtl`.
// 3. `exp` and `nbf` are re-checked against the clock on every hit; a hit outside the window is
//    dropped and the token goes through full verification again.
// 4. Bounded by entry count and by (estimated) bytes; least recently used entries go first.
// 5. Concurrent misses for one key share one verification (`share`).
// 6. When a key leaves an issuer's JWKS, every entry verified with that `kid` is dropped.
// 7. Only outcomes of a verified token are stored (allow, and 403 for missing scopes); 401s are
//    never cached, so a key that appears later is picked up at once.
import { LRUCache } from 'lru-cache';
import type { Decision } from './decision.js';

/** One cached outcome; flat on purpose, since 100,000 of these must fit in a small budget. */
export interface CacheEntry {
  readonly decision: Decision;
  readonly issuer: string;
  /** Seconds since the epoch. */
  readonly exp: number;
  /** Seconds since the epoch, tolerance applied; undefined when the token has none. */
  readonly nbf: number | undefined;
  readonly kid: string | undefined;
}

export interface DecisionCacheOptions {
  readonly maxEntries: number;
  readonly maxBytes: number;
  /** Seconds. */
  readonly maxTtl: number;
  /** Milliseconds since the epoch. */
  readonly now: () => number;
}

export interface DecisionCache {
  /** A live entry, or undefined (missing, or outside its time window and now dropped). */
  get(key: string): CacheEntry | undefined;
  set(key: string, entry: CacheEntry): void;
  /** Runs `produce` once for concurrent callers with the same key. */
  share<T>(key: string, produce: () => Promise<T>): Promise<T>;
  /** Drops entries of `issuer` verified with one of `kids`, and its entries without a `kid`. */
  dropKeys(issuer: string, kids: ReadonlySet<string | undefined>): number;
  readonly size: number;
  readonly bytes: number;
  clear(): void;
}

/**
 * Heap bytes per entry beyond its header values (entry, decision, identity, arrays, LRU
 * bookkeeping), measured on Node 20 with 100,000 entries (bench/verifier.ts).
 */
const ENTRY_OVERHEAD_BYTES = 400;

function estimateBytes(entry: CacheEntry, key: string): number {
  // Only the subject is per token; the other header values are shared (see intern.ts).
  return ENTRY_OVERHEAD_BYTES + key.length + (entry.decision.identity?.sub.length ?? 0);
}

export function createDecisionCache(options: DecisionCacheOptions): DecisionCache {
  const { now } = options;
  const lru = new LRUCache<string, CacheEntry>({
    max: options.maxEntries,
    maxSize: options.maxBytes,
    sizeCalculation: estimateBytes,
    // lru-cache's TTL clock follows ours, so a moved test clock expires entries too.
    perf: { now },
    ttlResolution: 0,
  });
  const pending = new Map<string, Promise<unknown>>();

  return {
    get(key) {
      const entry = lru.get(key);
      if (entry === undefined) return undefined;
      const seconds = now() / 1000;
      if (seconds >= entry.exp || (entry.nbf !== undefined && seconds < entry.nbf)) {
        lru.delete(key);
        return undefined;
      }
      return entry;
    },
    set(key, entry) {
      const ttl = Math.min(entry.exp * 1000 - now(), options.maxTtl * 1000);
      if (ttl < 1) return;
      lru.set(key, entry, { ttl: Math.floor(ttl) });
    },
    share<T>(key: string, produce: () => Promise<T>): Promise<T> {
      const running = pending.get(key) as Promise<T> | undefined;
      if (running) return running;
      const started = produce().finally(() => pending.delete(key));
      pending.set(key, started);
      return started;
    },
    dropKeys(issuer, kids) {
      const doomed: string[] = [];
      for (const [key, entry] of lru.entries()) {
        if (entry.issuer !== issuer) continue;
        // A token without `kid` may have matched any key, so it goes whenever a key goes.
        if (entry.kid === undefined || kids.has(entry.kid)) doomed.push(key);
      }
      for (const key of doomed) lru.delete(key);
      return doomed.length;
    },
    get size() {
      return lru.size;
    },
    get bytes() {
      return lru.calculatedSize;
    },
    clear() {
      lru.clear();
    },
  };
}
