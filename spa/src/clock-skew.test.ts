import { describe, expect, it } from 'vitest';
import { clockSkewSeconds } from './clock-skew.js';

const SERVER = 'Mon, 30 Nov 2026 18:00:00 GMT';
const serverMs = Date.parse(SERVER);

describe('clockSkewSeconds', () => {
  it('is the offset to add to a browser clock that runs an hour ahead', () => {
    expect(clockSkewSeconds(SERVER, serverMs + 3_600_000)).toBe(-3600);
  });

  it('is 0 within rounding and latency, or without a usable Date header', () => {
    expect(clockSkewSeconds(SERVER, serverMs + 1500)).toBe(0);
    expect(clockSkewSeconds(null, serverMs)).toBe(0);
    expect(clockSkewSeconds('yesterday', serverMs)).toBe(0);
  });
});
