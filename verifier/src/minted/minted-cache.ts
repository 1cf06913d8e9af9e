// The verifier's cache of minted sets: per (issuer, subject, client, policy), until a margin before
// the earliest value's expiry, with single flight (concurrent first fetches of one user mint once).
// A failed mint is never kept; a value minted before a logout of its user is never served again.
import { LRUCache } from 'lru-cache';
import type { EpochSeconds } from '../clock.js';

/** One caller's minted values for one policy, rendered once (grant.ts). */
export interface MintedSet {
  /** The minted values and their `expires_at` as one ASCII JSON object. */
  readonly header: string;
  /** The earliest expiry among the values. */
  readonly expiresAt: EpochSeconds;
  /** When the mint started: a revocation at or after it purges the set (`isRevoked`). */
  readonly mintedAt: EpochSeconds;
}

export interface MintedCacheOptions {
  /** Bound on the sets kept (least recently used go first). */
  readonly maxEntries: number;
  /** True when a logout or Shared Signals event of the set's user came after `mintedAt`. */
  readonly isRevoked: (set: MintedSet) => boolean;
  /** How each fetch was served: from the cache, from another fetch's mint, or by a mint of its own. */
  readonly onServe?: (source: MintSource) => void;
}

export type MintSource = 'cache' | 'shared' | 'minted';

/**
 * A set is served while more than a fifth of its lifetime is left (at least 2 s, so the SPA has
 * time to use it), and only to a token that lives at least as long as it: a value never outlives
 * the token it goes to.
 */
function usable(set: MintedSet, now: EpochSeconds, exp: EpochSeconds): boolean {
  const margin = Math.max(2, (set.expiresAt - set.mintedAt) / 5);
  return set.expiresAt - margin > now && set.expiresAt <= exp;
}

export function createMintedCache({ maxEntries, isRevoked, onServe }: MintedCacheOptions) {
  const sets = new LRUCache<string, MintedSet>({ max: maxEntries });
  const minting = new Map<string, Promise<MintedSet>>();

  /** The caller's set from the cache, or from the one mint in flight for the key, or minted now. */
  async function get(
    key: string,
    now: EpochSeconds,
    exp: EpochSeconds,
    mint: () => Promise<MintedSet>,
  ): Promise<MintedSet> {
    const held = sets.get(key);
    if (held !== undefined) {
      if (!isRevoked(held) && usable(held, now, exp)) return (onServe?.('cache'), held);
      sets.delete(key);
    }
    const pending = minting.get(key);
    if (pending !== undefined) {
      const shared = await pending;
      if (usable(shared, now, exp)) return (onServe?.('shared'), shared);
    }
    return mintOnce(key, mint);
  }

  async function mintOnce(key: string, mint: () => Promise<MintedSet>): Promise<MintedSet> {
    onServe?.('minted');
    const started = mint();
    minting.set(key, started);
    try {
      const set = await started;
      // Kept only if no newer mint replaced this one and no revocation came meanwhile.
      if (minting.get(key) === started && !isRevoked(set)) sets.set(key, set);
      return set;
    } finally {
      if (minting.get(key) === started) minting.delete(key);
    }
  }

  return {
    get,
    /** Sets held (for tests and the metrics). */
    get size(): number {
      return sets.size;
    },
  };
}
export type MintedCache = ReturnType<typeof createMintedCache>;
