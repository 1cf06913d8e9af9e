import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bucketExpiry, checkBucketSeconds, toEpochSeconds } from './expiry.js';

describe('bucketExpiry', () => {
  it('is never earlier than asked, less than one bucket later, and on a bucket boundary', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 4_000_000_000 }),
        fc.integer({ min: 2, max: 86_400 }),
        (expires, bucket) => {
          const rounded = bucketExpiry(expires, bucket);
          expect(rounded).toBeGreaterThanOrEqual(expires);
          expect(rounded - expires).toBeLessThan(bucket);
          expect(rounded % bucket).toBe(0);
        },
      ),
    );
  });

  it('maps every expiry of one window to the same value', () => {
    expect(new Set([601, 750, 899, 900].map((e) => bucketExpiry(e, 300)))).toEqual(new Set([900]));
    expect(bucketExpiry(901, 300)).toBe(1200);
  });

  it('leaves the expiry alone with no bucket', () => {
    expect(bucketExpiry(1_234_567, 0)).toBe(1_234_567);
  });
});

describe('toEpochSeconds', () => {
  it('rounds a Date towards less access: expiry down, start up', () => {
    const date = new Date(1_800_000_000_500);
    expect(toEpochSeconds(date, 'expires')).toBe(1_800_000_000);
    expect(toEpochSeconds(date, 'notBefore')).toBe(1_800_000_001);
  });

  it.each([
    [Number.NaN, /whole epoch seconds/],
    ['1800000000', /whole epoch seconds/],
    [0, /positive/],
    [1_800_000_000_000, /looks like milliseconds/],
    [new Date(Number.NaN), /invalid Date/],
  ])('rejects %s with a TypeError', (value, message) => {
    expect(() => toEpochSeconds(value, 'expires')).toThrow(TypeError);
    expect(() => toEpochSeconds(value, 'expires')).toThrow(message);
  });
});

describe('checkBucketSeconds', () => {
  it('defaults to no bucketing and refuses fractions, negatives and more than a day', () => {
    expect(checkBucketSeconds(undefined)).toBe(0);
    for (const bad of [1.5, -1, 86_401, '300'])
      expect(() => checkBucketSeconds(bad)).toThrow(TypeError);
  });
});
