import { describe, expect, it } from 'vitest';
import { gateClock, renewalDelaySeconds, renewalPolicy } from './renewal.js';

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

describe('renewalPolicy', () => {
  it('keeps the defaults for what the app does not change', () => {
    expect(renewalPolicy({ minMarginSeconds: 10 })).toEqual({
      marginRatio: 0.1,
      minMarginSeconds: 10,
      minDelaySeconds: 1,
    });
  });

  it('names every setting that would break the renewal, in one message', () => {
    expect(() =>
      renewalPolicy({ marginRatio: 1.5, minMarginSeconds: -1, minDelaySeconds: 0 }),
    ).toThrow(
      new TypeError(
        'secret-gate client: renewal: "marginRatio" must be in [0, 1); "minMarginSeconds" must be 0 or more; "minDelaySeconds" must be above 0',
      ),
    );
  });
});
