// Where used proof `jti`s are remembered (RFC 9449 §11.1): in process, which stops a replay to the
// same verifier only, or in a Redis (or Valkey) server every replica shares (redis-replay-store.ts,
// apart so the dev IdP's image, which uses the in-process store, needs no Redis client). Either
// store's `remember(key, ttlSeconds)` is true the first time a key is seen within `ttlSeconds`,
// false for a replay, and throws (rejects) when the store cannot answer: the caller decides whether
// that fails closed. `isReady()` is true once the store can answer.

/**
 * An in-process store bounded by `maxEntries`, answering at once. Every key lives the same
 * `ttlSeconds`, so the Map's insertion order is also expiry order and expired keys are swept from
 * its front. When it is full of live keys it refuses rather than forget one (which would let a
 * replay through). `now` is in epoch milliseconds.
 */
export function createMemoryReplayStore(options: { maxEntries: number; now: () => number }) {
  const seen = new Map<string, number>();
  return {
    remember(key: string, ttlSeconds: number): boolean {
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
      seen.set(key, at + ttlSeconds * 1000);
      return true;
    },
    isReady: () => true,
    close: () => Promise.resolve(seen.clear()),
  };
}
