import { describe, expect, it } from 'vitest';
import { createMintedCache, type MintedSet } from './minted-cache.js';

const set = (mintedAt: number, expiresAt: number, header = `v${mintedAt}`): MintedSet => ({
  header,
  mintedAt,
  expiresAt,
});

describe('the minted-set cache', () => {
  it('mints once for 100 concurrent first fetches of one user, and serves the rest from it', async () => {
    const cache = createMintedCache({ maxEntries: 10, isRevoked: () => false });
    let mints = 0;
    const mint = async () => {
      mints++;
      await new Promise((resolve) => setTimeout(resolve, 10));
      return set(1000, 1300);
    };
    const got = await Promise.all(
      Array.from({ length: 100 }, () => cache.get('alice', 1000, 2000, mint)),
    );
    expect(mints).toBe(1);
    expect(new Set(got.map((s) => s.header))).toEqual(new Set(['v1000']));
    await cache.get('alice', 1100, 2000, mint);
    expect(mints).toBe(1);
  });

  it('mints again once less than a fifth of the lifetime is left', async () => {
    const cache = createMintedCache({ maxEntries: 10, isRevoked: () => false });
    let mints = 0;
    const mint = (at: number) => async () => (mints++, set(at, at + 300));
    await cache.get('alice', 1000, 5000, mint(1000));
    await cache.get('alice', 1239, 5000, mint(1239));
    expect(mints).toBe(1);
    const renewed = await cache.get('alice', 1241, 5000, mint(1241));
    expect(mints).toBe(2);
    expect(renewed.header).toBe('v1241');
  });

  it('never hands a set to a token that ends before it', async () => {
    const cache = createMintedCache({ maxEntries: 10, isRevoked: () => false });
    await cache.get('alice', 1000, 5000, async () => set(1000, 1300));
    const shorter = await cache.get('alice', 1010, 1200, async () => set(1010, 1200, 'short'));
    expect(shorter.header).toBe('short');
  });

  it('keeps no failure: the next fetch mints again', async () => {
    const cache = createMintedCache({ maxEntries: 10, isRevoked: () => false });
    await expect(
      cache.get('alice', 1000, 5000, () => Promise.reject(new Error('refused'))),
    ).rejects.toThrow('refused');
    expect(cache.size).toBe(0);
    expect((await cache.get('alice', 1000, 5000, async () => set(1000, 1300))).header).toBe(
      'v1000',
    );
  });

  it('serves no set minted before a revocation of its user, nor keeps one finished after it', async () => {
    let revokedBefore = 0;
    const cache = createMintedCache({
      maxEntries: 10,
      isRevoked: (s) => s.mintedAt < revokedBefore,
    });
    await cache.get('alice', 1000, 5000, async () => set(1000, 1300));
    revokedBefore = 1001;
    expect((await cache.get('alice', 1002, 5000, async () => set(1002, 1300))).header).toBe(
      'v1002',
    );
    // A mint in flight when the logout lands is answered once but never cached.
    let release!: () => void;
    const slow = cache.get('bob', 1002, 5000, async () => {
      await new Promise<void>((resolve) => (release = resolve));
      return set(1002, 1300);
    });
    revokedBefore = 1003;
    release();
    await slow;
    expect((await cache.get('bob', 1004, 5000, async () => set(1004, 1300))).header).toBe('v1004');
  });

  it('keeps each user apart', async () => {
    const cache = createMintedCache({ maxEntries: 10, isRevoked: () => false });
    const a = await cache.get('alice', 1000, 5000, async () => set(1000, 1300, 'a'));
    const b = await cache.get('bob', 1000, 5000, async () => set(1000, 1300, 'b'));
    expect([a.header, b.header]).toEqual(['a', 'b']);
  });
});
