// The revocation store: watermarks and the `jti`s of received logout tokens and SETs. Reads are
// synchronous from an in-process view, so the check costs a map lookup per request (cache hits
// included); writes may go to a shared server (redis-store.ts) that every replica mirrors.

export interface RevocationStore {
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

/**
 * Watermarks in a Map with their own expiry; swept when the bound is reached. When full of live
 * entries it refuses a new key rather than forget one: a forgotten watermark un-revokes tokens,
 * a forgotten `jti` admits a replay.
 */
export function createWatermarkView(maxEntries: number, now: () => number) {
  const marks = new Map<string, { at: number; expires: number }>();
  return {
    get(key: string): number | undefined {
      const mark = marks.get(key);
      if (mark === undefined) return undefined;
      if (mark.expires <= now()) {
        marks.delete(key);
        return undefined;
      }
      return mark.at;
    },
    /** Keeps the higher watermark; false when full of live entries. */
    raise(key: string, at: number, expires: number): boolean {
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
    delete: (key: string) => void marks.delete(key),
    /** The live watermarks, for writing them back to a shared store that lost them. */
    entries() {
      const t = now();
      return [...marks]
        .filter(([, mark]) => mark.expires > t)
        .map(([key, mark]) => ({ key, ...mark }));
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
  // A remembered `jti` is a mark of its own that expires with the replay lifetime.
  const seen = createWatermarkView(options.maxEntries, now);
  const full = (what: string) => Promise.reject(new RevocationStoreUnavailable(`${what} is full`));
  return {
    revokedBefore: (key) => view.get(key),
    get size() {
      return view.size;
    },
    revoke(key, at, ttlSeconds) {
      const raised = view.raise(key, at, now() + ttlSeconds * 1000);
      return raised ? Promise.resolve() : full('the revocation store');
    },
    remember(key) {
      if (seen.get(key) !== undefined) return Promise.resolve(false);
      const raised = seen.raise(key, 0, now() + options.replayTtl * 1000);
      return raised ? Promise.resolve(true) : full('the in-process jti set');
    },
    forget: (key) => Promise.resolve(seen.delete(key)),
    isCurrent: () => true,
    close() {
      view.clear();
      seen.clear();
      return Promise.resolve();
    },
  };
}
