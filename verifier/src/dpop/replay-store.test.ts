import { describe, expect, it } from 'vitest';
import { createMemoryReplayStore } from './replay-store.js';

// The clocks below count milliseconds; the store reads epoch seconds.
describe('in-process replay store', () => {
  it('answers true for a new key and false for the same key within its lifetime', () => {
    let at = 0;
    const store = createMemoryReplayStore({ maxEntries: 10, now: () => at / 1000 });
    expect(store.remember('a', 120)).toBe(true);
    at += 119_000;
    expect(store.remember('a', 120)).toBe(false);
    at += 2_000;
    expect(store.remember('a', 120)).toBe(true);
  });

  it('makes room by dropping expired keys', () => {
    let at = 0;
    const store = createMemoryReplayStore({ maxEntries: 2, now: () => at / 1000 });
    store.remember('a', 1);
    store.remember('b', 1);
    at += 1_000;
    expect(store.remember('c', 1)).toBe(true);
  });

  it('refuses rather than forget a live key when full', () => {
    const store = createMemoryReplayStore({ maxEntries: 2, now: () => 0 });
    store.remember('a', 60);
    store.remember('b', 60);
    expect(() => store.remember('c', 60)).toThrow('the in-process replay store is full');
    expect(store.remember('a', 60)).toBe(false);
  });
});
