// Where used proof `jti`s are remembered (RFC 9449 §11.1). A per-process store stops a replay to
// the same verifier only; several replicas need one shared store (redis-replay-store.ts).

/**
 * `remember` answers true the first time a key is seen within `ttlSeconds`, false for a replay.
 * It rejects (throws) when the store cannot answer; the caller decides whether that fails closed.
 */
export interface ReplayStore {
  readonly kind: 'memory' | 'redis';
  remember(key: string, ttlSeconds: number): boolean | Promise<boolean>;
  /** True once the store can answer (the shared store after its first connection). */
  isReady(): boolean;
  close(): Promise<void>;
}

/** Thrown by a store that cannot take another key right now (full, unreachable). */
export class ReplayStoreUnavailable extends Error {
  override readonly name = 'ReplayStoreUnavailable';
}

/** The in-process store answers at once. */
export interface MemoryReplayStore extends ReplayStore {
  remember(key: string, ttlSeconds: number): boolean;
}

/**
 * An in-process store bounded by `maxEntries`. Every key lives the same `ttlSeconds`, so the Map's
 * insertion order is also expiry order and expired keys are swept from its front. When the store
 * is full of keys that are still live it refuses rather than forget one (forgetting would let a
 * replay through).
 */
export function createMemoryReplayStore(options: {
  maxEntries: number;
  /** Milliseconds since the epoch. */
  now: () => number;
}): MemoryReplayStore {
  const seen = new Map<string, number>();

  function sweep(at: number): void {
    for (const [key, expires] of seen) {
      if (expires > at) return;
      seen.delete(key);
    }
  }

  return {
    kind: 'memory',
    remember(key, ttlSeconds) {
      const at = options.now();
      const expires = seen.get(key);
      if (expires !== undefined && expires > at) return false;
      if (expires !== undefined) seen.delete(key);
      if (seen.size >= options.maxEntries) sweep(at);
      if (seen.size >= options.maxEntries)
        throw new ReplayStoreUnavailable('the in-process replay store is full');
      seen.set(key, at + ttlSeconds * 1000);
      return true;
    },
    isReady: () => true,
    close: () => {
      seen.clear();
      return Promise.resolve();
    },
  };
}
