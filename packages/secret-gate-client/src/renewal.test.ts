import { describe, expect, it } from 'vitest';
import { gateClock, renewalDelaySeconds } from './renewal.js';

describe('renewalDelaySeconds', () => {
  it.each([
    ['a 5-minute value: 10 % margin', { a: 1300 }, 270],
    ['a 20-second value: the 5-second floor', { a: 1020 }, 15],
    ['the earliest of several values decides', { a: 1300, b: 1060 }, 54],
    ['a value already inside its margin: renew after 1 s', { a: 1003 }, 1],
    ['an expired value: renew after 1 s', { a: 900 }, 1],
  ])('%s', (_case, expiresAt, expected) => {
    expect(renewalDelaySeconds(expiresAt, 1000)).toBeCloseTo(expected, 6);
  });

  it('plans nothing for a set without minted values', () => {
    expect(renewalDelaySeconds({}, 1000)).toBe(undefined);
  });

  it('follows a policy with another margin', () => {
    const policy = { marginRatio: 0.5, minMarginSeconds: 0, minDelaySeconds: 0 };
    expect(renewalDelaySeconds({ a: 1100 }, 1000, policy)).toBe(50);
  });
});

describe('gateClock', () => {
  it('reads the Date header, else the page clock', () => {
    expect(gateClock('Fri, 04 Dec 2026 15:00:00 GMT', 0)).toBe(Date.UTC(2026, 11, 4, 15) / 1000);
    expect(gateClock(null, 1_234_567)).toBe(1234);
    expect(gateClock('yesterday', 1_234_567)).toBe(1234);
  });
});
