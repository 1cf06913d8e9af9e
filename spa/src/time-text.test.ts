import { describe, expect, it } from 'vitest';
import { describeExpiry, describeValueExpiry } from './time-text.js';

const NOW = new Date(2025, 5, 1, 14, 0, 0);
const later = (seconds: number) => new Date(NOW.getTime() + seconds * 1000);

describe('describeExpiry', () => {
  it.each([
    [45, 'in 45 s (at 14:00:45)'],
    [250, 'in 4 min 10 s (at 14:04:10)'],
    [3600, 'in 1 h 0 min (at 15:00:00)'],
    [0, 'expired at 14:00:00'],
    [-30, 'expired at 13:59:30'],
  ])('describes a token expiring %i s from now as %j', (seconds, text) => {
    expect(describeExpiry(later(seconds), NOW)).toBe(text);
  });
});

describe('describeValueExpiry', () => {
  it.each([
    [42, 'Expires in 42 s (at 14:00:42)'],
    [0, 'Expired at 14:00:00'],
    [-5, 'Expired at 13:59:55'],
  ])('describes a minted value expiring %i s from now as %j', (seconds, text) => {
    expect(describeValueExpiry(later(seconds), NOW)).toBe(text);
  });
});
