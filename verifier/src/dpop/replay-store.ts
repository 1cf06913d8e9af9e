// Used proof `jti`s (RFC 9449 §11.1): in process (a replay to this verifier only) or in a Redis or
// Valkey every replica shares (redis-replay-store.ts, apart so the dev IdP loads no Redis client).
// `remember(key, ttlSeconds)` is true the first time within `ttlSeconds`, false for a replay, and
// throws (rejects) when the store cannot answer: the caller decides whether that fails closed.
import type { Clock, EpochSeconds, Seconds } from '../clock.js';

/**
 * An in-process store of at most `maxEntries`. Every key lives the same `ttlSeconds`, so the Map's
 * insertion order is expiry order and expired keys are swept from its front. Full of live keys, it
 * refuses rather than forget one (which would let a replay through).
 */
export function createMemoryReplayStore(options: { maxEntries: number; now: Clock }) {
  /** Each key and when it expires. */
  const seen = new Map<string, EpochSeconds>();
  return {
    remember(key: string, ttlSeconds: Seconds): boolean {
      const at = options.now();
      const expires = seen.get(key);
      if (expires !== undefined && expires > at) return false;
      if (expires !== undefined) seen.delete(key);
      if (seen.size >= options.maxEntries) {
        for (const [old, until] of seen) {
          if (until > at) break;
          seen.delete(old);
        }
      }
      if (seen.size >= options.maxEntries) throw new Error('the in-process replay store is full');
      seen.set(key, at + ttlSeconds);
      return true;
    },
    /** True once the store can answer. */
    isReady: () => true,
    close: () => Promise.resolve(seen.clear()),
  };
}
