// The revocation store: watermarks ("tokens of this key issued before t are revoked") and the
// `jti`s of received logout tokens and SETs. Reads are synchronous from an in-process view so the
// check costs a map lookup per request, cache hits included; writes may go to a shared server
// (redis-store.ts) that every replica mirrors.

export interface RevocationStore {
  readonly kind: 'memory' | 'redis';
  /** The watermark of `key` in seconds since the epoch, or undefined. */
  revokedBefore(key: string): number | undefined;
  /** Number of live watermarks in the view; 0 lets the check skip building keys. */
  readonly size: number;
  /** Raises the watermark of `key` to at least `at` for `ttlSeconds`. Rejects when unreachable. */
  revoke(key: string, at: number, ttlSeconds: number): Promise<void>;
  /** True the first time `key` is seen within the store's replay lifetime, false for a replay. */
  remember(key: string): Promise<boolean>;
  /** Forgets a remembered key (after the write it guarded failed). */
  forget(key: string): Promise<void>;
  /** False while a shared store is unreachable: the view may miss recent revocations. */
  isCurrent(): boolean;
  close(): Promise<void>;
}

export class RevocationStoreUnavailable extends Error {
  override readonly name = 'RevocationStoreUnavailable';
}

/** Watermarks in a Map with their own expiry; swept when the bound is reached. */
export interface WatermarkView {
  get(key: string): number | undefined;
  /** Keeps the higher watermark; false when full of live entries. */
  raise(key: string, at: number, expiresAt: number): boolean;
  readonly size: number;
  clear(): void;
}

export function createWatermarkView(maxEntries: number, now: () => number): WatermarkView {
  const marks = new Map<string, { at: number; expires: number }>();
  return {
    get(key) {
      const mark = marks.get(key);
      if (mark === undefined) return undefined;
      if (mark.expires <= now()) {
        marks.delete(key);
        return undefined;
      }
      return mark.at;
    },
    raise(key, at, expires) {
      const held = marks.get(key);
      if (held !== undefined && held.expires > now() && held.at >= at) return true;
      if (held === undefined && marks.size >= maxEntries) {
        const t = now();
        for (const [k, mark] of marks) if (mark.expires <= t) marks.delete(k);
        if (marks.size >= maxEntries) return false;
      }
      marks.set(key, { at, expires: Math.max(expires, held?.expires ?? 0) });
      return true;
    },
    get size() {
      return marks.size;
    },
    clear: () => marks.clear(),
  };
}

/** One process: what it receives is what it checks. Never unreachable. */
export function createMemoryRevocationStore(options: {
  readonly maxEntries: number;
  /** The one lifetime of every remembered `jti` (seconds). */
  readonly replayTtl: number;
  readonly now: () => number;
}): RevocationStore {
  const { now } = options;
  const view = createWatermarkView(options.maxEntries, now);
  const seen = createJtiSet(options.maxEntries, now);
  return {
    kind: 'memory',
    revokedBefore: (key) => view.get(key),
    get size() {
      return view.size;
    },
    revoke(key, at, ttlSeconds) {
      if (!view.raise(key, at, now() + ttlSeconds * 1000))
        return Promise.reject(new RevocationStoreUnavailable('the revocation store is full'));
      return Promise.resolve();
    },
    remember(key) {
      try {
        return Promise.resolve(seen.remember(key, options.replayTtl));
      } catch (error) {
        return Promise.reject(new RevocationStoreUnavailable((error as Error).message));
      }
    },
    forget(key) {
      seen.forget(key);
      return Promise.resolve();
    },
    isCurrent: () => true,
    async close() {
      view.clear();
      await seen.close();
    },
  };
}

/** `jti`s with one lifetime, so insertion order is expiry order; refuses when full of live ones. */
function createJtiSet(maxEntries: number, now: () => number) {
  const seen = new Map<string, number>();
  return {
    remember(key: string, ttlSeconds: number): boolean {
      const at = now();
      const expires = seen.get(key);
      if (expires !== undefined && expires > at) return false;
      seen.delete(key);
      if (seen.size >= maxEntries)
        for (const [k, until] of seen) {
          if (until > at) break;
          seen.delete(k);
        }
      if (seen.size >= maxEntries) throw new Error('the in-process jti set is full');
      seen.set(key, at + ttlSeconds * 1000);
      return true;
    },
    forget: (key: string) => void seen.delete(key),
    close() {
      seen.clear();
      return Promise.resolve();
    },
  };
}
