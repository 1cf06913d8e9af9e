import { describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../config/load.js';
import { createCallLimit } from './call-limit.js';

/** A limit on a clock the test moves, in milliseconds (the limit reads epoch seconds). */
function limitAt(rate: number, burst: number, maxClients?: number) {
  const clock = { now: 1_000_000 };
  const admit = createCallLimit({ rate, burst }, () => clock.now / 1000, maxClients);
  const calls = (key: string | undefined, count: number) =>
    Array.from({ length: count }, () => admit(key));
  return { clock, admit, calls };
}

describe('the per-client call limit', () => {
  it('admits burst + 1 calls at once, as limit_req … burst nodelay does, then refuses', () => {
    const { calls } = limitAt(5, 10);
    expect(calls('203.0.113.7', 11)).toEqual(Array.from({ length: 11 }, () => true));
    expect(calls('203.0.113.7', 3)).toEqual([false, false, false]);
  });

  it('refills at the rate: one call per 200 ms at 5 calls a second', () => {
    const { clock, admit, calls } = limitAt(5, 10);
    calls('203.0.113.7', 11);
    clock.now += 199;
    expect(admit('203.0.113.7')).toBe(false);
    clock.now += 1;
    expect(admit('203.0.113.7')).toBe(true);
    expect(admit('203.0.113.7')).toBe(false);
    // A long pause fills the bucket again, never past burst + 1.
    clock.now += 60_000;
    expect(calls('203.0.113.7', 12).filter(Boolean)).toHaveLength(11);
  });

  it('keeps one bucket per client key: a flooding address never slows another', () => {
    const { admit, calls } = limitAt(1, 1);
    calls('203.0.113.7', 5);
    expect(admit('203.0.113.7')).toBe(false);
    expect(admit('203.0.113.8')).toBe(true);
    expect(admit('2001:0db8:0001:0002')).toBe(true);
  });

  it('puts every caller without the client key into one shared bucket', () => {
    const { admit, calls } = limitAt(1, 1);
    expect(calls(undefined, 2)).toEqual([true, true]);
    expect(admit(undefined)).toBe(false);
    // NGINX always sends a key, so its clients are apart from the direct callers.
    expect(admit('203.0.113.7')).toBe(true);
  });

  it('counts rates per minute (1r/m): one more call a minute', () => {
    const { clock, admit, calls } = limitAt(1 / 60, 1);
    expect(calls('203.0.113.7', 3)).toEqual([true, true, false]);
    clock.now += 59_000;
    expect(admit('203.0.113.7')).toBe(false);
    clock.now += 1_000;
    expect(admit('203.0.113.7')).toBe(true);
  });

  it('stays bounded under a flood of distinct addresses: a forgotten client starts full', () => {
    const { admit, calls } = limitAt(1, 0, 3);
    expect(calls('198.51.100.1', 2)).toEqual([true, false]);
    for (const key of ['198.51.100.2', '198.51.100.3', '198.51.100.4']) admit(key);
    // The first client was the least recently seen of more than 3: its bucket was dropped.
    expect(admit('198.51.100.1')).toBe(true);
    expect(admit('198.51.100.1')).toBe(false);
  });

  it('counts a client calling again at once like any other call, and forgets the least recent one', () => {
    const { admit } = limitAt(1, 0, 2);
    const seen = ['a', 'a', 'b', 'a', 'c', 'b', 'a'].map((key) => admit(`198.51.100.${key}`));
    // a's second call finds its spent bucket; c pushes b out (a was seen after it), b then a
    // come back forgotten, with full buckets.
    expect(seen).toEqual([true, false, true, false, true, true, true]);
  });

  it('never empties its LRU for one busy client: no whole-cache clear of 100,000 slots per call', () => {
    // lru-cache clears every preallocated slot when its last entry is deleted (~700 µs at
    // 100,000): counted here as Map#clear (its key map) and slots written by Array#fill.
    const { clock, admit } = limitAt(200, 0);
    const clears = vi.spyOn(Map.prototype, 'clear');
    const fill = vi.spyOn(Array.prototype, 'fill');
    try {
      for (let call = 0; call < 1000; call++) {
        // Each call after the last bucket has refilled: what an expiring entry used to meet.
        clock.now += 10;
        expect(admit('203.0.113.7')).toBe(true);
      }
      expect(clears).not.toHaveBeenCalled();
      expect(fill).not.toHaveBeenCalled();
    } finally {
      clears.mockRestore();
      fill.mockRestore();
    }
  });

  it('reads VERIFIER_VERIFY_RATE and VERIFIER_VERIFY_BURST as NGINX spelled them, 200r/s and 400 by default', () => {
    const base = {
      VERIFIER_ISSUER: 'https://idp.example',
      VERIFIER_AUDIENCE: 'api',
      VERIFIER_JWKS_URI: 'https://idp.example/jwks',
    };
    expect(loadConfig(base).callLimit).toEqual({ rate: 200, burst: 400 });
    expect(
      loadConfig({ ...base, VERIFIER_VERIFY_RATE: '30r/m', VERIFIER_VERIFY_BURST: '5' }).callLimit,
    ).toEqual({ rate: 0.5, burst: 5 });
    expect(() => loadConfig({ ...base, VERIFIER_VERIFY_RATE: '200' })).toThrow(
      'VERIFIER_VERIFY_RATE: expected a rate such as 200r/s or 30r/m, got "200"',
    );
  });
});
